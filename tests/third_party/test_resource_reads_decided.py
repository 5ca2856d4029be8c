"""A resource read is decided like a call: the class the server's registry file gives the URI (an exact
URI, or a template of {NAME} segments), else R4 (unknown). Under the class policy an R0 read goes
through and is journaled with its class; anything else is refused with ``RESOURCE_NOT_ALLOWED`` and a
``refused`` entry before the server is asked. The attacks: a server template that matches too much,
``..`` and escapes in URIs, control characters, a URI nobody lists, a server no registry classifies,
and a server that answers a read with garbage. Agents of both protocol eras see the same.

A get of a prompt no server offers is refused the same way, with ``UNKNOWN_PROMPT`` and a ``refused``
entry: a name the Recorder never published (the server's own name, not renamed; a line break or
terminal controls in it; one too long to keep), while a prompt an unclassified server offers is
decided like any prompt (R4, refused)."""

from __future__ import annotations

import json
import logging
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from fastmcp import Client, FastMCP
from host_undo_org import HostOrg
from mcp.shared.exceptions import MCPError

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.cli.show import entry_lines
from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.gateway.explain import (
    ExplainError,
    decide_listed,
    explain_listed,
    explanation,
    for_agent,
)
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.web.views import timeline

GARBAGE_SERVER = Path(__file__).parents[1] / "support" / "garbage_resources_server.py"
LETS_UNKNOWN_THROUGH = {"unknown": "allow", "read": "allow", "none": "allow", "compensate": "allow"}
CONTROL = "notes://files/a\x07b"


def notes_server(reads: list[str]) -> FastMCP:
    """A server whose every read is noted in ``reads``: today's note, a secret the registry does not
    name, and a files template that takes any path, slashes and all (it matches too much)."""
    server = FastMCP("notes")

    @server.resource("notes://today")
    def today() -> str:
        reads.append("notes://today")
        return "The lamp ships on Monday."

    @server.resource("notes://secret")
    def secret() -> str:
        reads.append("notes://secret")
        return "the safe's code"

    @server.resource("notes://files/{path*}")
    def files(path: str) -> str:
        reads.append(f"notes://files/{path}")
        return f"the file {path}"

    @server.prompt
    def greeting(name: str) -> str:
        return f"Say hello to {name}."

    return server


def plain_server(reads: list[str]) -> FastMCP:
    """A server no registry file classifies."""
    server = FastMCP("plain")

    @server.resource("plain://hello")
    def hello() -> str:
        reads.append("plain://hello")
        return "hello"

    @server.prompt
    def welcome(name: str) -> str:
        reads.append(f"welcome {name}")
        return f"Welcome {name}."

    return server


def notes_registry(root: Path) -> dict[str, Any]:
    said = {"rationale": "reads a note", "evidence": {"version": "1", "source": "notes.py:1"}}
    own = {
        "format": "hatp-registry/1",
        "server": {"id": "our-notes", "package": "in-memory", "version": "1"},
        "status": "reviewed",
        "tools": {},
        "resources": {
            "notes://today": {"class": "R0", **said},
            "notes://files/{name}": {"class": "R0", **said},
        },
    }
    (root / "our-notes.json").write_text(json.dumps(own, indent=2))
    return {"registry": {"files": ["our-notes.json"], "servers": {"notes": "our-notes"}}}


READS = {
    "today": "notes://today",
    "secret": "notes://secret",
    "one file": "notes://files/a.md",
    "two segments": "notes://files/a/b",
    "escaped dots": "notes://files/%2e%2e",
    "escaped slash": "notes://files/a%2Fb",
    "dot dot": "notes://files/..",
    "control": CONTROL,
    "unlisted": "notes://nowhere",
    "plain": "plain://hello",
}


LINE_BREAK = "notes_x\ne9\trefused\tforged"
"""A prompt name that, printed as it is, would add a line of its own."""
CONTROLS = "notes_\x1b[2J\u009b31m\u2028\u202egpj.exe"
"""ANSI clear-screen, a C1 CSI, a line separator and a bidi override."""
MAX_ARGUMENTS_BYTES = 64 * 1024
TOO_LONG = "notes_" + "a" * MAX_ARGUMENTS_BYTES
PROMPTS = {
    "offered": ("notes_greeting", {"name": "Ada"}),
    "unclassified": ("plain_welcome", {"name": "Ada"}),
    "unknown prompt": ("notes_farewell", {"name": "Ada"}),
    "not renamed": ("greeting", {"name": "Ada"}),
    "line break": (LINE_BREAK, None),
    "controls": (CONTROLS, {"topic": "x\ny"}),
    "too long": (TOO_LONG, None),
}


async def get_as_sent(agent: Client[Any], name: str, arguments: dict[str, str] | None) -> Any:
    """Get the prompt ``name`` exactly as given."""
    params = mcp_types.GetPromptRequestParams(name=name, arguments=arguments)
    return await agent.session.send_request(
        mcp_types.GetPromptRequest(params=params), mcp_types.GetPromptResult
    )


async def read_as_sent(agent: Client[Any], uri: str) -> list[Any]:
    """Read ``uri`` exactly as given: fastmcp's client would first normalise it (``..`` removed,
    control characters escaped), a hand-written client need not."""
    params = mcp_types.ReadResourceRequestParams(uri=uri)
    result = await agent.session.send_request(
        mcp_types.ReadResourceRequest(params=params), mcp_types.ReadResourceResult
    )
    return list(result.contents)


async def read_all(org: HostOrg, mode: str) -> dict[str, Any]:
    """Read each of :data:`READS` through the Recorder as an agent of ``mode``'s protocol era."""
    seen: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        policy = load_policy(org.root / "policy.json", directory=org.root / "directory.json")
        section = org.config.recorder.model_copy(update={"max_arguments_bytes": MAX_ARGUMENTS_BYTES})
        config = org.config.model_copy(update={"recorder": section})
        recorder = Recorder(config, store=org.store, policy=policy, embedded=org.embedded)
        mcp = await recorder.start(stack)
        agent = await stack.enter_async_context(Client(mcp, mode=mode))  # type: ignore[arg-type]
        seen["capabilities"] = agent.initialize_result.capabilities if mode == "legacy" else None
        for name, uri in READS.items():
            try:
                seen[name] = await read_as_sent(agent, uri)
            except MCPError as error:
                seen[name] = error
        for name, (prompt, arguments) in PROMPTS.items():
            try:
                seen[name] = await get_as_sent(agent, prompt, arguments)
            except MCPError as error:
                seen[name] = error
        seen["run"] = recorder.run_id
        seen["recorder"] = recorder
    seen["entries"] = org.store.entries(seen["run"])
    return seen


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    told: dict[str, Any] = {}
    for mode in ("auto", "legacy"):
        root = tmp_path_factory.mktemp(f"notes-{mode}")
        reads: list[str] = []
        embedded = {"notes": notes_server(reads), "plain": plain_server(reads)}
        servers = {name: ServerConfig(command="in-memory") for name in embedded}
        org = HostOrg.make(root, servers, notes_registry(root), embedded=embedded)
        told[mode] = anyio.run(read_all, org, mode)
        told[mode]["reads"], told[mode]["org"] = reads, org
    return told


ERAS = pytest.mark.parametrize("mode", ["auto", "legacy"])


def entry_for(seen: dict[str, Any], uri: str) -> Entry:
    [entry] = [e for e in seen["entries"] if e.body.get("arguments") == {"uri": uri}]
    return entry


@ERAS
def test_a_read_the_registry_names_r0_is_let_through_and_journaled_with_its_class(
    world: dict[str, Any], mode: str
) -> None:
    seen = world[mode]
    call = entry_for(seen, "notes://today")
    reversibility = call.body["decision"]["reversibility"]

    assert seen["today"][0].text == "The lamp ships on Monday."
    assert (call.kind, call.body["tool"], call.body["outcome"]["status"]) == ("call", "resources/read", "ok")
    assert (reversibility["class"], reversibility["rule"], reversibility["source"]) == (
        "R0",
        "registry",
        "host-registry",
    )
    assert reversibility["evidence"]["resource"] == "notes://today"
    assert seen["one file"][0].text == "the file a.md"
    assert entry_for(seen, "notes://files/a.md").body["decision"]["reversibility"]["evidence"][
        "resource"
    ] == ("notes://files/{name}")


@ERAS
def test_a_listed_resource_the_registry_does_not_name_is_refused_before_the_server_reads_it(
    world: dict[str, Any], mode: str
) -> None:
    seen = world[mode]
    error = seen["secret"]
    refused = entry_for(seen, "notes://secret")
    reversibility = refused.body["decision"]["reversibility"]

    assert isinstance(error, MCPError)
    assert (error.data["code"], error.data["entry"]) == ("RESOURCE_NOT_ALLOWED", refused.id)
    assert "nothing was sent" in error.message
    assert (refused.kind, refused.body["tool"], refused.body["code"]) == (
        "refused",
        "resources/read",
        "RESOURCE_NOT_ALLOWED",
    )
    assert (reversibility["class"], reversibility["rule"], reversibility["evidence"]["registry"]) == (
        "R4",
        "unknown",
        "our-notes",
    )
    assert "notes://secret" not in seen["reads"]


@ERAS
def test_a_server_template_that_matches_more_than_the_registry_names_gives_nothing_more(
    world: dict[str, Any], mode: str
) -> None:
    seen = world[mode]
    refused = entry_for(seen, READS["two segments"])

    assert seen["two segments"].data["code"] == "RESOURCE_NOT_ALLOWED"
    assert refused.body["decision"]["reversibility"]["class"] == "R4"
    assert seen["reads"] == ["notes://today", "notes://files/a.md"]


@ERAS
def test_dot_segments_escapes_and_control_characters_never_reach_the_server(
    world: dict[str, Any], mode: str
) -> None:
    seen = world[mode]
    for name in ("escaped dots", "escaped slash", "dot dot", "control"):
        refused = entry_for(seen, READS[name])
        # fastmcp's own screening of templated reads turns some away first: then nothing serves them.
        assert refused.kind == "refused", name
        assert refused.body["code"] in ("RESOURCE_NOT_ALLOWED", "UNKNOWN_RESOURCE"), name
        assert seen[name].data["code"] == refused.body["code"], name
    control = entry_for(seen, CONTROL).body["decision"]["reversibility"]
    assert control["class"] == "R4"
    assert "U+0007" in control["rationale"]
    assert seen["reads"] == ["notes://today", "notes://files/a.md"]


@ERAS
def test_a_read_of_a_uri_nobody_lists_is_journaled_as_refused_unknown_resource(
    world: dict[str, Any], mode: str
) -> None:
    seen = world[mode]
    error = seen["unlisted"]
    refused = entry_for(seen, "notes://nowhere")

    assert isinstance(error, MCPError)
    assert (error.data["code"], error.data["entry"], error.data["uri"]) == (
        "UNKNOWN_RESOURCE",
        refused.id,
        "notes://nowhere",
    )
    assert (refused.kind, refused.body["code"]) == ("refused", "UNKNOWN_RESOURCE")


@ERAS
def test_a_read_of_a_server_no_registry_classifies_is_r4_and_refused(
    world: dict[str, Any], mode: str
) -> None:
    seen = world[mode]
    refused = entry_for(seen, "plain://hello")
    reversibility = refused.body["decision"]["reversibility"]

    assert seen["plain"].data["code"] == "RESOURCE_NOT_ALLOWED"
    assert (reversibility["class"], reversibility["rule"], reversibility["source"]) == (
        "R4",
        "unknown",
        "host-default",
    )
    assert "no registry file classifies the server plain" in reversibility["rationale"]
    assert "plain://hello" not in seen["reads"]


def test_subscriptions_are_not_offered_to_the_agent(world: dict[str, Any]) -> None:
    resources = world["legacy"]["capabilities"].resources

    assert resources is not None
    assert not resources.subscribe


@ERAS
def test_explain_prints_the_decision_the_gateway_journaled_for_every_read(
    world: dict[str, Any], mode: str
) -> None:
    seen = world[mode]
    org: HostOrg = seen["org"]
    policy = load_policy(org.root / "policy.json", directory=org.root / "directory.json")
    recorder = seen["recorder"]
    for name, uri in READS.items():
        matching = [e for e in seen["entries"] if e.body.get("arguments") == {"uri": uri}]
        if not matching or matching[0].body.get("code") == "UNKNOWN_RESOURCE":
            continue  # the client did not send it, or nothing serves it: no decision to compare
        server = "plain" if uri.startswith("plain:") else "notes"
        journaled = matching[0].body["decision"]
        explained = decide_listed(
            recorder.downstreams[server], policy, "resources/read", {"uri": uri}, utc_now()
        )
        assert explained.wire()["action"] == journaled["action"], name
        assert explained.wire()["reversibility"] == journaled["reversibility"], name


def test_explain_says_a_refused_read_is_refused_and_who_can_change_it(world: dict[str, Any]) -> None:
    seen = world["auto"]
    org: HostOrg = seen["org"]
    policy = load_policy(org.root / "policy.json", directory=org.root / "directory.json")
    downstream = seen["recorder"].downstreams["notes"]
    told = explanation(
        explain_listed(downstream, policy, "resources/read", {"uri": "notes://secret"}, utc_now()), policy
    )

    assert "notes/resources/read: R4 (unknown)" in told
    assert "refused: RESOURCE_NOT_ALLOWED" in told
    assert "resources entry in the server's registry file" in told
    with pytest.raises(ExplainError) as bad:
        explain_listed(downstream, policy, "resources/read", {"url": "notes://today"}, utc_now())
    assert bad.value.code == "BAD_ARGUMENTS"


def test_a_policy_that_lets_unknown_through_reads_an_unclassified_server_journaled_with_its_class(
    tmp_path: Path,
) -> None:
    reads: list[str] = []
    embedded = {"plain": plain_server(reads)}
    org = HostOrg.make(
        tmp_path,
        {"plain": ServerConfig(command="in-memory")},
        {"autonomy": LETS_UNKNOWN_THROUGH},
        embedded=embedded,
    )

    async def story() -> tuple[Any, str | None]:
        async with AsyncExitStack() as stack:
            recorder, agent = await org.session(stack)
            return await agent.read_resource("plain://hello"), recorder.run_id

    answer, run = anyio.run(story)
    [call] = [e for e in org.store.entries(run) if e.kind == "call"]

    assert answer[0].text == "hello"
    assert reads == ["plain://hello"]
    assert (call.body["decision"]["action"], call.body["decision"]["reversibility"]["rule"]) == (
        "allow",
        "unknown",
    )
    assert call.body["intake"] == {"status": "absent", "kind": "unknown"}


def test_a_server_answering_a_read_with_garbage_gives_the_agent_an_error_journaled_as_failed(
    tmp_path: Path,
) -> None:
    servers = {"junk": ServerConfig(command=sys.executable, args=[str(GARBAGE_SERVER)])}
    org = HostOrg.make(tmp_path, servers, {"autonomy": LETS_UNKNOWN_THROUGH})

    async def story() -> tuple[dict[str, Any], str | None]:
        answers: dict[str, Any] = {}
        async with AsyncExitStack() as stack:
            recorder, agent = await org.session(stack)
            for uri in ("junk://contents", "junk://mixed"):
                try:
                    answers[uri] = await agent.read_resource(uri)
                except MCPError as error:
                    answers[uri] = error
            answers["still answers"] = await agent.list_resources()
            return answers, recorder.run_id

    answers, run = anyio.run(story)
    calls = {e.body["arguments"]["uri"]: e.body for e in org.store.entries(run) if e.kind == "call"}

    assert isinstance(answers["junk://contents"], MCPError)
    assert isinstance(answers["junk://mixed"], MCPError)
    assert {str(r.uri) for r in answers["still answers"]} == {"junk://contents", "junk://mixed"}
    for uri in ("junk://contents", "junk://mixed"):
        assert calls[uri]["outcome"]["status"] == "error", uri
        assert "validation error" in calls[uri]["outcome"]["error"], uri
        assert "ReadResourceResult" in calls[uri]["outcome"]["error"], uri


def test_the_agents_explain_tool_says_a_refused_read_would_be_refused(world: dict[str, Any]) -> None:
    seen = world["auto"]
    org: HostOrg = seen["org"]
    policy = load_policy(org.root / "policy.json", directory=org.root / "directory.json")
    downstream = seen["recorder"].downstreams["notes"]

    def told(uri: str) -> dict[str, Any]:
        return for_agent(explain_listed(downstream, policy, "resources/read", {"uri": uri}, utc_now()))

    refused, allowed = told("notes://secret"), told("notes://today")

    assert "would be refused" in refused["text"]
    assert (refused["action"], refused["class"]) == ("ask", "R4")
    assert "would run now" in allowed["text"]


def test_a_refusal_is_journaled_not_logged_as_a_failure_with_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reads: list[str] = []
    embedded = {"plain": plain_server(reads)}
    org = HostOrg.make(tmp_path, {"plain": ServerConfig(command="in-memory")}, {}, embedded=embedded)

    async def story() -> MCPError:
        async with AsyncExitStack() as stack:
            _, agent = await org.session(stack)
            with pytest.raises(MCPError) as refused:
                await agent.read_resource("plain://hello")
            return refused.value

    with caplog.at_level(logging.ERROR, logger="fastmcp"):
        refused = anyio.run(story)

    assert refused.data["code"] == "RESOURCE_NOT_ALLOWED"
    assert [record.getMessage() for record in caplog.records if record.exc_info] == []


def prompt_entry(seen: dict[str, Any], name: str, code: str = "UNKNOWN_PROMPT") -> Entry:
    """The get of ``name`` refused with ``code`` (a prompt is journaled by its server's own name)."""
    [entry] = [
        e
        for e in seen["entries"]
        if e.body.get("tool") == "prompts/get"
        and e.body.get("code") == code
        and (e.body.get("arguments") or {}).get("name") == name
    ]
    return entry


@ERAS
@pytest.mark.parametrize("asked", ["unknown prompt", "not renamed"])
def test_a_get_of_a_prompt_no_server_offers_is_journaled_as_refused_unknown_prompt(
    world: dict[str, Any], mode: str, asked: str
) -> None:
    seen = world[mode]
    name, arguments = PROMPTS[asked]
    error = seen[asked]
    refused = prompt_entry(seen, name)

    assert isinstance(error, MCPError)
    assert error.error.code == mcp_types.INVALID_PARAMS
    assert error.data == {"code": "UNKNOWN_PROMPT", "entry": refused.id, "name": name}
    assert error.message.startswith(
        f"UNKNOWN_PROMPT: no server of the Recorder offers a prompt named {name!r}"
    )
    assert (refused.kind, refused.body["tool"], refused.body["code"]) == (
        "refused",
        "prompts/get",
        "UNKNOWN_PROMPT",
    )
    assert "server" not in refused.body
    assert refused.body["arguments"] == {"name": name, "arguments": arguments}
    assert refused.body["argumentsDigest"].startswith("sha256:")


@ERAS
@pytest.mark.parametrize("asked", ["line break", "controls"])
def test_a_prompt_name_with_a_line_break_or_terminal_controls_is_kept_as_sent_and_quoted_escaped(
    world: dict[str, Any], mode: str, asked: str
) -> None:
    seen = world[mode]
    name, _ = PROMPTS[asked]
    error = seen[asked]
    refused = prompt_entry(seen, name)

    assert (error.data["code"], error.data["entry"], error.data["name"]) == (
        "UNKNOWN_PROMPT",
        refused.id,
        name,
    )
    assert refused.body["code"] == "UNKNOWN_PROMPT"
    assert error.message.isprintable()  # one line: no line break, ANSI escape or bidi override
    assert repr(name) in error.message


@ERAS
def test_a_prompt_name_too_long_to_keep_is_refused_with_its_size_and_digest_not_its_name(
    world: dict[str, Any], mode: str
) -> None:
    seen = world[mode]
    error = seen["too long"]
    [refused] = [e for e in seen["entries"] if e.id == error.data["entry"]]
    kept = refused.body["argumentsRefused"]

    assert error.data == {"code": "UNKNOWN_PROMPT", "entry": refused.id}
    assert f"… ({len(TOO_LONG)} characters)" in error.message
    assert len(error.message) < 500
    assert (refused.body["tool"], refused.body["code"]) == ("prompts/get", "UNKNOWN_PROMPT")
    assert "arguments" not in refused.body
    assert kept["bytes"] > MAX_ARGUMENTS_BYTES
    assert "more than max_arguments_bytes" in kept["reason"]


@ERAS
def test_a_prompt_an_unclassified_server_offers_is_decided_r4_and_refused_not_unknown(
    world: dict[str, Any], mode: str
) -> None:
    seen = world[mode]
    refused = prompt_entry(seen, "welcome", "PROMPT_NOT_ALLOWED")
    reversibility = refused.body["decision"]["reversibility"]

    assert seen["unclassified"].data["code"] == "PROMPT_NOT_ALLOWED"
    assert (refused.body["code"], refused.body["server"]) == ("PROMPT_NOT_ALLOWED", "plain")
    assert (reversibility["class"], reversibility["source"]) == ("R4", "host-default")
    assert not [read for read in seen["reads"] if read.startswith("welcome")]


def test_refused_prompt_names_forge_no_line_in_show_explain_or_the_run_timeline(
    world: dict[str, Any],
) -> None:
    seen = world["auto"]
    org: HostOrg = seen["org"]
    policy = load_policy(org.root / "policy.json", directory=org.root / "directory.json")
    downstream = seen["recorder"].downstreams["notes"]
    refused = {e.id for e in seen["entries"] if e.body.get("code") == "UNKNOWN_PROMPT"}
    shown = entry_lines(seen["entries"])

    def explained(name: str) -> list[str]:
        told = explain_listed(downstream, policy, "prompts/get", {"name": name}, utc_now())
        return explanation(told, policy).splitlines()

    assert len(refused) == 5
    assert len(shown) == len(seen["entries"])
    assert all(line.isprintable() for line in shown)
    assert [line.split()[:2] for line in shown if line.split()[0] in refused] == [
        [e, "refused"] for e in sorted(refused, key=lambda e: int(e[1:]))
    ]
    assert len(explained(LINE_BREAK)) == len(explained(CONTROLS)) == len(explained("notes_farewell"))
    assert all(line.isprintable() for line in explained(LINE_BREAK) + explained(CONTROLS))
    assert not refused & {line.entry for line in timeline(seen["entries"], utc_now())}


def test_an_unknown_prompt_or_uri_is_journaled_not_logged_as_a_failure_with_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reads: list[str] = []
    embedded = {"plain": plain_server(reads)}
    org = HostOrg.make(tmp_path, {"plain": ServerConfig(command="in-memory")}, {}, embedded=embedded)

    async def story() -> list[str]:
        async with AsyncExitStack() as stack:
            _, agent = await org.session(stack)
            with pytest.raises(MCPError) as prompt:
                await agent.get_prompt("plain_farewell")
            with pytest.raises(MCPError) as read:
                await agent.read_resource("plain://nowhere")
            return [prompt.value.data["code"], read.value.data["code"]]

    with caplog.at_level(logging.ERROR, logger="fastmcp"):
        codes = anyio.run(story)

    assert codes == ["UNKNOWN_PROMPT", "UNKNOWN_RESOURCE"]
    assert [record.getMessage() for record in caplog.records if record.exc_info] == []


def test_a_listed_prompt_its_server_no_longer_offers_is_journaled_as_its_failed_get_not_as_unknown(
    tmp_path: Path,
) -> None:
    reads: list[str] = []
    plain = plain_server(reads)
    org = HostOrg.make(
        tmp_path,
        {"plain": ServerConfig(command="in-memory")},
        {"autonomy": LETS_UNKNOWN_THROUGH},
        embedded={"plain": plain},
    )

    async def story() -> tuple[MCPError, str | None]:
        async with AsyncExitStack() as stack:
            recorder, agent = await org.session(stack)
            plain.disable(names={"welcome"}, components={"prompt"})  # listed to the Recorder, gone now
            with pytest.raises(MCPError) as failed:
                await agent.get_prompt("plain_welcome", {"name": "Ada"})
            return failed.value, recorder.run_id

    error, run = anyio.run(story)
    [entry] = [e for e in org.store.entries(run) if e.body.get("tool") == "prompts/get"]

    assert (entry.kind, entry.body["server"], entry.body["outcome"]["status"]) == ("call", "plain", "error")
    assert (error.data or {}).get("code") != "UNKNOWN_PROMPT"
    assert reads == []
