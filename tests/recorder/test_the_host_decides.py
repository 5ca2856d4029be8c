"""The host decides a call's class, never the server: a server that lies about itself through the
real Recorder, over stdio, under each row of docs/policy.md's precedence table, and ``explain``
(CLI and ``hatp_explain``) says what the gateway did."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from lying_server import build
from mcp.types import ToolAnnotations
from support.http_recorder import start_http_recorder
from support.ports import wait_listening

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.gateway.explain import AGENT_VISIBLE, explain, explain_listed, explanation
from hatp_journal.recorder.gateway.host_hints import host_annotations
from hatp_journal.recorder.policy import Decision, Policy, parse_policy
from hatp_journal.recorder.policy.classes import RClass
from hatp_journal.recorder.record import Entry, RunStore
from hatp_journal.recorder.testing import EMBEDDED_URL
from hatp_journal.toolkit.signing import SigningKey

pytestmark = pytest.mark.anyio

LYING = Path(__file__).parent / "lying_server.py"
DELETING = ("purge_notes", "wipe_notes", "drop_notes")
TOOLS = ("count_notes", "share_notes", *DELETING)
PEOPLE = Path(__file__).parents[2] / "docs" / "examples" / "directory-classes.json"
OLIVIA = "human://acme.com/person/olivia"  # holds the data owner's role there
THREE_NOTES = ["buy milk", "call Eve", "send the invoice"]
CLASSES = {"R0": "allow", "R1": "allow-notify", "R2": "ask-or-budget", "R3": "ask", "R4": "never-autonomous"}
CLASS_POLICY = {"autonomy": {"classes": CLASSES}}
LEAD = "human://acme.com/role/team-lead"
KIND_POLICY = {"autonomy": {"read": "allow", "compensate": "allow", "unknown": "ask", "none": "ask"}}
EVIDENCE = {"version": "1", "source": "tests/recorder/lying_server.py"}
REGISTRY = {
    "format": "hatp-registry/1",
    "server": {"id": "lying-notes", "package": "test:lying_server", "version": "1"},
    "status": "reviewed",
    "reviewedBy": "the tests",
    "tools": {
        "count_notes": {"class": "R0", "rationale": "counts notes", "evidence": EVIDENCE},
        # Wrong on purpose: the server says it discloses, and a server's word can raise a class.
        "share_notes": {"class": "R1", "rationale": "thought harmless", "evidence": EVIDENCE},
        **{
            tool: {"class": "R4", "rationale": "deletes every note", "evidence": EVIDENCE}
            for tool in DELETING
        },
    },
}


@dataclass(frozen=True)
class Setup:
    """What the host says about the lying server: recorder.toml's ``trusted``, whether the server
    is journal-aware with keys the Recorder pins (``keys``), a registry entry, and the policy."""

    trusted: bool = False
    keys: bool = False
    registry: bool = False
    policy: dict[str, Any] = field(default_factory=lambda: CLASS_POLICY)
    overrides: tuple[dict[str, Any], ...] = ()


@dataclass
class Lab:
    recorder: Recorder
    agent: Client[Any]
    store: RunStore
    config: RecorderConfig
    policy: Policy
    notes: Path

    async def call(self, tool: str) -> tuple[Entry, bool]:
        """Call ``tool`` as the agent, on three notes: its entry, and whether the notes went."""
        self.notes.write_text(json.dumps(THREE_NOTES))
        answer = await self.agent.call_tool_mcp(f"notes_{tool}", {})
        entry_id = answer.structured_content.get("ask") or answer.meta["hatp/recorder"]["entry"]
        assert self.recorder.run_id is not None
        (entry,) = [e for e in self.store.entries(self.recorder.run_id) if e.id == entry_id]
        return entry, json.loads(self.notes.read_text()) != THREE_NOTES

    async def explained(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """What ``hatp_explain`` tells the agent about a call of ``tool``."""
        asked = {"server": "notes", "tool": tool, **({"arguments": arguments} if arguments else {})}
        answer = await self.agent.call_tool_mcp("hatp_explain", asked)
        told: dict[str, Any] = answer.structured_content
        return told


@asynccontextmanager
async def lab(folder: Path, setup: Setup, *, stdio: bool = True) -> AsyncIterator[Lab]:
    """A Recorder in this process with the lying server behind it: a stdio process, or (not
    ``stdio``) embedded in this process."""
    policy_body: dict[str, Any] = dict(setup.policy)
    if setup.registry:
        (folder / "notes-registry.json").write_text(json.dumps(REGISTRY))
        policy_body["registry"] = {"files": ["notes-registry.json"], "servers": {"notes": "lying-notes"}}
    if setup.overrides:
        policy_body["classOverrides"] = list(setup.overrides)
        policy_body["classAuthority"] = "human://acme.com/role/data-owner"
    policy = parse_policy(json.dumps(policy_body), base=folder, directory=PEOPLE)
    notes = folder / "notes.json"
    args = [str(LYING), str(notes), *(["--keys"] if setup.keys else [])]
    target: dict[str, Any] = {"command": sys.executable, "args": args} if stdio else {"url": EMBEDDED_URL}
    config = RecorderConfig(
        recorder=RecorderSection(agent="bot", principal="human://acme.com/dana"),
        servers={"notes": ServerConfig(**target, trusted=setup.trusted)},
    )
    store = RunStore(folder / "recorder.db", SigningKey.generate())
    embedded = None if stdio else {"notes": build(notes, setup.keys)}
    recorder = Recorder(config, store=store, policy=policy, embedded=embedded)
    async with AsyncExitStack() as stack:
        try:
            mcp = await recorder.start(stack)
            agent = await stack.enter_async_context(Client(mcp))
            yield Lab(recorder, agent, store, config, policy, notes)
        finally:
            recorder.close()
            store.dispose()


def verdict_of(decision: dict[str, Any]) -> tuple[str, str, str, str]:
    """(action, class, rule, source) of a decision as journaled or explained."""
    found = decision["reversibility"]
    return decision["action"], found["class"], found["rule"], found["source"]


@pytest.mark.parametrize(
    ("setup", "stdio"),
    [
        (Setup(), True),
        (Setup(registry=True), True),
        (Setup(policy=KIND_POLICY), False),
        (Setup(registry=True, policy=KIND_POLICY), False),
    ],
    ids=["default", "registry-r4", "default-kind-policy", "registry-r4-kind-policy"],
)
async def test_a_keyless_server_that_lies_about_deleting_tools_is_asked_before_each_deleting_call(
    tmp_path: Path, setup: Setup, stdio: bool
) -> None:
    async with lab(tmp_path, setup, stdio=stdio) as world:
        journaled = {}
        for tool in DELETING:
            entry, deleted = await world.call(tool)
            journaled[tool] = entry.body["decision"]

            assert (entry.kind, entry.body["decision"]["action"], deleted) == ("ask", "ask", False), tool
        explained = {tool: await world.explained(tool) for tool in DELETING}
        if stdio and not setup.registry:  # hatp-recorder explain, with a session of its own to the server
            told = (await explain(world.config, world.policy, "notes", "purge_notes", {}, utc_now())).decision
            assert told.wire()["reversibility"] == journaled["purge_notes"]["reversibility"]
            assert same_reasons(told, journaled["purge_notes"])

    for tool in DELETING:
        said = (explained[tool]["action"], explained[tool]["class"])
        assert said == ("ask", journaled[tool]["reversibility"]["class"]), tool
    if setup.registry:  # the lie is kept in the evidence, with why it did not count
        evidence = journaled["purge_notes"]["reversibility"]["evidence"]
        assert (evidence["serverDeclared"], evidence["serverRule"]) == ("R0", "declaration-read")
        assert "a host registry entry outranks" in journaled["purge_notes"]["reversibility"]["rationale"]


# One setup per way the host can stand to the server; each tool is one row of the precedence table
# of docs/policy.md: (action, class, rule, source) under the class policy.
ROWS: dict[str, tuple[Setup, dict[str, tuple[str, str, str, str]]]] = {
    "untrusted: the server's word only raises, nothing classifies: R4": (
        Setup(),
        {
            "count_notes": ("ask", "R4", "unknown", "host-default"),
            "share_notes": ("ask", "R4", "declaration-none", "server-declaration"),
            "purge_notes": ("ask", "R4", "unknown", "host-default"),
            "wipe_notes": ("ask", "R4", "unknown", "host-default"),
            "drop_notes": ("ask", "R4", "unknown", "host-default"),
        },
    ),
    "a registry entry outranks the server, which can only raise it": (
        Setup(registry=True),
        {
            "count_notes": ("allow", "R0", "registry", "host-registry"),
            "share_notes": ("ask", "R4", "declaration-none", "server-declaration"),
            "purge_notes": ("ask", "R4", "registry", "host-registry"),
            "wipe_notes": ("ask", "R4", "registry", "host-registry"),
            "drop_notes": ("ask", "R4", "registry", "host-registry"),
        },
    ),
    "trusted but keyless: hints count, declarations do not": (
        Setup(trusted=True),
        {
            "count_notes": ("allow", "R0", "mcp-hint-read-only", "server-hints"),
            "share_notes": ("ask", "R4", "declaration-none", "server-declaration"),
            "purge_notes": ("ask", "R4", "unknown", "host-default"),
            "wipe_notes": ("allow", "R0", "mcp-hint-read-only", "server-hints"),
            "drop_notes": ("ask", "R4", "unknown", "host-default"),
        },
    ),
    "trusted with pinned keys: the server's declarations decide": (
        Setup(trusted=True, keys=True),
        {
            "count_notes": ("allow", "R0", "mcp-hint-read-only", "server-hints"),
            "share_notes": ("ask", "R4", "declaration-none", "server-declaration"),
            "purge_notes": ("allow", "R0", "declaration-read", "server-declaration"),
            "wipe_notes": ("allow", "R0", "mcp-hint-read-only", "server-hints"),
            "drop_notes": ("allow", "R1", "declaration-compensate", "server-declaration"),
        },
    ),
    "a class override by a person outranks everything but a disclosure; a lowering is reported": (
        Setup(
            registry=True,
            overrides=(
                {"server": "notes", "tool": "wipe_notes", "class": "R1", "by": OLIVIA, "reason": "backed up"},
                {"server": "notes", "tool": "share_notes", "class": "R1", "by": OLIVIA, "reason": "fine"},
                {"server": "notes", "tool": "count_notes", "class": "R3", "by": "ops", "reason": "audited"},
            ),
        ),
        {
            "count_notes": ("ask", "R3", "override", "host-override"),
            "share_notes": ("ask", "R4", "override-refused", "host-override"),
            "purge_notes": ("ask", "R4", "registry", "host-registry"),
            "wipe_notes": ("allow", "R1", "override", "host-override"),
            "drop_notes": ("ask", "R4", "registry", "host-registry"),
        },
    ),
    "trusted with pinned keys: a registry entry still outranks it": (
        Setup(trusted=True, keys=True, registry=True),
        {
            "count_notes": ("allow", "R0", "registry", "host-registry"),
            "share_notes": ("ask", "R4", "declaration-none", "server-declaration"),
            "purge_notes": ("ask", "R4", "registry", "host-registry"),
            "wipe_notes": ("ask", "R4", "registry", "host-registry"),
            "drop_notes": ("ask", "R4", "registry", "host-registry"),
        },
    ),
}


@pytest.mark.parametrize("row", list(ROWS))
async def test_each_row_of_the_precedence_table_decides_as_documented_and_explain_agrees(
    tmp_path: Path, row: str
) -> None:
    setup, expected = ROWS[row]
    async with lab(tmp_path, setup, stdio=False) as world:
        journaled = {}
        for tool in TOOLS:
            entry, deleted = await world.call(tool)
            journaled[tool] = entry.body["decision"]
            # An allowed deleting call really ran; an asked one did not.
            assert deleted == (tool in DELETING and journaled[tool]["action"] == "allow"), tool
        explained = {tool: await world.explained(tool) for tool in TOOLS}
        downstream = world.recorder.downstreams["notes"]
        cli = {tool: explain_listed(downstream, world.policy, tool, {}, utc_now()) for tool in TOOLS}

    assert {tool: verdict_of(decision) for tool, decision in journaled.items()} == expected
    for tool, decision in journaled.items():  # a lowered class that let a call through is reported
        lowered = decision["reversibility"]["rule"] == "override" and decision["action"] == "allow"
        reported = [r["data"].get("by") for r in decision.get("reasons", []) if r["code"] == "NOTIFY"]
        assert (OLIVIA in reported) == lowered, tool
    for tool in TOOLS:
        action, rclass, rule, source = expected[tool]
        assert (explained[tool]["action"], explained[tool]["class"]) == (action, rclass), tool
        assert verdict_of(cli[tool].decision.wire()) == expected[tool], tool
        assert same_reasons(cli[tool].decision, journaled[tool]), tool
        text = explanation(cli[tool], world.policy)
        assert f"notes/{tool}: {rclass} ({rule})" in text
        assert f"policy: {action}" in text
        assert f"  decided by: {source}" in text


def same_reasons(explained: Decision, journaled: dict[str, Any]) -> bool:
    return [r.code for r in explained.reasons] == [r["code"] for r in journaled.get("reasons", [])]


async def test_the_agent_sees_the_hosts_hints_not_the_servers_in_both_protocol_eras(tmp_path: Path) -> None:
    (tmp_path / "notes-registry.json").write_text(json.dumps(REGISTRY))
    registry = {"files": ["notes-registry.json"], "servers": {"notes": "lying-notes"}}
    (tmp_path / "policy.json").write_text(json.dumps({**CLASS_POLICY, "registry": registry}))
    args = [str(LYING), str(tmp_path / "notes.json")]
    (tmp_path / "recorder.toml").write_text(
        f"[servers.notes]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
    )
    process, port = start_http_recorder("recorder.toml", tmp_path)
    listed = {}
    try:
        wait_listening(port, process, "the Recorder")
        for era in ("auto", "legacy"):
            async with Client(f"http://127.0.0.1:{port}/mcp", mode=era) as agent:
                listed[era] = {tool.name: tool.annotations for tool in await agent.list_tools()}
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)

    for era, tools in listed.items():
        hints = {
            name.removeprefix("notes_"): (found.read_only_hint, found.destructive_hint)
            for name, found in tools.items()
            if name.startswith("notes_") and found is not None
        }
        assert hints == {
            "count_notes": (True, False),  # R0 by the registry
            "share_notes": (False, True),  # R4: the server's "none" raised the registry's R1
            "purge_notes": (False, True),
            "wipe_notes": (False, True),  # the server said readOnlyHint; the registry says R4
            "drop_notes": (False, True),
            "charge_card": (False, True),  # nothing classifies it: R4
        }, era
        assert tools["notes_count_notes"].open_world_hint is False, era  # what grants nothing is kept


@pytest.mark.parametrize(
    ("rclass", "expected"),
    [
        ("R0", (True, False)),
        ("R1", (False, False)),
        ("R2", (False, False)),
        ("R3", (False, True)),
        ("R4", (False, True)),
        (None, (False, True)),
    ],
)
def test_published_hints_follow_the_hosts_class(rclass: RClass | None, expected: tuple[bool, bool]) -> None:
    lying = ToolAnnotations(title="Notes", read_only_hint=True, destructive_hint=False, idempotent_hint=True)

    for listed in (lying, None):
        published = host_annotations(listed, rclass)
        assert (published.read_only_hint, published.destructive_hint) == expected
    assert host_annotations(lying, rclass).title == "Notes"


async def test_explain_counts_a_charges_amount_as_the_gateway_does(tmp_path: Path) -> None:
    money = {"perRun": {"amount": "100", "currency": "USD"}}
    setup = Setup(trusted=True, keys=True, policy={"autonomy": {"classes": CLASSES, "money": money}})
    card = {"amount": "40", "currency": "USD"}
    async with lab(tmp_path, setup, stdio=False) as world:
        downstream = world.recorder.downstreams["notes"]
        explained = explain_listed(downstream, world.policy, "charge_card", card, utc_now()).decision
        told = await world.explained("charge_card", card)
        answer = await world.agent.call_tool_mcp("notes_charge_card", card)
        [entry] = [
            e
            for e in world.store.entries(str(world.recorder.run_id))
            if e.id == answer.meta["hatp/recorder"]["entry"]
        ]

    journaled = entry.body["decision"]
    assert verdict_of(journaled) == (
        "allow",
        "R2",
        "declaration-compensate-side-effects",
        "server-declaration",
    )
    assert [r["code"] for r in journaled["reasons"]] == ["WITHIN_BUDGET"]
    assert explained.wire()["reversibility"] == journaled["reversibility"]
    assert same_reasons(explained, journaled)
    assert (told["action"], told["class"]) == ("allow", "R2")


async def test_the_agent_learns_only_whether_a_call_runs_its_class_and_its_undo_never_the_policy(
    tmp_path: Path,
) -> None:
    lowered = {
        "server": "notes",
        "tool": "wipe_notes",
        "class": "R1",
        "by": OLIVIA,
        "reason": "nightly backup",
    }
    policy = {
        "autonomy": {
            "classes": CLASSES,
            "approver": "human://acme.com/role/team-lead",
            "money": {"perRun": {"amount": "100", "currency": "USD"}},
        },
        "undoAuthority": "human://acme.com/role/team-lead",
    }
    async with lab(tmp_path, Setup(registry=True, policy=policy, overrides=(lowered,)), stdio=False) as world:
        answers = {
            tool: await world.agent.call_tool_mcp("hatp_explain", {"server": "notes", "tool": tool})
            for tool in ("wipe_notes", "purge_notes")
        }
        held = await world.agent.call_tool_mcp("notes_purge_notes", {})  # asks
        digest = world.policy.digest()

    for tool, answer in answers.items():
        assert set(answer.structured_content) == {*AGENT_VISIBLE, "text", "entry"}, tool
    for answer in (*answers.values(), held):
        everything = json.dumps(answer.structured_content) + json.dumps(answer.meta)
        everything += " ".join(part.text for part in answer.content)
        for secret in ("olivia", "nightly backup", "team-lead", "100", digest, "registry", "override"):
            assert secret not in everything.lower(), secret
    assert answers["wipe_notes"].structured_content["action"] == "allow"
    assert "would wait for a person's approval" in answers["purge_notes"].content[0].text
    assert "irreversible" in answers["purge_notes"].structured_content["meaning"]


async def test_human_explain_says_the_class_in_words_what_undo_exists_and_how_to_change_it(
    tmp_path: Path,
) -> None:
    async with lab(tmp_path, Setup(registry=True), stdio=False) as world:
        downstream = world.recorder.downstreams["notes"]
        purge = explanation(
            explain_listed(downstream, world.policy, "purge_notes", {}, utc_now()), world.policy
        )
        share = explanation(
            explain_listed(downstream, world.policy, "share_notes", {}, utc_now()), world.policy
        )
        count = explanation(
            explain_listed(downstream, world.policy, "count_notes", {}, utc_now()), world.policy
        )

    assert "  class: R4, irreversible: a disclosure, unrecoverable destruction" in purge
    assert "undo: none known: the Recorder cannot undo this call" in purge
    assert "to change: a person holding an approver approves this one call" in purge
    assert "a class override in the policy (lowering needs a person holding classAuthority)" in purge
    assert "undo: none: it cannot be taken back (posts the notes publicly)" in share
    assert share.endswith("a disclosure is never lowered")
    assert "undo: nothing to undo: the call changes nothing" in count
    assert "to change: a class override raising the class" in count
