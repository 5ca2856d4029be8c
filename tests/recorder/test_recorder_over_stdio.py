"""An agent drives the Recorder over stdio, with the demo servers and a plain server behind it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from support.waiting import poll

from hatp_journal.recorder.cli.command_line import main as recorder_cli
from hatp_journal.recorder.intake.tokens import TokenStore
from hatp_journal.recorder.record import RunStore
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url

pytestmark = pytest.mark.anyio

LEAD = "human://acme.com/role/team-lead"
PLAIN = Path(__file__).parent / "plain_server.py"
POLICY = {
    "autonomy": {"compensate": "allow", "read": "allow", "unknown": "ask", "none": "ask", "approver": LEAD},
    "undoAuthority": LEAD,
}


def server(module: str, db: Path, *options: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", module, "serve", "--db", str(db), *options]}


def write_config(folder: Path, smtp_port: int) -> Path:
    lee = SigningKey.generate()
    lee.save(folder / "lee.key")
    people = [{"id": "lee", "roles": [LEAD], "publicKey": b64url(lee.public.raw())}]
    (folder / "directory.json").write_text(json.dumps({"people": people}))
    (folder / "policy.json").write_text(json.dumps(POLICY))
    smtp = ["--smtp-host", "127.0.0.1", "--smtp-port", str(smtp_port)]
    servers = {
        "crm": server("hatp_journal.servers.crm.cli", folder / "crm.db"),
        "calendar": server("hatp_journal.servers.calendar", folder / "cal.db", *smtp),
        "email": server("hatp_journal.servers.email.cli", folder / "email.db", *smtp),
        "plain": {"command": sys.executable, "args": [str(PLAIN)]},
    }
    lines = [
        "[recorder]",
        'agent = "sales-bot"',
        'principal = "human://acme.com/dana"',
        'directory = "directory.json"',
    ]
    for name, target in servers.items():
        lines += [
            f"[servers.{name}]",
            f"command = {json.dumps(target['command'])}",
            f"args = {json.dumps(target['args'])}",
        ]
    (folder / "recorder.toml").write_text("\n".join(lines) + "\n")
    return folder / "recorder.toml"


async def until_closed(store: RunStore, run: str, log: Path) -> None:
    """The Recorder closes and signs the run as it shuts down, after the client has let go."""
    try:
        await poll(lambda: store.run(run).closed_at is not None, "the Recorder to sign the run's close")
    except AssertionError as waited:
        raise AssertionError(f"{waited}; its log ends:\n{log.read_text()[-3000:]}") from None


def structured(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None, result
    content: dict[str, Any] = result.structured_content
    return content


async def test_an_agent_over_stdio_gets_reversible_calls_through_and_waits_for_approval_of_the_rest(
    tmp_path: Path,
) -> None:
    with MailSink(tmp_path / "mail") as sink:
        config = write_config(tmp_path, sink.port)
        transport = StdioTransport(
            sys.executable,
            ["-m", "hatp_journal.recorder.cli.command_line", "--config", str(config), "serve"],
            env=dict(os.environ),
            cwd=str(tmp_path),
            log_file=tmp_path / "recorder.log",
            keep_alive=False,  # leaving the client ends the Recorder, which closes the run
        )
        async with Client(transport, timeout=60) as agent:
            names = {tool.name for tool in await agent.list_tools()}
            won = await agent.call_tool_mcp("crm_update_deal", {"deal_id": "D-881", "stage": "Won"})
            email = {"to": ["buyer@globex.com"], "subject": "Welcome to Acme", "body": "Hello"}
            held = await agent.call_tool_mcp("email_send_email", email)
            shout = await agent.call_tool_mcp("plain_shout", {"text": "hi"})
            binding = await agent.call_tool_mcp(
                "crm_hatp_journal_compensate", {"token": "x", "ifVersion": "v1"}
            )

            ask = structured(held)["ask"]
            shout_ask = structured(shout)["ask"]
            run = (
                RunStore(tmp_path / "recorder.db", SigningKey.from_file(tmp_path / "recorder.key"))
                .runs()[0]
                .id
            )
            cli = ["--config", str(config)]
            lee = ["--as", "lee", "--key", str(tmp_path / "lee.key")]
            assert recorder_cli([*cli, "approve", f"{run}/{ask}", *lee]) == 0
            assert recorder_cli([*cli, "deny", f"{run}/{shout_ask}", *lee]) == 0
            sent = await agent.call_tool_mcp("email_send_email", email)
            refused = await agent.call_tool_mcp("plain_shout", {"text": "hi"})

    assert "crm_update_deal" in names
    assert "plain_shout" in names
    assert not any("hatp_journal" in name for name in names)
    assert binding.is_error
    assert not won.is_error
    assert "compensationToken" not in json.dumps(won.model_dump(by_alias=True))
    assert structured(held)["status"] == "pending_approval"
    assert structured(shout)["status"] == "pending_approval"
    assert not sent.is_error
    assert [m.subject for m in sink.messages()] == ["Welcome to Acme"]
    assert refused.is_error
    assert structured(refused)["code"] == "ASK_DENIED"

    store = RunStore(tmp_path / "recorder.db", SigningKey.from_file(tmp_path / "recorder.key"))
    entries = store.entries(run)
    kinds = [(e.kind, e.body.get("tool")) for e in entries]
    assert kinds == [
        ("call", "update_deal"),
        ("ask", "send_email"),
        ("ask", "shout"),
        ("refused", "crm_hatp_journal_compensate"),  # no tool of the agent's: journaled, UNKNOWN_TOOL
        ("decision", None),
        ("decision", None),
        ("call", "send_email"),
        ("refused", "shout"),
    ]
    assert entries[3].body["code"] == "UNKNOWN_TOOL"
    assert "compensationToken" not in entries[0].body["journal"]
    assert TokenStore(store.engine).token(entries[0].body["journal"]["compensationTokenDigest"]) is not None
    assert entries[0].body["intake"]["status"] == "verified"
    await until_closed(store, run, tmp_path / "recorder.log")
