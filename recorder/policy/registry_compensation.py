"""Host-declared compensation in a registry file: how the Recorder itself undoes a call of a server
that knows nothing of undo (docs/policy.md, "Host-declared compensation").

A tool's ``compensation`` names calls of the same server: a ``snapshot`` read made before the call,
a ``state`` read of the resource (made after the call, before the undo and after it), and the
``inverse`` call that puts the old state back. Their arguments are templates over ``{args}``, the
call's ``{result}`` and the ``{snapshot}``; every field a template names is checked when the file is
loaded, so a typo is refused with the file and line instead of failing on the day of an undo.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field, model_validator

from hatp_journal.recorder.policy.template_paths import (
    BRACES,
    Path,
    TemplateError,
    parse,
    resolve,
    schema_at,
    type_of,
)
from hatp_journal.toolkit.wire import WireModel

ROOTS = ("args", "result", "snapshot", "added", "removed")
DIFF_ROOTS = ("added", "removed")
"""``{added}``: what the state read after the call has that the snapshot had not (array elements
the call added or changed, whole); ``{removed}``: what the snapshot had that is gone after the call."""

FOR_EACH, EACH, ITEM = "forEach", "each", "item"
"""``{"forEach": "{result.results}", "each": {"entityName": "{item.entityName}"}}``: an array made
of ``each`` rendered once per element of the array ``forEach`` names, the element as ``{item}``."""

__all__ = [
    "ROOTS",
    "Cascade",
    "Compensation",
    "HostCall",
    "TemplateError",
    "ToolShape",
    "placeholders",
    "render",
]


@dataclass(frozen=True)
class ToolShape:
    """What the registry file knows of one tool: its argument names and, where reviewed, its JSON
    Schemas as the server lists them."""

    arguments: tuple[str, ...]
    input_schema: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None


class Cascade(WireModel):
    """What the server's inverse call also removes on its own: the elements of the array at ``path``
    in the state read whose member named in ``match_any`` holds one of the values ``of`` names
    (server-memory's delete_entities also deletes every relation naming a deleted entity)."""

    path: str = Field(
        pattern=r"^(/[^/]*)+$", description="RFC 6901 pointer to an array in the state read, e.g. /relations"
    )
    match_any: tuple[str, ...] = Field(
        min_length=1, description="the members of an element that may hold one of the values"
    )
    of: str = Field(
        min_length=1, description="the values, a template over {args, result, snapshot, added, removed}"
    )

    def steps(self) -> tuple[str, ...]:
        """The pointer's reference tokens."""
        return pointer_steps(self.path)


def pointer_steps(path: str) -> tuple[str, ...]:
    """An RFC 6901 pointer's reference tokens, unescaped (``~1`` is ``/``, ``~0`` is ``~``)."""
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in path.split("/")[1:])


class HostCall(WireModel):
    """One call the Recorder makes to the same server: a tool and its arguments, as a template."""

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


Problems = list[tuple[tuple[str, ...], str]]
"""What is wrong, each with the path of the key it is about (for its line)."""


class Compensation(WireModel):
    """How the host undoes one tool's calls (the tool itself changes nothing here)."""

    resource: str = Field(
        min_length=1, description="what the call changes, over {args, result}, e.g. file:{args.path}"
    )
    summary: str | None = Field(
        default=None, description="what the call did, for people, over {args, result}"
    )
    snapshot: HostCall | None = Field(default=None, description="read before the call, over {args}")
    snapshot_fields: tuple[str, ...] = Field(default=(), description="the fields the snapshot read returns")
    result_fields: tuple[str, ...] = Field(default=(), description="the fields the call's result has")
    state: HostCall | None = Field(
        default=None, description="reads the resource, over {args, result}; default: the snapshot read"
    )
    inverse: HostCall | tuple[HostCall, ...] = Field(
        description="puts the old state back, over {args, result, snapshot, added, removed}: one call, "
        "or several made in order"
    )
    restored: Any = Field(
        default="{snapshot}",
        description="what the state read gives once undone, a template over {args, result, snapshot}",
    )
    cascade: tuple[Cascade, ...] = Field(
        default=(),
        description="what the inverse call(s) also remove on their own; the host refuses an undo whose "
        "cascade would remove an element the call did not add",
    )

    @model_validator(mode="after")
    def _reads(self) -> Compensation:
        if self.state is None and self.snapshot is None:
            raise ValueError("give a state read, a snapshot read or both")
        if isinstance(self.inverse, tuple) and not self.inverse:
            raise ValueError("give at least one inverse call")
        return self

    def state_read(self) -> HostCall:
        """The read that fingerprints the resource (the snapshot read when none is given)."""
        read = self.state or self.snapshot
        assert read is not None  # the validator saw to it
        return read

    def inverses(self) -> tuple[HostCall, ...]:
        """The inverse calls, in the order they are made."""
        return self.inverse if isinstance(self.inverse, tuple) else (self.inverse,)

    def problems(self, tool: ToolShape, tools: Mapping[str, ToolShape]) -> Problems:
        """What is wrong with the templates, given the ``tool`` compensated and the server's
        ``tools``: paths that do not parse, fields that do not exist (by the tool's JSON Schemas
        where the file gives them, else by the listed names), values of the wrong type for the
        argument they fill, tools the file does not list."""
        state_tool = tools.get(self.state_read().tool)
        snapshot_tool = tools.get(self.snapshot.tool) if self.snapshot is not None else None
        known: dict[str, _Known] = {
            "args": _Known(tool.arguments, tool.input_schema),
            "result": _Known(self.result_fields, tool.output_schema),
        }
        if self.snapshot is not None:
            snapshot_schema = snapshot_tool.output_schema if snapshot_tool is not None else None
            known["snapshot"] = _Known(self.snapshot_fields, snapshot_schema)
            state_schema = state_tool.output_schema if state_tool is not None else None
            for root in DIFF_ROOTS:
                known[root] = _Known(self.snapshot_fields, state_schema or snapshot_schema)
        after_call = {k: v for k, v in known.items() if k not in ("snapshot", *DIFF_ROOTS)}
        found: Problems = []
        checked: list[tuple[tuple[str, ...], Any, Mapping[str, _Known], Mapping[str, Any] | None]] = [
            (("resource",), self.resource, after_call, None),
            (("summary",), self.summary, known, None),
            (("restored",), self.restored, known, None),
        ]
        calls: list[tuple[tuple[str, ...], HostCall | None, Mapping[str, _Known]]] = [
            (("snapshot",), self.snapshot, {"args": known["args"]}),
            (("state",), self.state, after_call),
        ]
        several = isinstance(self.inverse, tuple)
        calls += [
            (("inverse", str(n)) if several else ("inverse",), call, known)
            for n, call in enumerate(self.inverses())
        ]
        for where, call, at_hand in calls:
            if call is None:
                continue
            if call.tool not in tools:
                found.append(((*where, "tool"), f"the file lists no tool {call.tool!r}"))
                continue
            target = tools[call.tool]
            for key, template in call.arguments.items():
                if key not in target.arguments:
                    found.append(((*where, "arguments", key), f"{call.tool} has no argument {key!r}"))
                    continue
                checked.append(((*where, "arguments", key), template, at_hand, _argument(target, key)))
        for where, template, roots, expected in checked:
            found += [((*where, *at), problem) for at, problem in _checked(template, roots, expected)]
        state_schema = state_tool.output_schema if state_tool is not None else None
        for index, cascade in enumerate(self.cascade):
            where = ("cascade", str(index))
            if self.snapshot is None:
                found.append((where, "a cascade needs a snapshot read: the host compares with it"))
                continue
            found += [((*where, "of", *at), p) for at, p in _checked(cascade.of, known, {"type": "array"})]
            found += [((*where, *at), p) for at, p in _cascade_target(cascade, state_schema)]
        return found


@dataclass(frozen=True)
class _Known:
    """What a root is known to hold: its JSON Schema, else its top-level field names (None: not
    known at all, nothing is checked)."""

    names: tuple[str, ...] | None
    schema: Mapping[str, Any] | None


def _cascade_target(cascade: Cascade, schema: Mapping[str, Any] | None) -> Problems:
    """What is wrong with a cascade's ``path`` and ``matchAny`` against the state read's schema
    (nothing is checked where the file gives no schema)."""
    current = schema
    for step in cascade.steps():
        if current is None:
            return []
        properties = current.get("properties")
        if not isinstance(properties, Mapping):
            return []
        if step not in properties:
            return [(("path",), f"{cascade.path}: the state read has no field {step!r} there")]
        current = properties[step] if isinstance(properties[step], Mapping) else None
    if current is None:
        return []
    if current.get("type") not in (None, "array"):
        return [(("path",), f"{cascade.path} is a {current.get('type')}, not an array")]
    item = _inside(current, 0)
    members = _object(item.get("properties")) if item is not None else {}
    return [
        (("matchAny", str(n)), f"the elements at {cascade.path} have no member {name!r}")
        for n, name in enumerate(cascade.match_any)
        if members and name not in members
    ]


def _argument(tool: ToolShape, key: str) -> Mapping[str, Any] | None:
    properties = tool.input_schema.get("properties") if tool.input_schema is not None else None
    found = properties.get(key) if isinstance(properties, Mapping) else None
    return found if isinstance(found, Mapping) else None


def _inside(schema: Mapping[str, Any] | None, key: str | int) -> Mapping[str, Any] | None:
    """The schema of a member (or, for an int, an element) of what ``schema`` describes."""
    if schema is None:
        return None
    inner = schema.get("items") if isinstance(key, int) else _object(schema.get("properties")).get(key)
    return inner if isinstance(inner, Mapping) else None


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _checked(
    template: Any, roots: Mapping[str, _Known], expected: Mapping[str, Any] | None, at: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], str]]:
    """What is wrong in ``template`` (which fills a value of schema ``expected``), with where."""
    if isinstance(template, str):
        whole = BRACES.fullmatch(template) is not None
        for text in BRACES.findall(template):
            problem, _ = _problem(text, roots, expected, whole=whole)
            if problem is not None:
                yield at, problem
    elif isinstance(template, dict) and FOR_EACH in template:
        yield from _checked_each(template, roots, expected, at)
    elif isinstance(template, dict):
        for key, value in template.items():
            yield from _checked(value, roots, _inside(expected, key), (*at, str(key)))
    elif isinstance(template, list):
        for index, value in enumerate(template):
            yield from _checked(value, roots, _inside(expected, 0), (*at, str(index)))


def _checked_each(
    template: dict[str, Any],
    roots: Mapping[str, _Known],
    expected: Mapping[str, Any] | None,
    at: tuple[str, ...],
) -> Iterator[tuple[tuple[str, ...], str]]:
    if set(template) != {FOR_EACH, EACH} or not isinstance(template[FOR_EACH], str):
        yield at, f'a mapping is {{"{FOR_EACH}": "{{path}}", "{EACH}": template}} and nothing else'
        return
    source = BRACES.fullmatch(template[FOR_EACH])
    if source is None:
        yield (*at, FOR_EACH), f"{FOR_EACH} is one placeholder naming an array"
        return
    problem, schema = _problem(source.group(1), roots, {"type": "array"}, whole=True)
    if problem is not None:
        yield (*at, FOR_EACH), problem
        return
    item = _inside(schema, 0)
    known = _Known(() if item is not None else None, item)
    yield from _checked(template[EACH], {**roots, ITEM: known}, _inside(expected, 0), (*at, EACH))


def _problem(
    text: str, roots: Mapping[str, _Known], expected: Mapping[str, Any] | None, *, whole: bool
) -> tuple[str | None, Mapping[str, Any] | None]:
    """What is wrong with one placeholder (None: nothing), and the schema of its value if known."""
    try:
        path = parse(text)
    except TemplateError as error:
        return str(error), None
    if path.root not in roots:
        return f"{path.text()} names {path.root!r}, which is not at hand there", None
    known = roots[path.root]
    if known.schema is not None:
        schema, wrong = schema_at(known.schema, path)
        if wrong is not None:
            return wrong, None
        want, have = type_of(expected), type_of(schema)
        widened = want == "number" and have == "integer"  # an integer is a number
        if whole and want is not None and have is not None and want != have and not widened:
            return f"{path.text()} gives {have}, where the argument takes {want}", None
        return None, schema
    first = path.steps[0] if path.steps else None
    if known.names is None or first is None or first.kind != "member":
        return None, None  # no schema: only a root's listed top-level fields are checked
    if first.name not in known.names:
        return f"{path.text()} names a field {path.root} does not have", None
    return None, None


def placeholders(template: Any, at: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every ``{…}`` in a template, with the keys leading to the string that holds it (strings
    inside objects and arrays included; an array element's key is its index)."""
    if isinstance(template, str):
        for text in BRACES.findall(template):
            yield at, text
    elif isinstance(template, dict):
        for key, value in template.items():
            yield from placeholders(value, (*at, str(key)))
    elif isinstance(template, list):
        for index, value in enumerate(template):
            yield from placeholders(value, (*at, str(index)))


def render(template: Any, data: Mapping[str, Any]) -> Any:
    """``template`` with its placeholders filled from ``data`` (``args``, ``result``, ``snapshot``,
    ``added``, ``removed``).

    A string that is one placeholder becomes the value itself, whatever its type; a placeholder
    inside a longer string is written as text (an array as its elements joined by ", "). A field
    the data lacks is a :class:`TemplateError`.
    """
    if isinstance(template, str):
        whole = BRACES.fullmatch(template)
        if whole is not None:
            return resolve(data, parse(whole.group(1)))
        return BRACES.sub(lambda match: _text(resolve(data, parse(match.group(1)))), template)
    if isinstance(template, dict) and FOR_EACH in template:
        items = render(template[FOR_EACH], data)
        if not isinstance(items, list):
            raise TemplateError(f"{template[FOR_EACH]} is not an array here")
        return [render(template[EACH], {**data, ITEM: item}) for item in items]
    if isinstance(template, dict):
        return {key: render(value, data) for key, value in template.items()}
    if isinstance(template, list):
        return [render(value, data) for value in template]
    return template


def paths_under(template: Any, root: str) -> list[Path]:
    """The parsed placeholders of ``template`` whose root is ``root`` (loaded: known to parse)."""
    return [path for _, text in placeholders(template) for path in [parse(text)] if path.root == root]


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_text(item) for item in value)
    return value if isinstance(value, str) else str(value)
