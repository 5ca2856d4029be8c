"""Hostile stored entries, and every reader of a store run over them (issue 29, "Bad input").

A corrupted or hostile Run Store holds entries that are valid JSON, hash-chained and signed, whose
bodies are anything: members missing, of the wrong type, extreme (dates, sizes, nesting). Such
entries are written here straight through :meth:`RunStore.append` (which chains and seals them as
it would any body), bypassing the Recorder's own writers. Then every reader runs over the store:
the ``hatp-recorder`` commands (``asks``, ``runs``, ``show``, ``plan``, ``tick``, ``approve``,
``deny``), the approver's pages of every run (Starlette's TestClient, exceptions raised), and a
live agent's calls through an embedded Recorder whose own run holds the same entries.

Each reader's answer is classed as an outcome; an exception that escapes a reader (or a page
answered 500, or an exception the agent's MCP server logged) is a traceback, which the property
and the bench count and which must stay 0. A control run beside the hostile ones always keeps its
pending ask listed, so one bad run or ask never stops the others.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from sqlalchemy import event
from starlette.testclient import TestClient

from hatp_journal.recorder.changes.steps import steps_of
from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.record.entry_bodies import CallBody, Unreadable, read_body, read_journal
from hatp_journal.recorder.runs.asks import Asks, call_digest
from hatp_journal.recorder.testing.org import LEAD, LEE, Printed
from hatp_journal.recorder.web import WebApprover
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url
from hatp_journal.toolkit.store import create_store_engine

DANA = "human://acme.com/dana"
FUTURE = "2099-01-01T00:00:00Z"
PAST = "2001-01-01T00:00:00Z"
DECIDED_PER_RUN = 3
"""How many of a run's asks and plans ``approve`` or ``deny`` try (each is a command of its own)."""
DEEP = 60
"""How deep a nested value goes (the canonical JSON sealer refuses absurd depths, by design)."""

# -- a genuine body of every kind the Recorder writes ------------------------------------------------

_CALL: dict[str, Any] = {
    "agent": "bot",
    "principal": DANA,
    "server": "crm",
    "tool": "update_deal",
    "arguments": {"deal": "D-1", "stage": "Won", "notify": ["buyer@globex.com"]},
    "argumentsDigest": "sha256:00",
    "declared": "compensate",
    "decision": {"action": "allow", "reversibility": {"class": "R2", "rule": "declaration-compensate"}},
    "intake": {"status": "verified", "kind": "compensate"},
    "journal": {
        "protocol": "hatp-journal/1",
        "server": "crm",
        "undo": {"kind": "compensate", "undoBy": FUTURE, "via": "api", "sideEffects": ["notify gets a note"]},
        "compensationTokenDigest": "sha256:01",
        "effect": {
            "resource": "deal/D-1",
            "summary": "stage Won",
            "version": "v2",
            "before": "v1",
            "uses": [{"resource": "contact/C-1", "version": "v1"}],
            "also": [{"resource": "deal/D-2", "version": "v5", "before": "v4"}],
            "changes": [{"field": "stage", "before": "Open", "after": "Won"}],
            "fields": {"notify": ["a@b.co"]},
        },
        "call": {"tool": "update_deal", "argumentsDigest": "sha256:00"},
        "receipt": {"kid": "k", "sig": "s"},
    },
    "outcome": {"status": "ok"},
    "links": [{"entry": "e1", "via": "arguments", "resource": "deal/D-1"}],
}
_ASK: dict[str, Any] = {
    "agent": "bot",
    "principal": DANA,
    "server": "crm",
    "tool": "export_report",
    "arguments": {"to": "ap@globex.com"},
    "declared": "none",
    "decision": {
        "action": "ask",
        "reversibility": {"class": "R4"},
        "reasons": [{"code": "IRREVERSIBLE", "detail": "cannot be undone"}],
        "totals": {"perRun": {"spent": "0.00", "cap": "500"}},
    },
    "callDigest": "sha256:02",
    "approver": LEAD,
    "decideBy": FUTURE,
}
_PLAN_ITEM = {"step": 1, "entry": "e1", "server": "crm", "tool": "update_deal", "summary": "stage Won"}
_IRREVERSIBLE_CALL: dict[str, Any] = {
    **_CALL,
    "declared": "none",
    "intake": {"status": "verified", "kind": "none"},
    "journal": {
        **_CALL["journal"],
        "undo": {"kind": "none"},
        "reason": "the mail is sent",
        "remedy": "write to the buyer",
    },
}
TEMPLATES: dict[str, dict[str, Any]] = {
    "call": _CALL,
    "call-journal": _CALL,  # a call whose journal object alone is changed (the steps read it)
    "call-none": _IRREVERSIBLE_CALL,
    "remedy": {**_CALL, "remedies": "e1"},
    "ask": _ASK,
    "decision": {
        "ask": "e2",
        "approval": {"ask": "r/e2", "callDigest": "sha256:02", "decision": "approve", "by": LEE, "at": PAST},
        "receipt": {"kid": "k", "sig": "s"},
        "directory": "sha256:03",
        "counted": True,
    },
    "plan-decision": {
        "plan": "e3",
        "approval": {"plan": "e3", "planDigest": "sha256:04", "decision": "approve", "by": LEE, "at": PAST},
        "receipt": {},
        "directory": "sha256:03",
        "counted": True,
        "overrides": [{"override": {"step": "e1"}, "receipt": {}}],
    },
    "withdrawn": {"ask": "e2", "code": "DEADLINE_EXCEEDED", "decideBy": PAST, "asked": [LEAD]},
    "refused": {
        "agent": "bot",
        "principal": DANA,
        "server": "crm",
        "tool": "export_report",
        "arguments": {},
        "code": "CALL_IN_DOUBT",
        "ask": "e2",
        "why": "unknown",
    },
    "plan": {
        "plan": {
            "format": "hatp-reversal-plan/1",
            "run": "r",
            "agent": "bot",
            "principal": DANA,
            "requestedBy": DANA,
            "request": "from 1",
            "through": "e1",
            "undoAuthority": LEAD,
            "unrecordedMemory": "the agent's own",
            "steps": [{**_PLAN_ITEM, "undo": "set stage back", "sideEffects": ["notify"], "undoBy": FUTURE}],
            "conflicts": [{**_PLAN_ITEM, "undo": "x", "versionFound": "v2"}],
            "notReversible": [{**_PLAN_ITEM, "kind": "none", "reason": "sent"}],
        },
        "planDigest": "sha256:04",
        "checks": {"e1": {"status": "ok"}},
        "approver": LEAD,
        "decideBy": FUTURE,
    },
    "undo-intent": {"plan": "e3", "step": "e1", "request": {"ifVersion": "v1"}},
    "undo-outcome": {
        "plan": "e3",
        "step": "e1",
        "intent": "e4",
        "server": "crm",
        "attempt": 1,
        "answer": {"status": "done"},
    },
    "reversal": {
        "plan": "e3",
        "counts": {"reversed": 1},
        "steps": [{"entry": "e1", "status": "reversed", "step": 1, "summary": "stage Won"}],
    },
    "undo-halted": {"plan": "e3", "code": "STEP_FAILED", "reason": "r", "before": "e1"},
    "review": {"step": "e1", "undoBy": FUTURE, "summary": "s", "mailedTo": ["lee@acme.com"]},
    "reminder": {"step": "e1", "undoBy": FUTURE, "summary": "s", "mailTo": ["lee@acme.com"]},
    "escalation": {"step": "e1", "undoBy": FUTURE, "after": "e5"},
    "lapse": {"step": "e1", "undoBy": PAST},
    "mail-delivered": {"notice": "e5", "to": ["lee@acme.com"]},
    "mail-deferred": {"notice": "e5", "error": "busy", "attempt": 1, "retryAt": FUTURE},
    "mail-failed": {"notice": "e5", "error": "refused", "code": "MAIL_REFUSED"},
    "note": {
        "agent": "bot",
        "principal": DANA,
        "server": "hatp",
        "tool": "checkpoint",
        "arguments": {"label": "x"},
        "outcome": {"status": "ok", "afterStep": 1},
    },
    "link": {"source": "confirmed", "entry": "e2", "on": "e1", "by": LEE, "receipt": {}},
    "seen": {"by": LEE, "at": PAST},
}
"""A genuine-looking body of every kind; ``plan-decision`` is written as a ``decision``, ``call-journal``
and ``call-none`` as a ``call``."""
WRITTEN_AS = {"plan-decision": "decision", "call-journal": "call", "call-none": "call"}

KINDS = sorted(TEMPLATES)


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"x": value}
    return value


EXTREMES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**53 - 1,
    -(2**53 - 1),
    1e308,
    -0.0,
    "",
    " ",
    "e1",
    "e999999999",
    "run/e1",
    "approve",
    "deny",
    "reversed",
    "compensate",
    "verified",
    "ok",
    FUTURE,
    PAST,
    "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00Z",
    "2026-11-07",
    "2026-11-07T18:00:00+02:00",
    "2026-11-07T18:00:00.5Z",
    "2026-12-31T23:59:60Z",
    "2026-11-07T18:00:00Z\n",
    "\x1b[31mred\x1b[0m\r\nforged line\u202e",
    "<script>alert(1)</script>",
    "{{ 7*7 }}",
    "x" * 20_000,
    [],
    {},
    [None],
    {"": None},
    {"decision": "approve"},
    _nested(DEEP, "deep"),
    list(range(2_000)),
    {f"k{i}": i for i in range(500)},
]
"""Values of the wrong type or at the edges: dates that are no wire time, sizes, nesting."""


def _paths(value: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> Iterator[tuple[Any, ...]]:
    """Every member and item path in ``value``, shallow ones first."""
    if depth > 4:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, inner in items:
        yield (*prefix, key)
        yield from _paths(inner, (*prefix, key), depth + 1)


def _apply(body: dict[str, Any], path: tuple[Any, ...], change: str, value: Any) -> None:
    holder: Any = body
    for part in path[:-1]:
        holder = holder[part]
    last = path[-1]
    if change == "drop" and isinstance(holder, dict):
        del holder[last]
    else:
        holder[last] = copy.deepcopy(value)


@dataclass(frozen=True)
class Hostile:
    """One stored entry: its kind and the body written, and what was done to the template."""

    kind: str
    body: dict[str, Any]
    changes: tuple[str, ...]


@st.composite
def hostile_entries(draw: st.DrawFn) -> Hostile:
    """A body of any kind with 0-4 members dropped or replaced by an extreme value (or a whole
    body of the wrong shape): 0 changes is a genuine-looking entry, to keep state moving."""
    template = draw(st.sampled_from(KINDS))
    kind = WRITTEN_AS.get(template, template)
    body = copy.deepcopy(TEMPLATES[template])
    within = ("journal",) if template == "call-journal" else ()
    if not within and draw(st.integers(0, 19)) == 0:
        return Hostile(kind, {"x": draw(st.sampled_from(EXTREMES))}, ("whole body replaced",))
    paths = _paths_within(body, within)
    changes = []
    for _ in range(draw(st.integers(len(within), 4))):
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        change = draw(st.sampled_from(["drop", "replace", "replace"]))
        value = draw(st.sampled_from(EXTREMES))
        try:
            _apply(body, path, change, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change took this path away
        changes.append(f"{change} {'.'.join(map(str, path))}")
        paths = _paths_within(body, within)
    return Hostile(kind, body, tuple(changes))


def _paths_within(body: dict[str, Any], within: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The paths of ``body`` at or under ``within`` (every path for ``()``)."""
    return [path for path in _paths(body) if path[: len(within)] == within]


# -- the store, its configuration and its readers -----------------------------------------------------


def quick_store(path: Path, key: SigningKey) -> RunStore:
    """A store in a real SQLite file that skips fsync: these runs are about reading."""
    engine = create_store_engine(path)

    @event.listens_for(engine, "connect")
    def no_fsync(connection: Any, _record: Any) -> None:
        connection.execute("PRAGMA synchronous=OFF")

    engine.dispose()
    return RunStore(engine, key, checkpoint_every=0)


def write_folder(root: Path) -> Path:
    """recorder.toml, the directory (Lee holds the team-lead role, with a key) and the policy."""
    lee = SigningKey.generate()
    lee.save(root / "lee.key")
    (root / "keys").mkdir()
    lee.save(root / "keys" / "lee.key")
    people = [
        {"id": LEE, "name": "Lee", "roles": [LEAD], "publicKey": b64url(lee.public.raw())},
        {"id": DANA, "name": "Dana", "publicKey": b64url(SigningKey.generate().public.raw())},
    ]
    (root / "directory.json").write_text(json.dumps({"people": people}))
    policy = {
        "autonomy": {
            "compensate": "allow",
            "read": "allow",
            "none": "ask",
            "unknown": "ask",
            "approver": LEAD,
        }
    }
    (root / "policy.json").write_text(json.dumps({**policy, "undoAuthority": LEAD}))
    (root / "recorder.toml").write_text(
        '[recorder]\nstore = "recorder.db"\nkey = "recorder.key"\ndirectory = "directory.json"\n'
        'policy = "policy.json"\n'
        '[servers.crm]\nurl = "http://127.0.0.1:9/nothing-listens-here"\n'
        '[web]\nsecret = "web.secret"\nbase_url = "http://testserver"\nkeys = "keys"\n'
    )
    return root / "recorder.toml"


@dataclass
class Tally:
    """Outcomes by reader, and the tracebacks (which must stay empty)."""

    entries: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    tracebacks: list[str] = field(default_factory=list)
    unnamed: list[str] = field(default_factory=list)
    seconds: Counter[str] = field(default_factory=Counter)

    def add(self, reader: str, outcome: str) -> None:
        self.outcomes[f"{reader}: {outcome}"] += 1

    @contextmanager
    def reading(self, reader: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        except Exception:  # noqa: BLE001 -- every escaped exception is what this fuzz counts
            self.outcomes[f"{reader}: TRACEBACK"] += 1
            self.tracebacks.append(f"{reader}:\n{traceback.format_exc()}")
        finally:
            self.seconds[reader] += time.perf_counter() - started


@dataclass
class Store:
    """One store in its folder: a control run with a pending ask, hostile runs added one by one."""

    root: Path
    config: Path
    store: RunStore
    control: str
    control_ask: str
    runs: list[str] = field(default_factory=list)

    @classmethod
    def make(cls, root: Path) -> Store:
        root.mkdir(parents=True)
        config = write_folder(root)
        store = quick_store(root / "recorder.db", SigningKey.load_or_create(root / "recorder.key"))
        control = store.open_run(agent="bot", principal=DANA).id
        arguments = {"to": "ap@globex.com"}
        body = {**_ASK, "arguments": arguments, "callDigest": call_digest("crm", "export_report", arguments)}
        body = {k: v for k, v in body.items() if k not in ("callDigest", "approver", "decideBy")}
        far = datetime(2098, 1, 1, tzinfo=UTC)
        ask = Asks(store).open(control, body, now=far, approver=LEAD, within=None)
        return cls(root, config, store, control, f"{control}/{ask.id}")

    def write_run(self, entries: list[Hostile]) -> str:
        run = self.store.open_run(agent="bot", principal=DANA).id
        for hostile in entries:
            self.store.append(run, hostile.kind, hostile.body)
        self.runs.append(run)
        return run


def command(tally: Tally, config: Path, *argv: str) -> str:
    """``hatp-recorder --config CONFIG ARGV``, in this process: its output, its outcome tallied."""
    printed = Printed()
    name = argv[0]
    status = -1
    with tally.reading(name):
        status = printed.run(lambda: main(["--config", str(config), *argv]))
    told = printed.readouterr()
    if status == -1:
        return told.out
    code = told.err.split(":")[1].strip() if status and told.err.startswith("hatp-recorder:") else ""
    tally.add(name, f"exit {status}{' ' + code if code else ''}")
    return told.out + told.err


def check_steps(tally: Tally, shared: Store, run: str) -> None:
    """A call whose verified journal object does not fit the wire format is never planned by what it
    says: its step keeps no journal, and is not one to compensate (nor declared irreversible); where
    the journal decides the step it is ``unresolved``, named ``JOURNAL_UNREADABLE``."""
    with tally.reading("steps"):
        for step in steps_of(shared.store.entries(run)):
            call = read_body(step.entry)
            if not isinstance(call, CallBody) or call.intake is None or call.intake.status != "verified":
                continue
            if call.host_undo is not None or not isinstance(read_journal(call.journal), Unreadable):
                continue  # the host's own undo member decides such a step, not the journal
            outcome = f"{step.kind} {step.code or ''}".strip()
            tally.add("steps of an unreadable journal", outcome)
            if step.journal is not None or step.kind in ("compensate", "none", "unknown"):
                tally.unnamed.append(f"steps {run}: {step.id} planned by an unreadable journal: {outcome}")


def unreadable_entries(store: RunStore, run: str) -> list[str]:
    """The ids of the entries of ``run`` that do not fit their kind's model."""
    return [e.id for e in store.entries(run) if isinstance(read_body(e), Unreadable)]


def read_with_commands(tally: Tally, shared: Store, run: str) -> None:
    """``show``, ``plan``, ``approve`` and ``deny`` of the run's asks and plans, in this process."""
    config = str(shared.config)
    shown = command(tally, shared.config, "show", run)
    for entry in unreadable_entries(shared.store, run):
        if not any(line.startswith(entry + " ") and "UNREADABLE" in line for line in shown.splitlines()):
            tally.unnamed.append(f"show {run}: {entry} not shown as unreadable")
    command(tally, shared.config, "show", run, "--json")
    command(tally, shared.config, "plan", run, "--from", "1", "--by", DANA)
    command(tally, shared.config, "review", run, "--as", DANA, "--now", "2026-11-07T18:00:00Z")
    command(tally, shared.config, "export", run, "--out", str(shared.root / "export.json"))
    decidable = [e for e in shared.store.entries(run) if e.kind in ("ask", "plan")]
    for entry in decidable[:DECIDED_PER_RUN]:
        verb = "approve" if entry.seq % 2 else "deny"
        command(
            tally, Path(config), verb, f"{run}/{entry.id}", "--as", LEE, "--key", str(shared.root / "lee.key")
        )
    plans = [e for e in decidable[:DECIDED_PER_RUN] if e.kind == "plan"]
    if plans:  # run (or refuse to run) the first plan once it may have been approved
        command(tally, shared.config, "undo", f"{run}/{plans[0].id}")


def read_whole_store(tally: Tally, shared: Store) -> None:
    """``asks``, ``runs`` and ``tick`` over the whole store: the control ask is always listed."""
    listed = command(tally, shared.config, "asks")
    if shared.control_ask not in listed:
        tally.unnamed.append(f"asks: the control ask {shared.control_ask} is missing:\n{listed[:2000]}")
    for run in shared.runs:
        asks = [e.id for e in shared.store.entries(run) if e.kind == "ask"]
        for entry in asks:
            ref = f"{run}/{entry}"
            if ref in unreadable_asks(shared.store, run) and ref not in listed:
                tally.unnamed.append(f"asks: the unreadable ask {ref} is not named")
    runs = command(tally, shared.config, "runs")
    if shared.control not in runs:
        tally.unnamed.append("runs: the control run is missing")
    command(tally, shared.config, "tick", "--now", "2026-11-07T18:00:00Z")


def unreadable_asks(store: RunStore, run: str) -> set[str]:
    return {ask.ref for ask in Asks(store).all(run) if ask.state == "unreadable"}


# -- the pages ----------------------------------------------------------------------------------------


@contextmanager
def signed_in_pages(config: Path) -> Iterator[tuple[WebApprover, TestClient]]:
    """The approver's pages over ``config``, Lee signed in; exceptions escape (raise_server_exceptions)."""
    web = WebApprover(load_config(config), clock=lambda: datetime(2026, 11, 7, 18, 0, tzinfo=UTC))
    client = TestClient(web.app)
    try:
        client.get(web.link(LEE))
        yield web, client
    finally:
        client.close()
        web.close()


def read_pages(tally: Tally, client: TestClient, shared: Store, run: str) -> None:
    """Every page of the run, then each form one of them shows sent back as a person would."""
    paths = ["/", "/asks", "/runs", f"/runs/{run}", f"/runs/{run}/timeline"]
    for entry in shared.store.entries(run):
        if entry.kind == "ask":
            paths.append(f"/asks/{run}/{entry.id}")
        if entry.kind == "plan":
            paths += [f"/plans/{run}/{entry.id}", f"/plans/{run}/{entry.id}/outcome"]
    forms: dict[str, dict[str, str]] = {}
    for path in paths:
        with tally.reading(_page_name("web", path)):
            answer = client.get(path)
            tally.add(_page_name("web", path), str(answer.status_code))
            if answer.status_code >= 500:
                tally.tracebacks.append(f"{path} answered {answer.status_code}")
            if path == "/asks" and shared.control_ask not in answer.text:
                tally.unnamed.append(f"/asks: the control ask {shared.control_ask} is missing")
            if path == "/asks":
                for ref in unreadable_asks(shared.store, run):
                    if ref not in answer.text:
                        tally.unnamed.append(f"/asks: the unreadable ask {ref} is not named")
            form = hidden_fields(answer.text)
            if "form" in form and path not in ("/", "/asks", "/runs"):
                forms.setdefault(_form_action(path), form)
    for action, form in list(forms.items())[:FORMS_PER_RUN]:
        send_form(tally, client, action, form)


FORMS_PER_RUN = 4
"""Forms sent back per run (a decision, an undo asked for, a resume): each is one POST."""


def _page_name(verb: str, path: str) -> str:
    page = path.split("/")[1] + ("/" + path.split("/")[-1] if path.count("/") > 3 else "")
    return f"{verb} {page if not page.startswith('runs/run_') else 'runs/RUN'}"


def hidden_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', html))


def _form_action(page: str) -> str:
    """Where the form a page shows is sent: a decision to the page itself, an undo from a run's
    pages to its ``/plan``, a resume from an outcome page."""
    if page.startswith("/runs/"):
        return "/runs/" + page.split("/")[2] + "/plan"
    if page.endswith("/outcome"):
        return page.removesuffix("/outcome") + "/resume"
    return page


def send_form(tally: Tally, client: TestClient, action: str, form: dict[str, str]) -> None:
    """POST ``form`` to ``action`` as its button would (deny a decision, undo from step 1)."""
    pressed = {"from": "1"} if action.endswith("/plan") else {"decision": "deny"}
    name = _page_name("web POST", action)
    with tally.reading(name):
        answer = client.post(action, data={**form, **pressed})
        tally.add(name, str(answer.status_code))
        if answer.status_code >= 500:
            tally.tracebacks.append(f"POST {action} answered {answer.status_code}")


# -- the agent ----------------------------------------------------------------------------------------


class LoggedTracebacks(logging.Handler):
    """Every log record with an exception attached: what a server logs when a handler raised."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info is not None:
            told = "".join(traceback.format_exception(*record.exc_info))
            self.seen.append(f"{record.name}: {record.getMessage()}\n{told}")


def agent_outcome(result: Any) -> str:
    """``pending``, ``error CODE`` (the code the error answer names), or ``ok`` (``ok, names
    BODY_UNREADABLE`` when the answer names an entry that does not fit)."""
    structured = getattr(result, "structured_content", None) or {}
    if structured.get("status") == "pending_approval":
        return "pending"
    code = structured.get("code")
    if getattr(result, "is_error", False):
        return f"error {code}" if isinstance(code, str) else "error"
    texts = [getattr(c, "text", "") for c in getattr(result, "content", []) or []]
    said = json.dumps(structured) + " ".join(texts)
    return "ok, names BODY_UNREADABLE" if "BODY_UNREADABLE" in said else "ok"


def agent_calls(seen: int) -> list[tuple[str, dict[str, Any]]]:
    """The calls an agent makes after the entries were written: the held call again (its run's asks
    are read back), a new held call, and the Recorder's own tools that read the run."""
    return [
        ("shop_publish", {"n": seen}),
        ("shop_publish", {"n": seen}),
        ("hatp_list_changes", {}),
        ("hatp_explain", {"server": "shop", "tool": "publish", "arguments": {"n": seen}}),
        ("hatp_checkpoint", {"label": f"c{seen}"}),
        ("hatp_request_undo", {"from_step": 1}),
    ]
