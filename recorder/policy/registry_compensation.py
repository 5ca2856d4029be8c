"""Host-declared compensation in a registry file: how the Recorder itself undoes a call of a server
that knows nothing of undo (docs/policy.md, "Host-declared compensation").

A tool's ``compensation`` names calls of the same server: a ``snapshot`` read made before the call,
a ``state`` read of the resource (made after the call, before the undo and after it), and the
``inverse`` call that puts the old state back. Their arguments are templates over ``{args}``, the
call's ``{result}`` and the ``{snapshot}``; every field a template names is checked when the file is
loaded, so a typo is refused with the file and line instead of failing on the day of an undo.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import Field, model_validator

from hatp_journal.toolkit.wire import WireModel

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}")
"""``{args.path}``, ``{snapshot.task.title}``, ``{snapshot}``: a root and a dotted path."""

ROOTS = ("args", "result", "snapshot")


class TemplateError(ValueError):
    """A template names a field its data does not have (at render time: the data lacks it)."""


class HostCall(WireModel):
    """One call the Recorder makes to the same server: a tool and its arguments, as a template."""

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


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
    inverse: HostCall = Field(description="puts the old state back, over {args, result, snapshot}")
    restored: Any = Field(
        default="{snapshot}",
        description="what the state read gives once undone, a template over {args, result, snapshot}",
    )

    @model_validator(mode="after")
    def _reads(self) -> Compensation:
        if self.state is None and self.snapshot is None:
            raise ValueError("give a state read, a snapshot read or both")
        return self

    def state_read(self) -> HostCall:
        """The read that fingerprints the resource (the snapshot read when none is given)."""
        read = self.state or self.snapshot
        assert read is not None  # the validator saw to it
        return read

    def problems(
        self, arguments: tuple[str, ...], tools: Mapping[str, tuple[str, ...]]
    ) -> list[tuple[tuple[str, ...], str]]:
        """What is wrong with the templates, given the tool's ``arguments`` and the server's
        ``tools`` (each with its arguments): fields that do not exist, tools the file does not list.
        Each problem comes with the path of the key it is about, for its line."""
        known = {"args": arguments, "result": self.result_fields}
        if self.snapshot is not None:
            known["snapshot"] = self.snapshot_fields
        after_call = {k: v for k, v in known.items() if k != "snapshot"}
        found: list[tuple[tuple[str, ...], str]] = []
        checked: list[tuple[str, Any, Mapping[str, tuple[str, ...]]]] = [
            ("resource", self.resource, after_call),
            ("summary", self.summary, after_call),
            ("restored", self.restored, known),
        ]
        calls = [("snapshot", self.snapshot, {"args": arguments}), ("state", self.state, after_call)]
        for name, call, at_hand in [*calls, ("inverse", self.inverse, known)]:
            if call is None:
                continue
            if call.tool not in tools:
                found.append(((name, "tool"), f"the file lists no tool {call.tool!r}"))
                continue
            for key in call.arguments:
                if key not in tools[call.tool]:
                    found.append(((name, "arguments", key), f"{call.tool} has no argument {key!r}"))
            checked.append((f"{name}.arguments", call.arguments, at_hand))
        for where, template, roots in checked:
            for at, path in placeholders(template):
                root, _, field = path.partition(".")
                place = (*where.split("."), *at)  # the key holding the template, for its line
                if root not in roots:
                    found.append((place, f"{{{path}}} names {root!r}, which is not at hand there"))
                elif field and field.split(".")[0] not in roots[root]:
                    found.append((place, f"{{{path}}} names a field {root} does not have"))
        return found


def placeholders(template: Any, at: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every ``{root.path}`` in a template, with the keys leading to it (strings inside objects and
    arrays included)."""
    if isinstance(template, str):
        for path in PLACEHOLDER.findall(template):
            yield at, path
    elif isinstance(template, dict):
        for key, value in template.items():
            yield from placeholders(value, (*at, str(key)))
    elif isinstance(template, list):
        for value in template:
            yield from placeholders(value, at)


def render(template: Any, data: Mapping[str, Any]) -> Any:
    """``template`` with its placeholders filled from ``data`` (``args``, ``result``, ``snapshot``).

    A string that is one placeholder becomes the value itself, whatever its type; a placeholder
    inside a longer string is written as text. A field the data lacks is a :class:`TemplateError`.
    """
    if isinstance(template, str):
        whole = PLACEHOLDER.fullmatch(template)
        if whole is not None:
            return _lookup(data, whole.group(1))
        return PLACEHOLDER.sub(lambda match: _text(_lookup(data, match.group(1))), template)
    if isinstance(template, dict):
        return {key: render(value, data) for key, value in template.items()}
    if isinstance(template, list):
        return [render(value, data) for value in template]
    return template


def _lookup(data: Mapping[str, Any], path: str) -> Any:
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise TemplateError(f"{{{path}}}: there is no {part!r} here")
        value = value[part]
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)
