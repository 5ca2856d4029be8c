"""An agent writes JSON-RPC lines to ``hatp-recorder serve`` itself, to send what JSON libraries
won't: NaN, a number too big for a double (read as Infinity) and an integer beyond 2^53.

Each such call is journaled without its arguments and refused; the tool server is not called;
the run goes on and its record verifies. A lone surrogate (``"\\ud800"``) never reaches the
Recorder over stdio: the transport's JSON parser refuses the line and nothing answers it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from hatp_journal.recorder.record import RunStore, verify_record
from hatp_journal.toolkit import SigningKey

PLAIN = Path(__file__).parent / "plain_server.py"
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
        while True:
            line = self.stdout.readline()
            assert line, "the Recorder closed its output"
            message: dict[str, Any] = json.loads(line)
            if "id" in message:
                return message

    def call(self, tool: str, arguments: str) -> dict[str, Any]:
        """Send one call and return its result."""
        sent = self.send(tool, arguments)
        message = self.answer()
        assert message["id"] == sent, message
        result: dict[str, Any] = message["result"]
        return result


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[tuple[RawAgent, subprocess.Popen[bytes]]]:
    (tmp_path / "policy.json").write_text(json.dumps({"autonomy": {"unknown": "allow"}}))
    (tmp_path / "recorder.toml").write_text(
        f"[servers.plain]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(PLAIN))}]\n"
    )
    with (tmp_path / "recorder.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "hatp_journal.recorder.cli", "--config", "recorder.toml", "serve"],
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


def test_nan_infinity_and_big_integers_sent_over_stdio_are_journaled_refused_and_the_run_goes_on(
    tmp_path: Path, recorder: tuple[RawAgent, subprocess.Popen[bytes]]
) -> None:
    agent, process = recorder

    first = agent.call("plain_shout", '{"text":"hi"}')
    nan = agent.call("plain_shout", '{"text":"hi","times":NaN}')
    infinity = agent.call("plain_shout", '{"text":"hi","times":1e400}')
    big = agent.call("plain_shout", '{"text":"hi","times":123456789012345678901234567890}')
    agent.send("plain_shout", '{"text":"\\ud800"}')  # never answered: the next answer is the next call's
    after = agent.call("plain_shout", '{"text":"bye"}')
    assert process.stdin is not None
    process.stdin.close()  # the agent leaves: the Recorder closes and signs the run
    exit_code = process.wait()

    assert exit_code == 0
    assert first["structuredContent"] == {"result": "HI"}
    refusals = [nan, infinity, big]
    assert all(result["isError"] for result in refusals)
    assert [result["structuredContent"]["code"] for result in refusals] == ["ARGUMENTS_NOT_CANONICAL"] * 3
    assert [result["structuredContent"]["entry"] for result in refusals] == ["e2", "e3", "e4"]
    assert after["structuredContent"] == {"result": "BYE"}
    store = RunStore(tmp_path / "recorder.db", SigningKey.from_file(tmp_path / "recorder.key"))
    [run] = store.runs()
    entries = store.entries(run.id)
    assert [(e.kind, e.body.get("code")) for e in entries] == [
        ("call", None),
        ("refused", "ARGUMENTS_NOT_CANONICAL"),
        ("refused", "ARGUMENTS_NOT_CANONICAL"),
        ("refused", "ARGUMENTS_NOT_CANONICAL"),
        ("call", None),
    ]
    assert [e.body["argumentsRefused"]["path"] for e in entries[1:4]] == ["/times"] * 3
    assert entries[4].body["arguments"] == {"text": "bye"}
    assert store.run(run.id).closed_at is not None
    key = store.public_key
    assert verify_record(store.export(run.id).to_bytes(), recorder_keys={key.kid: key}).ok
