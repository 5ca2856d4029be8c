"""The README's examples are code: they run here exactly as printed."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

README = Path(__file__).parents[1] / "README.md"


def example(name: str) -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", text, re.S)
    assert match, f"README has no example named {name}"
    return match.group(1)


@pytest.mark.anyio
async def test_the_readme_decorator_example_serves_a_tool_whose_undo_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(example("decorator"), "README.md", "exec"), namespace)
    exec(compile(example("serve"), "README.md", "exec"), namespace)
    exec(compile(example("testing"), "README.md", "exec"), {**namespace, "tmp_path": tmp_path})

    # The testing example seeded its own store; seed the served one the same way and call it over MCP.
    from sqlmodel import Session

    with Session(namespace["journal"].engine) as session:
        start = namespace["Revision"].of("v12", {"stage": "Proposal"})
        session.add(
            namespace["Deal"](id="D-881", stage="Proposal", version="v12", etag=start.etag, changed_by="dana")
        )
        session.commit()
    async with Client(namespace["mcp"]) as client:
        result = await client.call_tool_mcp("update_deal", {"deal_id": "D-881", "stage": "Won"})
        assert result.meta is not None
        journal = result.meta["hatp/journal"]
        assert journal["effect"]["summary"] == "Deal D-881 stage: Proposal → Won"
        assert journal["effect"]["changes"] == [{"field": "stage", "before": "Proposal", "after": "Won"}]
        undo = await client.call_tool_mcp(
            "hatp_journal_compensate",
            {"token": journal["compensationToken"], "ifVersion": journal["effect"]["version"]},
        )
        assert undo.meta is not None
        assert undo.meta["hatp/journal"]["status"] == "done"

        # The irreversible tool answers with a summary from what it stored, and no token.
        sent = await client.call_tool_mcp("send_email", {"to": " Buyer@Globex.com", "body": "Welcome"})
        assert sent.meta is not None
        assert sent.meta["hatp/journal"]["effect"]["summary"] == "Email to buyer@globex.com"
        assert sent.meta["hatp/journal"]["undo"]["kind"] == "none"
        assert "compensationToken" not in sent.meta["hatp/journal"]
    assert os.path.exists(tmp_path / "crm.key")
