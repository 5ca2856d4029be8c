"""A compensation token is useful to the Recorder it was issued through, and to nobody else.

An export carries no token; the token itself, taken from the Recorder's own store by someone who
does not hold the Recorder's key, compensates nothing — with or without a made-up override — and a
colleague's newer edit stays.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from support.chain_server import outside_edit, values
from support.undo_org import CHAIN, EVE, Org

from hatp_journal.recorder.intake.tokens import TokenStore
from hatp_journal.toolkit.signing import token_digest
from hatp_journal.toolkit.wire import META_KEY


async def compensate_directly(org: Org, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call the chain server's binding tool straight over stdio, as anyone could, without the Recorder."""
    server = StdioTransport(
        sys.executable, [str(CHAIN), "--db", str(org.db()), "--key", str(org.root / "chain.key")]
    )
    async with Client(server) as client:
        result = await client.call_tool_mcp("hatp_journal_compensate", arguments)
    assert result.meta is not None
    answer: dict[str, Any] = result.meta[META_KEY]
    return answer


def test_a_token_from_anywhere_but_the_recorder_compensates_nothing_even_with_an_override(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    outside_edit(org.db(), "a", "Eve's", by=EVE)
    code, _, err = org.cli("export", run, "--out", str(org.root / "run.json"))
    assert code == 0, err
    exported = (org.root / "run.json").read_text(encoding="utf-8")
    journal = json.loads(exported)["entries"][0]["body"]["journal"]
    digest = journal["compensationTokenDigest"]
    store = org.store()
    try:
        token = TokenStore(store.engine).token(digest)  # the strongest thief: a copy of the Recorder's store
    finally:
        store.dispose()
    assert token is not None
    assert token_digest(token) == digest

    async def attempts() -> list[dict[str, Any]]:
        base = {"ifVersion": journal["effect"]["version"]}
        forged = {"approval": "forged", "by": "nobody", "versionFound": "v2"}
        return [
            await compensate_directly(org, {"token": digest, **base}),
            await compensate_directly(org, {"token": token, **base}),
            await compensate_directly(org, {"token": token, "ifVersion": "v2"}),
            await compensate_directly(org, {"token": token, **base, "override": forged}),
        ]

    by_digest, plain, at_eves_version, overridden = anyio.run(attempts)

    assert 'compensationToken"' not in exported
    assert token not in exported
    assert by_digest["code"] == "UNDO_UNKNOWN_TOKEN"
    assert [a["code"] for a in (plain, at_eves_version, overridden)] == ["UNDO_NOT_AUTHORIZED"] * 3
    assert values(org.db()) == {"a": "Eve's"}
