"""``hatp-recorder show`` of what the Recorder refused, and ``show --json`` of hostile text.

An agent of each protocol era reads resources and gets prompts the policy refuses, asks for ones
nothing serves, calls a tool the Recorder does not publish, and calls again a call a person denied;
every name it chooses carries a line break, ANSI escapes, C1 controls, a bidi override or a line
separator. ``show`` prints each ``refused`` entry on one line with what was asked (the tool, or the
method and the prompt's name or the URI) and its code, escaped; ``show --json`` prints the same
values as valid JSON with every control and format character written as ``\\uXXXX``. A read the
policy let through names its URI too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import unicodedata
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from fastmcp import Client, FastMCP
from host_undo_org import LEE, HostOrg
from mcp.shared.exceptions import MCPError

from hatp_journal._shared.clock import utc_now
from hatp_journal._shared.text import shown, unsafe
from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.cli.show import entry_lines
from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.runs.asks import Asks

HOSTILE = "\n  e99  call  crm.delete_deal\x1b[2J\u009b31m\u2028\u2029\u202egpj.exe\u2066\x7f\u200b\ufeff"
"""A line break that would start a fake line, ANSI clear-screen, a C1 CSI, line and paragraph
separators, a bidi override and isolate, DEL, a zero-width space and a byte order mark."""
TAG = "\U000e0041"
"""A tag character (format, past U+FFFF): JSON escapes it as a surrogate pair."""
MAX_ARGUMENTS_BYTES = 16 * 1024
TOO_LONG = "notes_" + "a" * MAX_ARGUMENTS_BYTES
TODAY = "notes://today"
SECRET = "notes://secret"
NOWHERE = f"notes://nowhere/{HOSTILE}"
UNKNOWN_TOOL = f"crm_export{HOSTILE}"
UNKNOWN_PROMPT = f"notes_{HOSTILE}{TAG}"
ZOE = {"who": "Zoë 李", "note": HOSTILE, "": "notes://secret"}
"""Arguments whose ordinary non-ASCII text stays readable in JSON, and whose controls do not (an
empty key names no URI: only a read's ``uri`` or a get's ``name`` says what was asked)."""


def notes_server() -> FastMCP:
    """A server whose registry file classes one read, ``notes://today``, R0: its other reads, its
    gets and its calls are R4 for the policy."""
    server = FastMCP("notes")

    @server.resource(TODAY)
    def today() -> str:
        return "The lamp ships on Monday."

    @server.resource(SECRET)
    def secret() -> str:
        return "the safe's code"

    @server.prompt
    def greeting(name: str) -> str:
        return f"Say hello to {name}."

    @server.tool
    def forget(what: str) -> str:
        return f"forgot {what}"

    return server


def notes_registry(root: Path) -> dict[str, Any]:
    """The policy's registry: a file that classes ``notes://today`` R0."""
    said = {"rationale": "reads a note", "evidence": {"version": "1", "source": "notes.py:1"}}
    own = {
        "format": "hatp-registry/1",
        "server": {"id": "our-notes", "package": "in-memory", "version": "1"},
        "status": "reviewed",
        "tools": {},
        "resources": {TODAY: {"class": "R0", **said}},
    }
    (root / "our-notes.json").write_text(json.dumps(own))
    return {"registry": {"files": ["our-notes.json"], "servers": {"notes": "our-notes"}}}


async def sent(agent: Client[Any], request: Any, answer: type[Any]) -> Any:
    """``request`` exactly as given (fastmcp's client would escape a URI first), or the error."""
    try:
        return await agent.session.send_request(request, answer)
    except MCPError as error:
        return error


async def read(agent: Client[Any], uri: str) -> Any:
    params = mcp_types.ReadResourceRequestParams(uri=uri)
    return await sent(agent, mcp_types.ReadResourceRequest(params=params), mcp_types.ReadResourceResult)


async def get(agent: Client[Any], name: str, arguments: dict[str, str] | None = None) -> Any:
    params = mcp_types.GetPromptRequestParams(name=name, arguments=arguments)
    return await sent(agent, mcp_types.GetPromptRequest(params=params), mcp_types.GetPromptResult)


async def refused_everything(org: HostOrg, mode: str) -> dict[str, Any]:
    """The agent's asks of one session (``mode``: its protocol era); what each was answered."""
    told: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        policy = load_policy(org.root / "policy.json", directory=org.root / "directory.json")
        section = org.config.recorder.model_copy(update={"max_arguments_bytes": MAX_ARGUMENTS_BYTES})
        config = org.config.model_copy(update={"recorder": section})
        recorder = Recorder(config, store=org.store, policy=policy, embedded=org.embedded)
        mcp = await recorder.start(stack)
        agent = await stack.enter_async_context(Client(mcp, mode=mode))  # type: ignore[arg-type]
        told["today"] = await read(agent, TODAY)
        told["secret"] = await read(agent, SECRET)
        told["nowhere"] = await read(agent, NOWHERE)
        told["greeting"] = await get(agent, "notes_greeting", {"name": "Ada"})
        told["unknown prompt"] = await get(agent, UNKNOWN_PROMPT)
        told["too long"] = await get(agent, TOO_LONG)
        told["unknown tool"] = await agent.call_tool_mcp(UNKNOWN_TOOL, ZOE)
        asked = await agent.call_tool_mcp("notes_forget", {"what": HOSTILE})
        ask = asked.structured_content
        denied = Asks(org.store).decide(
            f"{ask['run']}/{ask['ask']}",
            "deny",
            person=LEE,
            key=org.keys[LEE],
            directory=Directory.load(org.root / "directory.json"),
            now=utc_now(),
        )
        assert denied.counted, denied.message
        told["denied"] = await agent.call_tool_mcp("notes_forget", {"what": HOSTILE})
        told["run"], told["ask"] = recorder.run_id, ask["ask"]
    recorder.close()
    return told


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each era's session in an organisation of its own, and a ``recorder.toml`` for its commands."""
    told: dict[str, Any] = {}
    for mode in ("auto", "legacy"):
        root = tmp_path_factory.mktemp(f"refused-{mode}")
        servers = {"notes": ServerConfig(command="in-memory")}
        org = HostOrg.make(root, servers, notes_registry(root), embedded={"notes": notes_server()})
        told[mode] = anyio.run(refused_everything, org, mode)
        told[mode]["entries"] = org.store.entries(told[mode]["run"])
        (root / "recorder.toml").write_text(
            '[recorder]\nstore = "recorder.db"\nkey = "show.key"\n[servers.notes]\ncommand = "in-memory"\n'
        )
        told[mode]["config"] = root / "recorder.toml"
    return told


ERAS = pytest.mark.parametrize("mode", ["auto", "legacy"])


def refused(seen: dict[str, Any]) -> dict[str, Entry]:
    """The run's ``refused`` entries, by the entry each answer names."""
    return {e.id: e for e in seen["entries"] if e.kind == "refused"}


def answered_entry(answer: Any) -> str:
    """The ``refused`` entry an answer names (an MCP error's ``data``, or a refused call's result)."""
    if isinstance(answer, MCPError):
        return str(answer.data["entry"])
    return str(answer.structured_content["entry"])


def show(seen: dict[str, Any], capsys: pytest.CaptureFixture[str], *more: str) -> str:
    capsys.readouterr()
    assert main(["--config", str(seen["config"]), "show", seen["run"], *more]) == 0
    return capsys.readouterr().out


def line_of(printed: str, entry: str) -> str:
    [line] = [line for line in printed.splitlines() if line.startswith(f"{entry} ")]
    return line


EXPECTED = {
    "secret": (f"notes.resources/read {SECRET}", "RESOURCE_NOT_ALLOWED R4", "R4 calls are never autonomous"),
    "nowhere": (f"resources/read {NOWHERE}", "UNKNOWN_RESOURCE", ""),
    "greeting": ("notes.prompts/get greeting", "PROMPT_NOT_ALLOWED R4", "R4 calls are never autonomous"),
    "unknown prompt": (f"prompts/get {UNKNOWN_PROMPT}", "UNKNOWN_PROMPT", ""),
    "too long": ("prompts/get", "UNKNOWN_PROMPT", "more than max_arguments_bytes"),
    "unknown tool": (UNKNOWN_TOOL, "UNKNOWN_TOOL", ""),
    "denied": ("notes.forget", "ASK_DENIED", "ask "),
}
"""What ``show`` says of each refusal: what was asked, its code (and class), and why (a prefix)."""


@ERAS
def test_show_prints_each_refused_entry_with_what_was_asked_and_its_code_escaped_on_one_line(
    world: dict[str, Any], mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = world[mode]
    printed = show(seen, capsys)
    lines = printed.splitlines()

    assert len(lines) == len(seen["entries"])
    assert [line for line in lines if any(map(unsafe, line))] == []  # no control, separator or bidi
    assert len(refused(seen)) == len(EXPECTED)
    for name, (what, code, why) in EXPECTED.items():
        entry = answered_entry(seen[name])
        assert refused(seen)[entry].body["code"] == code.split()[0], name
        columns = rf"{entry} +refused +{re.escape(shown(what))} +{re.escape(code)}( +.*)?"
        said = re.fullmatch(columns, line_of(printed, entry))
        assert said is not None, (name, line_of(printed, entry))
        assert why in (said.group(1) or "") if why else said.group(1) is None, name
    denied = line_of(printed, answered_entry(seen["denied"]))
    assert denied.endswith(f"  ask {seen['ask']}")


def test_a_name_that_would_forge_a_line_is_shown_escaped_never_as_a_line_of_its_own(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    seen = world["auto"]
    printed = show(seen, capsys)

    assert not [line for line in printed.splitlines() if line.lstrip().startswith("e99")]
    assert (
        "\\n  e99  call  crm.delete_deal\\x1b[2J\\x9b31m\\u2028\\u2029\\u202egpj.exe\\u2066\\x7f" in printed
    )
    assert not {"\x1b", "\u202e"} & set(printed)


def hidden(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on or not show: controls (but the line
    breaks between lines), format characters, separators, lone surrogates."""
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")]


@pytest.fixture(scope="module")
def printed_json(world: dict[str, Any]) -> bytes:
    """``hatp-recorder show RUN --json`` of the auto era's run, as the bytes its process wrote."""
    seen = world["auto"]
    command = [sys.executable, "-m", "hatp_journal.recorder.cli", "--config", str(seen["config"])]
    done = subprocess.run(
        [*command, "show", seen["run"], "--json"], capture_output=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_show_json_writes_every_control_and_format_character_as_an_escape_and_reads_back_the_same(
    world: dict[str, Any], printed_json: bytes
) -> None:
    text = printed_json.decode("utf-8")

    assert hidden(text) == []
    assert json.loads(text) == [entry.wire() for entry in world["auto"]["entries"]]
    assert '"who": "Zoë 李"' in text  # ordinary non-ASCII stays as it is
    assert all(escape in text for escape in ("\\u202e", "\\u2028", "\\u009b", "\\u007f"))
    assert "\\udb40\\udc41" in text  # the tag character, as a surrogate pair


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_jq_reads_show_json_as_the_same_values(world: dict[str, Any], printed_json: bytes) -> None:
    jq = shutil.which("jq")
    assert jq is not None
    done = subprocess.run([jq, "-c", "."], input=printed_json, capture_output=True, check=True, timeout=60)

    assert json.loads(done.stdout) == [entry.wire() for entry in world["auto"]["entries"]]


def test_show_names_the_uri_of_a_read_the_policy_let_through(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    seen = world["auto"]
    [call] = [e for e in seen["entries"] if e.kind == "call"]
    printed = show(seen, capsys)

    assert seen["today"].contents[0].text == "The lamp ships on Monday."
    assert re.fullmatch(
        rf"{call.id} +call +notes\.resources/read {TODAY} +allow R0", line_of(printed, call.id)
    )


def stored(number: int, body: dict[str, Any]) -> Entry:
    """A ``refused`` entry as a store hands it back (no gateway can be made to crash mid-call here)."""
    return Entry(
        id=f"e{number}",
        run="r",
        seq=number,
        time="2026-12-04T12:00:00Z",
        kind="refused",
        body=body,
        prev_hash="",
        hash="",
    )


def test_an_approved_call_in_doubt_says_why_and_a_refused_body_that_does_not_fit_reads_unreadable() -> None:
    why = "the Recorder that was making this approved call sent it to crm at 12:00Z and stopped\n"
    in_doubt = {"server": "crm", "tool": "charge", "arguments": {}, "code": "CALL_IN_DOUBT", "why": why}
    lines = entry_lines(
        [stored(3, {**in_doubt, "ask": "e2"}), stored(4, {"tool": 7, "code": "UNKNOWN_TOOL"})]
    )

    assert re.split(" {2,}", lines[0]) == [
        "e3",
        "refused",
        "crm.charge",
        "CALL_IN_DOUBT",
        f"{shown(why)}; ask e2",
    ]
    assert re.split(" {2,}", lines[1])[2:4] == ["unreadable", "BODY_UNREADABLE"]
    assert re.split(" {2,}", lines[1])[4].startswith("tool")  # the member that does not fit
