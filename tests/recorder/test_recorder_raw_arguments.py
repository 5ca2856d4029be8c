"""An agent writes its JSON-RPC itself to ``hatp-recorder serve``, to send what JSON libraries won't.

Over stdio: NaN, a number too big for a double (read as Infinity), an integer beyond 2^53 and a lone
surrogate (``"\\ud800"``). Over HTTP: lone surrogates in a value and in a key, which that transport's
parser hands over as they are. Each such call is journaled without its arguments and refused; the
tool server is not called; the run goes on and its record verifies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from support.http_recorder import start_http_recorder
from support.ports import wait_listening

from hatp_journal.recorder.record import RunStore, verify_record
from hatp_journal.recorder.record.export import export_run
from hatp_journal.toolkit import SigningKey

PLAIN = Path(__file__).parent / "plain_server.py"
MAX_NOTIFICATIONS = 1_000
"""How many notifications ``answer`` skips before it says no answer came (a call sends a few)."""
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "raw-agent", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class RawAgent:
    """Writes ``tools/call`` lines with the arguments as given text and reads the answers."""

    def __init__(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.stdin, self.stdout = stdin, stdout
        self.next_id = 0

    def send(self, tool: str, arguments: str) -> int:
        """Write one call whose arguments are the JSON text ``arguments``, as it is; its id."""
        self.next_id += 1
        params = f'{{"name":{json.dumps(tool)},"arguments":{arguments},"_meta":{json.dumps(META)}}}'
        line = f'{{"jsonrpc":"2.0","id":{self.next_id},"method":"tools/call","params":{params}}}\n'
        self.stdin.write(line.encode("utf-8"))
        self.stdin.flush()
        return self.next_id

    def answer(self) -> dict[str, Any]:
        """The next answer the Recorder writes (notifications skipped)."""
        for _ in range(MAX_NOTIFICATIONS + 1):  # each line read is progress; a call sends few notifications
            line = self.stdout.readline()
            assert line, "the Recorder closed its output"
            message: dict[str, Any] = json.loads(line)
            if "id" in message:
                return message
        raise AssertionError(f"no answer after {MAX_NOTIFICATIONS} notifications")

    def call(self, tool: str, arguments: str) -> dict[str, Any]:
        """Send one call and return its result."""
        sent = self.send(tool, arguments)
        message = self.answer()
        assert message["id"] == sent, message
        result: dict[str, Any] = message["result"]
        return result


MAX_ARGUMENTS_BYTES = 200


def write_config(folder: Path) -> None:
    """A Recorder in front of the plain server, allowing its calls, with a small arguments limit."""
    (folder / "policy.json").write_text(json.dumps({"autonomy": {"unknown": "allow"}}))
    (folder / "recorder.toml").write_text(
        f"[recorder]\nmax_arguments_bytes = {MAX_ARGUMENTS_BYTES}\n"
        f"[servers.plain]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(PLAIN))}]\n"
    )


def recorded(folder: Path) -> tuple[RunStore, str]:
    """The Recorder's store in ``folder`` and its one run, once the process has ended."""
    store = RunStore(folder / "recorder.db", SigningKey.from_file(folder / "recorder.key"))
    [run] = store.runs()
    return store, run.id


def verifies(store: RunStore, run: str) -> bool:
    key = store.public_key
    return verify_record(export_run(store, run).to_bytes(), recorder_keys={key.kid: key}).ok


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[tuple[RawAgent, subprocess.Popen[bytes]]]:
    write_config(tmp_path)
    with (tmp_path / "recorder.log").open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hatp_journal.recorder.cli.command_line",
                "--config",
                "recorder.toml",
                "serve",
            ],
            cwd=tmp_path,
            env=dict(os.environ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
        assert process.stdin is not None
        assert process.stdout is not None
        try:
            yield RawAgent(process.stdin, process.stdout), process
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_nan_infinity_bigints_and_oversize_over_stdio_are_journaled_and_refused_and_the_run_goes_on(
    tmp_path: Path, recorder: tuple[RawAgent, subprocess.Popen[bytes]]
) -> None:
    agent, process = recorder

    first = agent.call("plain_shout", '{"text":"hi"}')
    nan = agent.call("plain_shout", '{"text":"hi","times":NaN}')
    infinity = agent.call("plain_shout", '{"text":"hi","times":1e400}')
    big = agent.call("plain_shout", '{"text":"hi","times":123456789012345678901234567890}')
    oversize = agent.call("plain_shout", json.dumps({"text": "x" * MAX_ARGUMENTS_BYTES}))
    surrogate = agent.call("plain_shout", '{"text":"\\ud800"}')
    unhashable = f'{{"name":["plain_shout"],"arguments":{{}},"_meta":{json.dumps(META)}}}'
    agent.stdin.write(
        f'{{"jsonrpc":"2.0","id":"odd","method":"tools/call","params":{unhashable}}}\n'.encode()
    )
    agent.stdin.write(b"[" * 100_000 + b"\n")  # nested past what Python's json parses
    agent.stdin.flush()  # each is answered (the second, never closed, is no JSON); the front reads on
    sent = agent.send("plain_shout", '{"text":"bye"}')
    # Three answers, in the order the front finishes them: the refused lines may come after "bye".
    answers = [agent.answer() for _ in range(3)]
    others = [m for m in answers if m["id"] != sent]
    assert sorted((m["id"] or "", m["error"]["code"]) for m in others) == [("", -32700), ("odd", -32602)]
    [after] = [m["result"] for m in answers if m["id"] == sent]
    assert process.stdin is not None
    process.stdin.close()  # the agent leaves: the Recorder closes and signs the run
    exit_code = process.wait()

    assert exit_code == 0
    assert first["structuredContent"] == {"result": "HI"}
    refusals = [nan, infinity, big, surrogate]
    assert all(result["isError"] for result in refusals)
    assert [result["structuredContent"]["code"] for result in refusals] == ["ARGUMENTS_NOT_CANONICAL"] * 4
    assert [result["structuredContent"]["entry"] for result in refusals] == ["e2", "e3", "e4", "e6"]
    assert oversize["structuredContent"]["code"] == "ARGUMENTS_TOO_LARGE"
    assert after["structuredContent"] == {"result": "BYE"}
    store, run = recorded(tmp_path)
    entries = store.entries(run)
    assert [(e.kind, e.body.get("code")) for e in entries] == [
        ("call", None),
        ("refused", "ARGUMENTS_NOT_CANONICAL"),
        ("refused", "ARGUMENTS_NOT_CANONICAL"),
        ("refused", "ARGUMENTS_NOT_CANONICAL"),
        ("refused", "ARGUMENTS_TOO_LARGE"),
        ("refused", "ARGUMENTS_NOT_CANONICAL"),
        ("call", None),
    ]
    assert [e.body["argumentsRefused"]["path"] for e in entries[1:4]] == ["/times"] * 3
    assert "arguments" not in entries[4].body
    assert entries[5].body["argumentsRefused"]["path"] == "/text"
    assert entries[6].body["arguments"] == {"text": "bye"}
    assert store.run(run).closed_at is not None
    assert verifies(store, run)


def post(url: str, request_id: int, arguments: str) -> dict[str, Any]:
    """POST a ``tools/call`` of ``plain_shout`` whose arguments are the JSON text given; its result."""
    params = f'{{"name":"plain_shout","arguments":{arguments},"_meta":{json.dumps(META)}}}'
    body = f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{params}}}'
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": META["io.modelcontextprotocol/protocolVersion"],
        "Mcp-Method": "tools/call",
        "Mcp-Name": "plain_shout",
    }
    request = urllib.request.Request(url, data=body.encode("ascii"), headers=headers, method="POST")
    with urllib.request.urlopen(request) as response:
        result: dict[str, Any] = json.loads(response.read())["result"]
        return result


@pytest.mark.anyio
async def test_lone_surrogates_posted_over_http_are_journaled_refused_and_never_forwarded(
    tmp_path: Path,
) -> None:
    write_config(tmp_path)
    process, port = start_http_recorder("recorder.toml", tmp_path)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_listening(port, process, "the Recorder")
        answers = [
            post(url, number, arguments)
            for number, arguments in enumerate(
                ['{"text":"a\\ud800b"}', '{"text":"ok","k\\udc00":1}', '{"text":"hi"}'], start=1
            )
        ]
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=20)

    value, key, fine = answers
    assert [value["structuredContent"]["code"], key["structuredContent"]["code"]] == [
        "ARGUMENTS_NOT_CANONICAL"
    ] * 2
    assert fine["structuredContent"] == {"result": "HI"}
    store, run = recorded(tmp_path)
    entries = store.entries(run)
    assert [e.kind for e in entries] == ["refused", "refused", "call"], errors.decode()[-2000:]
    assert [e.body["argumentsRefused"]["path"] for e in entries[:2]] == ["/text", "/k\\udc00"]
    assert verifies(store, run)
