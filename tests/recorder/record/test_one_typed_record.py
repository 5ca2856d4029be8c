"""Entry bodies are read through one typed union, with one list of kinds (issue 29, item 1).

The readers read a body only through ``entry_bodies``: an AST scan of the Recorder finds no
``.get(``/``[...]`` on an entry body outside the verifier (which checks raw bodies by design), and
every kind a reader compares with is one ``kinds.EntryKind`` names.
"""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest

from hatp_journal.recorder.record import Entry, RunStore
from hatp_journal.recorder.record.entry_bodies import (
    BODY_MODELS,
    AskBody,
    CallEntry,
    NoticeEntry,
    OtherBody,
    Unreadable,
    mentioned,
    read_body,
    read_entry,
)
from hatp_journal.recorder.record.kinds import KNOWN_KINDS

RECORDER = Path(__file__).resolve().parents[3] / "recorder"
VERIFIER = {"record/bodies.py", "record/body_parts.py", "record/verify.py"}
"""The verifier checks raw bodies member by member, by design (``BAD_BODY`` names what did not fit)."""


def _sources() -> list[tuple[str, ast.Module]]:
    return [
        (str(path.relative_to(RECORDER)), ast.parse(path.read_text(), str(path)))
        for path in sorted(RECORDER.rglob("*.py"))
    ]


def _is_body(node: ast.expr) -> bool:
    """``X.body``, or ``X["body"]`` (a stored entry's JSON, parsed)."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "body"
    return isinstance(node, ast.Attribute) and node.attr == "body" and isinstance(node.ctx, ast.Load)


def raw_body_reads(tree: ast.Module) -> list[str]:
    """``.get(`` calls and subscripts read on ``X.body``, on a name bound from ``X.body``, or on a
    parameter named ``body`` typed as a raw mapping, in each function of ``tree``."""
    found: list[str] = []
    for scope in ast.walk(tree):
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
            continue
        raw: set[str] = set()
        if not isinstance(scope, ast.Module):
            for arg in scope.args.args + scope.args.kwonlyargs:
                if arg.arg == "body" and arg.annotation is not None and "Any" in ast.unparse(arg.annotation):
                    raw.add(arg.arg)
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and _is_body(node.value):
                raw |= {target.id for target in node.targets if isinstance(target, ast.Name)}

        def is_raw(expr: ast.expr) -> bool:
            return _is_body(expr) or (isinstance(expr, ast.Name) and expr.id in raw)  # noqa: B023

        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "get" and is_raw(node.func.value):
                    found.append(f"{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and is_raw(node.value):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return sorted(set(found))


def test_no_reader_indexes_a_raw_entry_body_outside_the_verifier() -> None:
    found = {
        path: reads for path, tree in _sources() if path not in VERIFIER and (reads := raw_body_reads(tree))
    }
    assert found == {}


def test_the_scan_finds_a_raw_read_when_there_is_one() -> None:
    tree = ast.parse(
        "def f(entry):\n    b = entry.body\n    return b.get('x'), entry.body['y']\n"
        "def g(body: dict[str, Any]):\n    return body['server'], parse(data)['body'].get('directory')\n"
    )
    assert raw_body_reads(tree) == [
        "3: b.get('x')",
        "3: entry.body['y']",
        "5: body['server']",
        "5: parse(data)['body'].get('directory')",
    ]


ENTRIES = {"entry", "e", "later", "RecEntry"}
"""How the Recorder names an entry it looks at the kind of (other ``kind`` members: a step's, an
intake's, a template path's, are other vocabularies)."""


def _an_entry(node: ast.expr) -> bool:
    if not (isinstance(node, ast.Attribute) and node.attr == "kind"):
        return False
    held = node.value
    return (isinstance(held, ast.Name) and held.id in ENTRIES) or (
        isinstance(held, ast.Call) and isinstance(held.func, ast.Attribute) and held.func.attr == "entry"
    )


def kinds_compared(tree: ast.Module) -> set[str]:
    """String constants compared with an entry's ``kind`` (``==``, ``!=``, ``in`` a tuple or set)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(_an_entry(side) for side in sides):
            continue
        for side in sides:
            items = side.elts if isinstance(side, ast.Tuple | ast.Set | ast.List) else [side]
            found |= {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
    return found


def test_every_kind_compared_with_an_entrys_kind_is_a_known_kind() -> None:
    compared = set().union(*(kinds_compared(tree) for _, tree in _sources()))
    assert compared - KNOWN_KINDS == set()
    assert len(compared) >= 12


def test_the_kind_scan_finds_a_misspelt_kind() -> None:
    tree = ast.parse("x = [e for e in es if e.kind in ('call', 'undo_outcome')]\nok = entry.kind == 'pln'")
    assert kinds_compared(tree) - KNOWN_KINDS == {"undo_outcome", "pln"}


def test_the_readers_union_has_one_member_per_known_kind() -> None:
    assert set(BODY_MODELS) == KNOWN_KINDS


def entry(kind: str, body: dict[str, object]) -> Entry:
    return Entry(
        id="e1", run="r1", seq=1, time="2026-12-04T12:00:00Z", kind=kind, body=body, prev_hash="", hash=""
    )


def test_an_entry_reads_as_its_kinds_member_of_the_union() -> None:
    call = read_entry(entry("call", {"server": "crm", "tool": "update", "arguments": {}}))
    assert isinstance(call, CallEntry)
    assert call.body.server == "crm"
    lapse = read_entry(entry("lapse", {"step": "e3"}))
    assert isinstance(lapse, NoticeEntry)
    assert lapse.body.step == "e3"


@pytest.mark.parametrize(
    ("kind", "body", "place"),
    [
        ("ask", {"server": "crm"}, "tool"),
        ("call", {"outcome": "ok"}, "outcome"),
        ("mail-deferred", {"notice": 7}, "notice"),
        ("link", {"on": ["e1"]}, "on"),
        ("note", {"outcome": {"afterStep": "two"}}, "outcome.afterStep"),
    ],
)
def test_a_body_that_does_not_fit_its_kind_reads_as_unreadable_naming_the_member(
    kind: str, body: dict[str, object], place: str
) -> None:
    read = read_body(entry(kind, body))
    assert isinstance(read, Unreadable)
    assert place in read.detail


def test_an_unknown_kind_is_unreadable_as_a_typed_entry_and_opaque_to_body_readers() -> None:
    odd = entry("from-a-later-recorder", {"x": 1})
    assert isinstance(read_entry(odd), Unreadable)
    assert isinstance(read_body(odd), OtherBody)


def test_what_an_entry_mentions_is_read_alone_and_a_member_that_is_not_a_string_names_nothing() -> None:
    said = mentioned(entry("decision", {"ask": "e2", "server": ["crm"], "directory": "sha256:ab"}))
    assert (said.ask, said.server, said.directory) == ("e2", None, "sha256:ab")


def test_an_ask_reads_the_call_it_holds() -> None:
    body = {
        "agent": "bot",
        "server": "crm",
        "tool": "update",
        "arguments": {"id": "c1"},
        "argumentsDigest": "sha256:00",
        "callDigest": "sha256:11",
        "approver": "role://acme/lead",
        "decideBy": "2026-12-05T12:00:00Z",
    }
    ask = read_body(entry("ask", body))
    assert isinstance(ask, AskBody)
    assert (ask.agent, ask.principal, ask.arguments_digest) == ("bot", "", "sha256:00")


EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"


def test_every_entry_of_the_example_records_reads_through_the_union() -> None:
    records = sorted(EXAMPLES.rglob("run-record.json"))
    assert records
    read = 0
    for path in records:
        for raw in json.loads(path.read_text(encoding="utf-8"))["entries"]:
            typed = read_entry(Entry.model_validate(raw))
            assert not isinstance(typed, Unreadable), f"{path.name} {raw['id']} ({raw['kind']}): {typed}"
            read += 1
    assert read >= 10


def test_an_export_names_no_server_for_an_entry_whose_server_or_directory_is_not_a_string(
    store: RunStore,
) -> None:
    run = store.open_run(agent="bot", principal="dana").id
    store.append(run, "call", {"server": ["crm"], "tool": "update", "arguments": {}})
    store.append(run, "decision", {"ask": "e1", "directory": {"sha256": "ab"}, "approval": {}})
    out = io.BytesIO()
    store.export_to(run, out)
    exported = store.export(run)
    assert [e.id for e in exported.entries] == ["e1", "e2"]
    assert exported.server_keys == {}
    assert json.loads(out.getvalue())["serverKeys"] == {}
