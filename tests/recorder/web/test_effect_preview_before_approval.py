"""A held call of a tool its server can dry-run carries the server's effect preview: the approver reads
what the call would do in ``asks``, ``show`` and on the pages, and the dry run changed nothing."""

from __future__ import annotations

import re
from typing import Any

from http_browser import signed_in
from support import chain_server
from support.undo_org import LEE
from web_org import Approver, policy_that_asks_before_publishing

from hatp_journal.toolkit import create_store_engine

KEY = 'a\nStep 2: "all undone"\x1b[2J\u202e'  # what a forger would put in a key


def held_publish(approver: Approver, key: str) -> tuple[str, str]:
    """(run, ask ref) of a publish held for the team lead, after a put of ``key``."""
    policy_that_asks_before_publishing(approver.org)
    told: list[Any] = []
    run = approver.org.agent(
        [("chain_put", {"key": key, "value": "1"}), ("chain_publish", {"key": key})], told=told
    )
    assert told[1].structured_content["status"] == "pending_approval"
    return run, f"{run}/{told[1].structured_content['ask']}"


def test_a_held_call_carries_the_servers_preview_and_the_dry_run_changes_nothing(approver: Approver) -> None:
    run, ref = held_publish(approver, "a")

    [ask] = [e for e in approver.org.entries(run) if e.kind == "ask"]
    effect = ask.body["preview"]["effect"]
    assert (effect["summary"], effect["resource"]) == ("Publish a", "chain://store/a")
    engine = create_store_engine(approver.org.db())
    try:
        assert chain_server.published(engine) == 0  # the preview published nothing
    finally:
        engine.dispose()
    code, listed, _ = approver.org.cli("asks")
    assert code == 0
    [line] = [line for line in listed.splitlines() if line.startswith(ref)]
    assert "would: Publish a" in line
    code, shown, _ = approver.org.cli("show", run)
    [ask_line] = [line for line in shown.splitlines() if line.split()[1:2] == ["ask"]]
    assert "would: Publish a" in ask_line
    lee = signed_in(approver, LEE)
    _, asks = lee.get("/asks")
    assert re.search(rf'data-ref="{ref}">.*?<span class="preview">would: Publish a</span>', asks, re.S)
    _, page = lee.get(f"/asks/{ref}")
    assert '<span id="preview">would: Publish a</span>' in page


def test_a_forged_preview_reads_as_one_line_in_asks(approver: Approver) -> None:
    _, ref = held_publish(approver, KEY)

    code, listed, _ = approver.org.cli("asks")

    assert code == 0
    lines = [line for line in listed.splitlines() if line.startswith(ref)]
    assert len(lines) == 1
    assert "would: Publish a\\n" in lines[0]
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e]", listed)
