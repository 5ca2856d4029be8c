"""Fuzzing what a tool server can sign with its own pinned key (issue 13, "Signed hostile data").

A server may sign a journal object whose ``undoBy`` is a date alone, has an offset, a fraction or a
leap second, whose fields have the wrong types, or a ``check``/``compensate`` answer whose
``versionFound``, ``changedBy`` or ``changes`` are not what the wire format says. Each example here
is one closed run in a shared store: a genuine call, then hostile calls signed with a real Ed25519
key and taken in by the Recorder's intake (or kept as a Recorder before the ``undoBy`` check kept
them: verified), hostile check answers for the planner and hostile undo answers in outcome entries.
Then the run is planned, shown line by line, its review page is served, and ``tick`` runs over the
whole store. Nothing raises; what does not fit shows as unresolved or unreadable (with its code) for
that step or entry only; and a control run with a genuine call always gets its review and its
reminder, once. Hypothesis runs derandomized, so every run tries the same inputs.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import event
from starlette.testclient import TestClient

from hatp_journal.recorder.changes.links import LinkedCall, LinkIndex
from hatp_journal.recorder.changes.plan import plan_text
from hatp_journal.recorder.changes.steps import Step
from hatp_journal.recorder.cli.show import entry_line
from hatp_journal.recorder.config import MailSection, RecorderConfig, RecorderSection, WebSection
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.gateway.replies import journal_members
from hatp_journal.recorder.intake.journal_objects import take_in
from hatp_journal.recorder.intake.tokens import redact
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import Entry, RunStore
from hatp_journal.recorder.record.entry_bodies import ReadCode
from hatp_journal.recorder.record.export import export_run
from hatp_journal.recorder.runs.reminders import RUN_UNREADABLE, tick
from hatp_journal.recorder.undo.planner import CheckUnavailable, UndoRequest, build_plan
from hatp_journal.recorder.web import WebApprover
from hatp_journal.recorder.web.views import review
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.errors import ErrorCode
from hatp_journal.toolkit.signing import answer_payload, b64url, call_payload, token_digest, verify_answer
from hatp_journal.toolkit.store import create_store_engine
from hatp_journal.toolkit.wire import META_KEY, PROTOCOL

DANA = "human://acme.com/dana"
LEAD = "human://acme.com/role/team-lead"
SERVER = "chain"
NOW = datetime(2026, 11, 7, 18, 0, tzinfo=UTC)
ISSUED = "2026-11-07T17:00:00Z"
OPEN_WINDOW = "2026-11-07T19:00:00Z"  # an hour after NOW: the default lead time makes its reminder due
POLICY = Policy.model_validate(
    {"autonomy": {"compensate": "allow", "read": "allow", "none": "allow", "unknown": "allow"}}
)
DIRECTORY = Directory.model_validate(
    {"people": [{"id": DANA, "name": "Dana", "publicKey": b64url(SigningKey.generate().public.raw())}]}
)
RUNS_PER_STORE = 8
"""Planning and ``tick`` look at every run of a store: a fresh store every so many examples keeps
each example's cost flat. Each store is ticked once it is full, all its runs together."""

KEY = SigningKey.generate()
KEYS = {KEY.kid: KEY.public}

# -- hostile values, each known to fit the wire format or not ------------------------------------

BAD_TIMES = [
    *("2026-11-08", "2026-11-08T10:00:00+02:00", "2026-11-08T10:00:00.123Z", "2026-11-08T23:59:60Z"),
    *("2026-02-30T10:00:00Z", "2026-11-08T24:00:00Z", "2026-11-08 10:00:00Z", "2026-11-08t10:00:00z"),
    *("0000-01-01T00:00:00Z", "\uff12\uff10\uff12\uff16-11-08T10:00:00Z", "2026-11-08T10:00:00", "", "Z"),
    *(
        "2026-11-08T10:00:00Z\n",
        "2026-11-08T10:00:00Z ",
        "\n2026-11-08T10:00:00Z",
        "2026-11-08T10:00:00Z\r\n",
    ),
]
GOOD_TIMES = [OPEN_WINDOW, "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2000-02-29T00:00:00Z"]
"""Wire times, the extremes included: ``undoBy`` far in the past (already expired) or the future."""

# Hostile values come from fixed lists, and an object's changes are one short list of choices: a
# run holds dozens of objects, and drawing each string and container anew made Hypothesis most of
# an example's cost. Every class of value that matters is in the lists.
STRINGS = ["", "a", "Won", "v2", "D-881", " ", "é€中😀", "\u202e\u200b", "\x00\x1b", "x" * 300, "2026-11-08"]
LEAVES: list[Any] = [None, True, False, 0, -1, 2**53 - 1, -(2**53) + 1, 0.5, -0.0, 1e300, 5e-324, *STRINGS]
JSON_VALUES: list[Any] = [*LEAVES, [], [None, "a"], [[1]], {}, {"a": None}, {"": {"x": [1, "é"]}}]
NOT_STRINGS: list[Any] = [True, False, 0, 7, -1, 0.5, [], ["a"], {}, {"who": "x"}]
LISTS_OF_TEXT = [[], ["a"], ["", "é€中😀", "x" * 300]]


@dataclass(frozen=True)
class Hostile:
    """Values for one field: those the wire format takes, those it does not, and bad time strings
    (a string where a time goes: the wire's ``UndoAnswer`` takes it, a reader comparing it can't)."""

    fits: list[Any]
    breaks: list[Any]
    bad_time: list[Any] = field(default_factory=list)


def texts(min_size: int = 0) -> list[str]:
    return [text for text in STRINGS if len(text) >= min_size]


JOURNAL_FIELDS: dict[tuple[str, ...], Hostile] = {
    ("undo", "undoBy"): Hostile([*GOOD_TIMES, None], NOT_STRINGS, BAD_TIMES),
    ("undo", "kind"): Hostile(["compensate"], ["maybe", *NOT_STRINGS]),
    ("undo", "sideEffects"): Hostile(LISTS_OF_TEXT, ["a", 5, None, [1], {}]),
    ("undo", "cost"): Hostile(
        [{"amount": "2.50", "currency": "USD"}],
        [{"amount": 2.5, "currency": "USD"}, "2.50 USD", {"amount": "x", "currency": "usd"}],
    ),
    ("effect", "summary"): Hostile(texts(), [*NOT_STRINGS, None]),
    ("effect", "resource"): Hostile(texts(1), [*NOT_STRINGS, None]),
    ("effect", "version"): Hostile(texts(1), NOT_STRINGS),
    ("effect", "before"): Hostile([*texts(1), None], NOT_STRINGS),
    ("effect", "changes"): Hostile(
        [
            [],
            [{"field": "a"}],
            [{"field": "", "before": None, "after": {"x": [1]}}, {"field": "é", "after": 2}],
        ],
        ["x", 5, {"field": "a"}, [1], [{"name": "a"}], [{"field": 2}]],
    ),
    ("effect", "uses"): Hostile(
        [[], [{"resource": "kv://store/k1"}], [{"resource": ""}, {"resource": "x" * 300}]],
        ["x", 5, None, [1], [{"resource": 5}], [{"name": "a"}], {"resource": "a"}],
    ),
    ("effect", "fields"): Hostile([{}, {"value": "Won"}, {"a": JSON_VALUES}], ["a", [], 5]),
    ("trustMe",): Hostile([], JSON_VALUES),
}
ANSWER_FIELDS: dict[tuple[str, ...], Hostile] = {
    ("status",): Hostile(["ok", "conflict", "expired", "done", "unknown_token"], ["maybe", *NOT_STRINGS]),
    ("versionFound",): Hostile([*texts(1), None], NOT_STRINGS),
    ("versionExpected",): Hostile(texts(1), NOT_STRINGS),
    ("changedBy",): Hostile(texts(), NOT_STRINGS),
    ("changes",): Hostile(
        [[], [{"field": "a", "expected": 1, "now": 2}], [{"field": "é"}, {"field": "", "now": JSON_VALUES}]],
        ["x", 5, {"field": "a"}, [1], [{"name": "a"}], [{"field": []}]],
    ),
    ("undoBy",): Hostile([*GOOD_TIMES, None], NOT_STRINGS, BAD_TIMES),
    ("code",): Hostile([None, *(code.value for code in ErrorCode)], ["NOT_A_CODE", 5]),
    ("message",): Hostile(texts(), NOT_STRINGS),
    ("sideEffects",): Hostile(LISTS_OF_TEXT, ["a", [2]]),
    ("surprise",): Hostile([], JSON_VALUES),
}
Change = tuple[tuple[str, ...], str, Any]
"""(where, how — ``fits``, ``breaks`` or ``bad_time`` —, the value put there)."""


def changes(fields: dict[tuple[str, ...], Hostile], *, fitting: bool) -> st.SearchStrategy[list[Change]]:
    """Up to three changes to different fields; only values that fit when ``fitting``."""
    every = [(path, "fits", value) for path, hostile in fields.items() for value in hostile.fits]
    if not fitting:
        every += [(path, "breaks", value) for path, hostile in fields.items() for value in hostile.breaks]
        every += [(path, "bad_time", value) for path, hostile in fields.items() for value in hostile.bad_time]
    return st.lists(st.sampled_from(every), min_size=1, max_size=3, unique_by=lambda change: change[0])


CHANGES = {
    (name, fitting): changes(fields, fitting=fitting)
    for name, fields in (("journal", JOURNAL_FIELDS), ("answer", ANSWER_FIELDS))
    for fitting in (True, False)
}


@dataclass
class Drawn:
    """An object with hostile values put in, and whether any does not fit."""

    value: dict[str, Any]
    breaks: bool = False  # a value of the wrong type or shape
    bad_time: bool = False  # a string where a wire time goes, that is not one


def put_hostile(data: st.DataObject, base: dict[str, Any], fields_name: str) -> Drawn:
    """``base`` with up to three fields (of the ``journal`` or the ``answer`` table) set to values
    that fit, break the format, or are bad times. One object in three takes only values that fit."""
    drawn = Drawn(base)
    fitting = data.draw(st.integers(0, 2), label="aim") == 0
    for path, how, value in data.draw(CHANGES[fields_name, fitting], label=fields_name):
        parent = base
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = copy.deepcopy(value)
        drawn.breaks |= how == "breaks"
        drawn.bad_time |= how == "bad_time"
    return drawn


# -- signed objects ------------------------------------------------------------------------------


def journal_object(token: str, key: str) -> dict[str, Any]:
    """A journal object as a journal-aware server writes one for ``put`` of ``key``."""
    return {
        "protocol": PROTOCOL,
        "server": SERVER,
        "undo": {"kind": "compensate", "undoBy": OPEN_WINDOW, "via": "api", "sideEffects": []},
        "compensationToken": token,
        "effect": {"summary": f"Put {key}", "resource": f"kv://store/{key}", "version": "v2", "before": "v1"},
    }


def signed_call(journal: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """``journal`` with the server's call receipt: it verifies, whatever it says."""
    receipt = KEY.sign(call_payload(journal, "put", arguments), ISSUED)
    return {**journal, "receipt": receipt.wire()}


def undo_answer(operation: str, digest: str) -> dict[str, Any]:
    return {
        "protocol": PROTOCOL,
        "server": SERVER,
        "operation": operation,
        "status": "ok",
        "tokenDigest": digest,
        "at": ISSUED,
    }


def signed_answer(answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "receipt": KEY.sign(answer_payload(answer), ISSUED).wire()}


# -- the shared store ------------------------------------------------------------------------------


def quick_store(path: Path) -> RunStore:
    """A Run Record store in a real SQLite file that skips fsync: these examples are about reading
    what was recorded, not about surviving a power cut, and a thousand runs fsync'd take minutes."""
    engine = create_store_engine(path)

    @event.listens_for(engine, "connect")
    def no_fsync(connection: Any, _record: Any) -> None:
        connection.execute("PRAGMA synchronous=OFF")

    engine.dispose()  # connections made from here on skip fsync
    return RunStore(engine, SigningKey.generate())


@dataclass
class Shared:
    """One store and a control run in it with a genuine call, whose reminder is due at NOW."""

    store: RunStore
    control: str
    runs: list[str] = field(default_factory=list)

    def tick_once_and_again(self) -> None:
        """``tick`` over the whole store: every run gets its review, the control run its reminder,
        whatever the hostile runs beside it hold; a second tick finds nothing more to do."""
        appended, failed = tick(self.store, POLICY, DIRECTORY, MailSection(), NOW, "http://testserver")
        assert failed == []
        assert {e.run for e in appended if e.kind == "review"} == {self.control, *self.runs}
        assert [e.kind for e in appended if e.run == self.control] == ["review", "reminder"]
        assert tick(self.store, POLICY, DIRECTORY, MailSection(), NOW, "http://testserver") == ([], [])

    def close(self) -> None:
        self.store.dispose()
        self.store.engine.dispose()


@dataclass
class Stores:
    """Hands out the shared store, and starts a fresh one every ``RUNS_PER_STORE`` runs."""

    root: Path
    pages: WebApprover
    current: Shared | None = None
    made: int = 0

    def store_for_next_run(self) -> Shared:
        if self.current is not None and len(self.current.runs) >= RUNS_PER_STORE:
            self.retire()
        if self.current is None:
            self.made += 1
            store = quick_store(self.root / f"store{self.made}.db")
            control = store.open_run(agent="bot", principal=DANA).id
            genuine = signed_call(journal_object("t-control", "k1"), {"key": "k1"})
            write_call(store, control, LinkIndex(), 1, genuine)
            store.close_run(control)
            self.current = Shared(store, control)
        return self.current

    def retire(self) -> None:
        """Tick the current store (see :meth:`Shared.tick_once_and_again`) and put it away."""
        if self.current is not None:
            try:
                self.current.tick_once_and_again()
            finally:
                self.current.close()
                self.current = None

    def review_page(self, store: RunStore, run: str) -> str:
        """The review page of ``run`` as the approver renders it (its view and its template)."""
        windows, others = review(store.entries(run), NOW)
        template = self.pages.templates.get_template("review.html")
        return template.render(
            person=DANA, run=store.run(run), windows=windows, others=others, csrf="c", form="f"
        )


def approver_config(folder: Path) -> RecorderConfig:
    return RecorderConfig(
        recorder=RecorderSection(
            agent="bot", principal=DANA, store=str(folder / "recorder.db"), key=str(folder / "recorder.key")
        ),
        servers={},
        web=WebSection(secret=str(folder / "web.secret"), base_url="http://testserver"),
    )


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    root = tmp_path_factory.mktemp("hostile")
    pages = WebApprover(approver_config(root), clock=lambda: NOW)
    handed = Stores(root, pages)
    yield handed
    if handed.current is not None:
        handed.current.close()
    pages.close()


def write_call(
    store: RunStore,
    run: str,
    links: LinkIndex,
    number: int,
    journal: dict[str, Any],
    *,
    as_verified: bool = False,
) -> Entry:
    """The call as the gateway journals it: the real intake, then its ``intake`` and ``journal``
    members. ``as_verified``: as a Recorder kept it before intake checked ``undoBy`` (verified)."""
    arguments = {"key": f"k{number}"}
    intake = take_in(
        {META_KEY: journal}, tool="put", arguments=arguments, server_keys=KEYS, declared_kind="compensate"
    )
    members, tokens = journal_members(intake, SERVER, 65_536)
    if as_verified:
        kept, tokens = redact(SERVER, journal)
        members = {"intake": {"status": "verified", "kind": "compensate"}, "journal": kept}
    body: dict[str, Any] = {
        "server": SERVER,
        "tool": "put",
        "arguments": arguments,
        "declared": "compensate",
        "decision": {"action": "allow"},
        **members,
        "outcome": {"status": "ok"},
    }
    linked = LinkedCall.of(body)
    body["links"] = links.links(linked)
    entry = store.append(run, "call", body, tokens=tokens)
    links.add(entry.id, linked)
    return entry


# -- the property ----------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the examples fed in and what came out, over all of them."""

    objects: int = 0
    seen: Counter[str] = field(default_factory=Counter)


@dataclass
class HostileRun:
    """One run's hostile calls, what each should read as, and the answers its server will give."""

    run: str
    expect: dict[str, str] = field(default_factory=dict)  # entry → "unresolved", "unreadable" or "fits"
    answers: dict[str, Drawn] = field(default_factory=dict)  # entry → its check answer
    outcomes: dict[str, Drawn] = field(default_factory=dict)  # undo-outcome entry → its undo answer


def write_hostile_run(data: st.DataObject, store: RunStore, tally: Tally) -> HostileRun:
    run = HostileRun(store.open_run(agent="bot", principal=DANA).id)
    links = LinkIndex()
    write_call(store, run.run, links, 1, signed_call(journal_object("t-genuine", "k1"), {"key": "k1"}))
    for number in range(2, data.draw(st.integers(8, 14), label="calls") + 2):
        token = f"t-{run.run}-{number}"
        drawn = put_hostile(data, journal_object(token, f"k{number}"), "journal")
        as_verified = data.draw(st.booleans(), label="kept as verified by an earlier Recorder")
        entry = write_call(
            store,
            run.run,
            links,
            number,
            signed_call(drawn.value, {"key": f"k{number}"}),
            as_verified=as_verified,
        )
        tally.objects += 1
        if not (drawn.breaks or drawn.bad_time):
            run.expect[entry.id] = "fits"
            answer = put_hostile(data, undo_answer("check", token_digest(token)), "answer")
            run.answers[entry.id] = answer
            tally.objects += 1
        else:
            run.expect[entry.id] = "unreadable" if as_verified else "unresolved"
        if data.draw(st.booleans(), label="an undo answer recorded"):
            said = put_hostile(data, undo_answer("compensate", token_digest(token)), "answer")
            body = {"step": entry.id, "server": SERVER, "answer": signed_answer(said.value)}
            run.outcomes[store.append(run.run, "undo-outcome", body).id] = said
            tally.objects += 1
    store.close_run(run.run)
    return run


def plan_run(served: Shared, hostile: HostileRun) -> None:
    """Plan undoing the whole run; every check is answered with its (signed) hostile answer."""

    async def check(step: Step) -> dict[str, Any]:
        drawn = hostile.answers.get(step.id)
        answer = signed_answer(drawn.value if drawn else undo_answer("check", step.token_digest or ""))
        if not verify_answer(answer, KEYS) or answer.get("tokenDigest") != step.token_digest:
            raise CheckUnavailable("not a verified answer about this token")  # as UndoServers.check does
        return answer

    async def plan() -> Any:
        return await build_plan(
            served.store,
            hostile.run,
            UndoRequest(from_step=1),
            requested_by=DANA,
            undo_authority=LEAD,
            check=check,
            now=NOW,
        )

    planned = anyio.run(plan)
    plan_text(planned.plan, agent="bot", principal=DANA)
    planned.plan.digest()
    unresolved = {item.entry: item.code for item in planned.plan.unresolved}
    named = planned.plan.entries()
    assert len(named) == len(set(named))  # every step in one section only
    for entry, expected in hostile.expect.items():
        assert entry in named
        if expected == "unreadable":
            assert unresolved[entry] == ReadCode.JOURNAL_UNREADABLE
        elif expected == "unresolved":
            assert entry in unresolved
            assert unresolved[entry] is None  # intake said so; nothing unreadable was recorded as verified
        elif entry in planned.checks:
            answer = hostile.answers[entry]
            broken = answer.breaks or answer.bad_time
            assert (unresolved.get(entry) == ReadCode.CHECK_ANSWER_UNREADABLE) == broken


def show_run(served: Shared, hostile: HostileRun) -> None:
    lines = {
        line.split("\t")[0]: line.split("\t") for line in map(entry_line, served.store.entries(hostile.run))
    }
    for entry, expected in hostile.expect.items():
        assert lines[entry][4].startswith("unreadable: JOURNAL_UNREADABLE") == (expected == "unreadable")
    for entry, said in hostile.outcomes.items():
        # An undo answer is shown as the wire's UndoAnswer reads it: its undoBy is not compared there.
        assert (lines[entry][2:4] == ["unreadable", ReadCode.BODY_UNREADABLE]) == said.breaks


def review_page(stores: Stores, served: Shared, hostile: HostileRun) -> None:
    page = stores.review_page(served.store, hostile.run)
    unreadable = dict(re.findall(r'data-entry="(e\d+)" class="unreadable" data-code="([A-Z_]+)"', page))
    expected = {
        entry: ReadCode.JOURNAL_UNREADABLE for entry, said in hostile.expect.items() if said == "unreadable"
    }
    assert unreadable == expected


# Closed runs the fuzz writes, each about 20 objects and every kind of misfit about once. 250 (not
# 500) still catches the non-list `effect.uses` that crashed the planner (links._uses put back as it
# was: TypeError); the 250 runs hold 5242 objects (derandomized, so every run the same).
HOSTILE_RUNS = int(os.environ.get("HATP_HOSTILE_RUNS", "250"))
"""bench/hostile_data.py runs this property with 600 runs (over 10,000 signed objects)."""
TALLY = os.environ.get("HATP_FUZZ_TALLY")
"""A file to add this property's counts to, as one JSON line (bench/hostile_data.py reads it)."""


def test_signed_hostile_objects_never_crash_plan_show_review_or_tick(stores: Stores) -> None:
    tally = Tally()

    @settings(
        max_examples=HOSTILE_RUNS,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
        phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking a whole run takes minutes
    )
    @given(data=st.data())
    def one_run(data: st.DataObject) -> None:
        served = stores.store_for_next_run()
        hostile = write_hostile_run(data, served.store, tally)
        served.runs.append(hostile.run)

        plan_run(served, hostile)
        show_run(served, hostile)
        review_page(stores, served, hostile)
        exported = export_run(served.store, hostile.run).to_bytes()
        assert f"t-{hostile.run}-".encode() not in exported  # no token of the run in its export
        assert b'"compensationToken"' not in exported

        tally.seen.update(hostile.expect.values())
        tally.seen.update("check answer broken" for a in hostile.answers.values() if a.breaks or a.bad_time)
        tally.seen.update("undo answer broken" for a in hostile.outcomes.values() if a.breaks)

    one_run()
    stores.retire()  # the last store is ticked too

    assert tally.objects >= 20 * HOSTILE_RUNS, tally
    assert min(tally.seen[kind] for kind in ("fits", "unresolved", "unreadable")) >= HOSTILE_RUNS, tally
    broken_answers = ("check answer broken", "undo answer broken")
    assert min(tally.seen[kind] for kind in broken_answers) >= HOSTILE_RUNS, tally
    if TALLY:
        with open(TALLY, "a") as out:
            out.write(json.dumps({"runs": HOSTILE_RUNS, "objects": tally.objects, **tally.seen}) + "\n")


# -- the cases the issue names, one by one ----------------------------------------------------------

ISSUE_TIMES = [
    *("2026-11-08", "2026-11-08T10:00:00+02:00", "2026-11-08T10:00:00.123Z", "2026-11-08T23:59:60Z"),
    "2026-11-08T10:00:00Z\n",  # a pattern ending in $ matched it: verified, then every reader of it crashed
]


def signed_with_undo_by(undo_by: str) -> dict[str, Any]:
    journal = journal_object("t-1", "k1")
    journal["undo"]["undoBy"] = undo_by
    return signed_call(journal, {"key": "k1"})


@pytest.mark.parametrize("undo_by", ISSUE_TIMES)
def test_a_signed_undo_by_that_is_no_wire_time_is_unresolved_at_intake(undo_by: str) -> None:
    intake = take_in(
        {META_KEY: signed_with_undo_by(undo_by)},
        tool="put",
        arguments={"key": "k1"},
        server_keys=KEYS,
        declared_kind="compensate",
    )

    assert (intake.status, intake.kind) == ("unresolved", "unknown")


def test_the_same_object_with_a_wire_time_is_verified() -> None:
    intake = take_in(
        {META_KEY: signed_with_undo_by(OPEN_WINDOW)},
        tool="put",
        arguments={"key": "k1"},
        server_keys=KEYS,
        declared_kind="compensate",
    )

    assert (intake.status, intake.kind) == ("verified", "compensate")


@pytest.fixture
def pages(tmp_path: Path) -> Iterator[tuple[WebApprover, TestClient]]:
    """The approver's pages over a store, with Dana signed in."""
    web = WebApprover(approver_config(tmp_path), clock=lambda: NOW)
    client = TestClient(web.app)
    signed_in = client.get(web.link(DANA).removeprefix("http://testserver"), follow_redirects=False)
    assert signed_in.status_code == 303
    try:
        yield web, client
    finally:
        client.close()
        web.close()


def kept_run(store: RunStore, *undo_bys: str) -> str:
    """A closed run: a genuine call, then one call per ``undo_by`` kept as verified, as a Recorder
    did before intake checked ``undoBy``."""
    run = store.open_run(agent="bot", principal=DANA).id
    links = LinkIndex()
    write_call(store, run, links, 1, signed_call(journal_object("t-1", "k1"), {"key": "k1"}))
    for number, undo_by in enumerate(undo_bys, 2):
        journal = journal_object(f"t-{number}", f"k{number}")
        journal["undo"]["undoBy"] = undo_by
        write_call(store, run, links, number, signed_call(journal, {"key": f"k{number}"}), as_verified=True)
    store.close_run(run)
    return run


def test_the_review_page_shows_each_unreadable_call_as_unreadable_and_the_rest_as_usual(
    pages: tuple[WebApprover, TestClient],
) -> None:
    web, client = pages
    run = kept_run(web.store, *ISSUE_TIMES)

    page = client.get(f"/runs/{run}")

    assert page.status_code == 200
    unreadable = re.findall(r'data-entry="(e\d+)" class="unreadable" data-code="([A-Z_]+)"', page.text)
    assert unreadable == [(f"e{n}", ReadCode.JOURNAL_UNREADABLE) for n in range(2, len(ISSUE_TIMES) + 2)]
    assert re.findall(r'<tr class="window open" data-entry="(e\d+)"', page.text) == ["e1"]


@pytest.mark.parametrize("undo_by", ["2026-11-08", "2026-11-08T10:00:00Z\n"])
def test_planning_a_run_with_unreadable_calls_plans_them_unresolved_and_checks_the_rest(
    tmp_path: Path, undo_by: str
) -> None:
    store = quick_store(tmp_path / "recorder.db")
    run = kept_run(store, undo_by)
    checked: list[str] = []

    async def check(step: Step) -> dict[str, Any]:
        checked.append(step.id)
        return signed_answer(undo_answer("check", step.token_digest or ""))

    planned = anyio.run(
        lambda: build_plan(
            store, run, UndoRequest(from_step=1), requested_by=DANA, undo_authority=LEAD, check=check, now=NOW
        )
    )

    assert checked == ["e1"]
    assert [(u.entry, u.code) for u in planned.plan.unresolved] == [("e2", ReadCode.JOURNAL_UNREADABLE)]
    assert [s.entry for s in planned.plan.steps] == ["e1"]


@pytest.mark.parametrize(
    ("member", "value"),
    [("versionFound", 5), ("changedBy", {"who": "x"}), ("changes", "everything"), ("undoBy", "2026-11-08")],
)
def test_a_signed_check_answer_that_does_not_fit_leaves_its_step_unresolved(
    tmp_path: Path, member: str, value: Any
) -> None:
    store = quick_store(tmp_path / "recorder.db")
    run = kept_run(store)

    async def check(step: Step) -> dict[str, Any]:
        answer = {**undo_answer("check", step.token_digest or ""), "status": "conflict", member: value}
        return signed_answer(answer)

    planned = anyio.run(
        lambda: build_plan(
            store, run, UndoRequest(from_step=1), requested_by=DANA, undo_authority=LEAD, check=check, now=NOW
        )
    )

    assert [(u.entry, u.code) for u in planned.plan.unresolved] == [("e1", ReadCode.CHECK_ANSWER_UNREADABLE)]
    assert planned.checks["e1"][member] == value  # kept as the server signed it


def test_show_reads_an_undo_outcome_whose_answer_does_not_fit_as_unreadable(tmp_path: Path) -> None:
    store = quick_store(tmp_path / "recorder.db")
    run = kept_run(store)
    answer = {**undo_answer("compensate", token_digest("t-1")), "versionLeft": ["v3"]}
    outcome = store.append(
        run, "undo-outcome", {"step": "e1", "server": SERVER, "answer": signed_answer(answer)}
    )

    shown = {line[0]: line for line in (entry_line(entry).split("\t") for entry in store.entries(run))}

    assert shown["e1"][1:3] == ["call", f"{SERVER}.put"]
    assert shown[outcome.id][2:4] == ["unreadable", ReadCode.BODY_UNREADABLE]


def test_tick_skips_a_run_it_cannot_read_logs_why_and_still_reminds_every_other_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = quick_store(tmp_path / "recorder.db")
    broken, fine = kept_run(store), kept_run(store)
    with sqlite3.connect(tmp_path / "recorder.db") as database:  # a row damaged outside the Recorder
        database.execute("UPDATE rec_entry SET data = ? WHERE run = ? AND seq = 1", (b"[1, 2]", broken))
    caplog.set_level(logging.WARNING, logger="hatp_journal.recorder.runs.reminders")

    appended, failed = tick(store, POLICY, DIRECTORY, MailSection(), NOW, "http://testserver")

    assert failed == []
    assert [(e.run, e.kind) for e in appended] == [(fine, "review"), (fine, "reminder")]
    assert [(r.code, r.run) for r in caplog.records] == [(RUN_UNREADABLE, broken)]  # type: ignore[attr-defined]


def test_tick_reminds_the_genuine_step_of_a_run_beside_a_signed_undo_by_with_a_trailing_newline(
    tmp_path: Path,
) -> None:
    store = quick_store(tmp_path / "recorder.db")
    run = kept_run(store, "2026-11-07T19:00:00Z\n")

    appended, failed = tick(store, POLICY, DIRECTORY, MailSection(), NOW, "http://testserver")

    assert failed == []
    assert [(e.run, e.kind) for e in appended] == [(run, "review"), (run, "reminder")]
    [reminder] = [e for e in appended if e.kind == "reminder"]
    assert reminder.body["step"] == "e1"


def test_a_signed_summary_with_line_breaks_is_mailed_in_a_one_line_subject_to_its_recipient_only(
    tmp_path: Path,
) -> None:
    store = quick_store(tmp_path / "recorder.db")
    run = store.open_run(agent="bot", principal=DANA).id
    journal = journal_object("t-1", "k1")
    journal["effect"]["summary"] = "Put k1\r\nBcc: eve@evil.example\n\x00\u2028 and more"
    write_call(store, run, LinkIndex(), 1, signed_call(journal, {"key": "k1"}))
    store.close_run(run)
    [person] = DIRECTORY.people
    directory = Directory(people=[person.model_copy(update={"email": "dana@acme.example"})])

    with MailSink(tmp_path / "mail") as sink:
        appended, failed = tick(store, POLICY, directory, MailSection(smtp_port=sink.port), NOW, "http://x")
        mailed = sink.wait_for(2)

    assert failed == []
    assert [e.kind for e in appended if e.kind in ("review", "reminder")] == ["review", "reminder"]
    assert [e.kind for e in appended].count("mail-delivered") == 2  # each delivery is in the record
    assert [m.envelope_to for m in mailed] == [("dana@acme.example",), ("dana@acme.example",)]
    assert mailed[1].subject == f"Undo window closes {OPEN_WINDOW}: Put k1 Bcc: eve@evil.example and more"
    assert "Bcc" not in mailed[1].message
