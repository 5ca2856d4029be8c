"""The Recorder's writers hand the store a body built by its model (``record/written_bodies.py``),
never a dict literal of members (issue 29, item 1): an AST scan of the Recorder finds no append of a
literal ``{"member": ...}`` body, passed as it is or through a name bound to one. A body that
extends what a model or the call path's fast writer (``gateway/call_body.py``) made, ``{**made,
"member": ...}``, is that writer's output and passes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hatp_journal.recorder.record.written_bodies import HostNote, SeenRecord

RECORDER = Path(__file__).resolve().parents[3] / "recorder"

BODY_AT: dict[str, int] = {
    "append": 2,  # store.append(run, kind, body)
    "append_async": 2,
    "_append": 2,  # the gateway's append, as the store's
    "settle": 3,  # asks.settle(run, ask, kind, body)
    "open": 1,  # asks.open(run, body, ...): the call held for a person
    "append_note": 1,  # recorder.append_note(run, body)
    "append_call": 1,
    "journal": 0,  # a relayed request's note, handed to the call's journal
}
"""Each writer the Recorder appends through, and where its body argument is."""

FIXTURES = {"witness/forge.py"}
"""Writes the witnessed known-answer files (docs/run-record.md): their note bodies are fixed bytes."""


def _literal(node: ast.expr) -> bool:
    """A dict of members written out here: every key a literal (no ``**made`` it extends)."""
    return isinstance(node, ast.Dict) and all(key is not None for key in node.keys) and bool(node.keys)


def literal_appends(source: str) -> list[int]:
    """The lines of appends whose body is a dict literal, or a name last bound to one."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        bound: dict[str, ast.expr] = {}
        for node in sorted(
            ast.walk(function), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))
        ):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                bound[node.targets[0].id] = node.value
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            at = BODY_AT.get(name)
            if at is None or len(node.args) <= at or (name == "append" and len(node.args) < 3):
                continue  # a list's append has one argument
            body = node.args[at]
            if isinstance(body, ast.Name):
                body = bound.get(body.id, body)
            if _literal(body):
                found.append(node.lineno)
    return found


def test_no_writer_of_the_recorder_appends_a_dict_literal_body() -> None:
    literal = [
        f"{path.relative_to(RECORDER)}:{line}"
        for path in sorted(RECORDER.rglob("*.py"))
        if str(path.relative_to(RECORDER)) not in FIXTURES
        for line in literal_appends(path.read_text(encoding="utf-8"))
    ]

    assert literal == [], "build the body with its model in record/written_bodies.py"


@pytest.mark.parametrize(
    "source",
    [
        'def w(store):\n    store.append(run, "seen", {"by": person, "at": at})\n',
        'def w(store):\n    body = {"server": "s", "tool": "t"}\n    store.append(run, "note", body)\n',
        'async def w(self):\n    await self._append(run, "note", {"x": 1}, tokens)\n',
        'async def w(journal):\n    await journal({"server": s, "tool": m})\n',
        'def w(asks):\n    asks.settle(run, ask, "refused", {"code": "X"})\n',
        'def w(s):\n    body = {"server": "s", "remedies": "e1"}\n    Asks(s).open(r, body, now=n)\n',
    ],
)
def test_the_scan_finds_a_literal_body(source: str) -> None:
    assert literal_appends(source) != []


@pytest.mark.parametrize(
    "source",
    [
        'def w(store):\n    store.append(run, "seen", SeenRecord(by=p, at=a).wire())\n',
        'def w(s):\n    body = {"x": 1}\n    body = Model(**body)\n    s.append(r, "n", body.wire())\n',
        'def w(asks):\n    asks.settle(run, ask, "refused", {**call_wire(call), "code": code})\n',
        "def w(found):\n    found.append({'a': 1})\n",
    ],
)
def test_a_body_a_model_or_the_fast_writer_made_passes(source: str) -> None:
    assert literal_appends(source) == []


def test_the_recorders_own_notes_and_a_seen_write_what_they_always_wrote() -> None:
    seen = SeenRecord(by="lee@acme.com", at="2026-11-07T18:00:00Z").wire()
    note = HostNote(
        server="hatp", tool="continued", arguments={"runKeyDigest": "sha256:00"}, outcome={"status": "ok"}
    )

    assert seen == {"by": "lee@acme.com", "at": "2026-11-07T18:00:00Z"}
    assert list(note.wire()) == ["server", "tool", "arguments", "outcome"]
