"""`hatp-recorder install` writes a host entry that works where desktop hosts start servers: another
working folder and a minimal PATH. The real MCP Inspector CLI (which starts the server for every
call) reads the entry and completes a read, a write, and an ask that is approved and called again."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from third_party_servers import NODE_BIN, require

from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.testing.org import LEE, POLICY, make_org

pytestmark = pytest.mark.slow


def test_the_inspector_cli_reads_writes_and_calls_an_approved_ask_from_the_entry_install_wrote(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    inspector = require(NODE_BIN / "mcp-inspector")
    # A bare command and a relative store, as people write them: resolved from the config's folder.
    org = make_org(tmp_path / "org", {"crm": ["hatp-crm", "serve", "--db", "var/crm.db"]})
    (org.root / "var").mkdir()
    asks_for_disclosures = {**POLICY, "autonomy": {**POLICY["autonomy"], "none": "ask"}}
    (org.root / "policy.json").write_text(json.dumps(asks_for_disclosures))
    host_file = tmp_path / "host" / "claude_desktop_config.json"
    installed = ["--config", str(org.config), "install", "claude-desktop", "--write", str(host_file)]
    assert main([*installed, "--run-key", "inspector-run-1"]) == 0
    capfd.readouterr()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def call(tool: str, *arguments: str) -> dict[str, Any]:
        done = subprocess.run(
            [str(inspector), "--cli", "--config", str(host_file), "--server", "hatp"]
            + ["--method", "tools/call", "--tool-name", tool]
            + (["--tool-arg", *arguments] if arguments else []),
            cwd=elsewhere,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MCP_INSPECTOR_SECRET_STORE": "memory"},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    read = call("crm_get_deal", "deal_id=D-881")
    assert read["structuredContent"]["stage"] == "Proposal"
    wrote = call("crm_update_deal", "deal_id=D-881", "stage=Won")
    assert wrote["structuredContent"]["stage"] == "Won"
    held = call("crm_export_report")
    assert held["structuredContent"]["status"] == "pending_approval"
    run, ask = held["structuredContent"]["run"], held["structuredContent"]["ask"]

    assert org.approve(f"{run}/{ask}", person=LEE)[0] == 0
    report = call("crm_export_report")

    assert report["structuredContent"]["format"] == "text/csv"
    assert "D-881,Globex — Q4 expansion,Globex,Won" in report["structuredContent"]["csv"]
    assert (org.root / "var" / "crm.db").is_file()  # the store the config names, not one in elsewhere/
    assert not (elsewhere / "var").exists()
    kinds = [entry.kind for entry in org.entries(run)]
    assert kinds.count("call") == 3  # read, write, and the approved report, all in the one run
    assert "ask" in kinds
