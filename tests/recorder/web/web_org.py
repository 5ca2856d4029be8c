"""An organisation (the undo tests' :class:`Org`) with the approver's pages served on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import anyio
from fastmcp import Client
from playwright.sync_api import Page
from support.undo_org import LEAD, POLICY, Org

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.web import WebApprover
from hatp_journal.recorder.web.server import serving

T = TypeVar("T")
# Every wait on another thread is bounded by this.
WAIT_SECONDS = 30


@dataclass
class Clock:
    """The approver's clock: real time, moved forward when a test says so."""

    ahead: timedelta = field(default_factory=timedelta)

    def __call__(self) -> datetime:
        return utc_now() + self.ahead


@dataclass
class Approver:
    """The approver serving over ``org``, at ``url``."""

    org: Org
    web: WebApprover
    url: str
    clock: Clock

    def agent(self, calls: list[tuple[str, dict[str, Any]]]) -> str:
        """One agent session (see :meth:`Org.agent`), run beside the browser; returns its run id."""
        return in_thread(self.org.agent, calls)

    def plan(self, run: str, *which: str, by: str) -> str:
        """Plan an undo with ``hatp-recorder plan``; returns the plan's ref."""
        ref, _ = in_thread(lambda: self.org.plan(run, *which, by=by))
        return ref

    def sign_in(self, page: Page, person: str) -> None:
        page.goto(self.web.link(person))
        assert page.url.endswith("/asks"), page.content()

    def code(self, page: Page) -> str:
        """The stable code of the message the page shows (once the page a click led to is loaded)."""
        page.wait_for_load_state()
        return str(page.locator("#message").get_attribute("data-code"))


def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn`` in its own thread: Playwright's sync API keeps an event loop running in this one."""
    told: list[T] = []
    failed: list[BaseException] = []

    def target() -> None:
        try:
            told.append(fn(*args))
        except BaseException as error:  # noqa: BLE001 -- handed back to the test's thread
            failed.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(WAIT_SECONDS * 2)
    assert not thread.is_alive(), f"{fn} did not finish"
    if failed:
        raise failed[0]
    return told[0]


def policy_that_asks_before_publishing(org: Org) -> None:
    """Publishing can't be undone: this organisation wants a team lead to approve it first."""
    policy = json.loads(json.dumps(POLICY))
    policy["autonomy"]["none"] = "ask"
    (org.root / "policy.json").write_text(json.dumps(policy))


@contextmanager
def approver_for(org: Org) -> Iterator[Approver]:
    """Serve the approver for ``org`` (people's keys are in the org's folder) until the block ends."""
    with org.config.open("a") as config:
        config.write('\n[web]\nkeys = "."\n')
    config = load_config(org.config)
    clock = Clock()
    web = WebApprover(config, clock=clock)
    try:
        with serving(web.app) as url:
            config.web.base_url = url
            yield Approver(org, web, url, clock)
    finally:
        web.close()


class HeldAgent:
    """An agent session, in its own thread, that calls once, waits, then calls the same tool again."""

    def __init__(self, org: Org, tool: str, arguments: dict[str, Any]) -> None:
        self.org, self.tool, self.arguments = org, tool, arguments
        self.first: dict[str, Any] = {}
        self.second: dict[str, Any] = {}
        self.run = ""
        self._held = threading.Event()
        self._go_on = threading.Event()
        self._thread = threading.Thread(target=lambda: anyio.run(self._session), daemon=True)

    def __enter__(self) -> HeldAgent:
        self._thread.start()
        assert self._held.wait(WAIT_SECONDS), "the agent's first call did not come back"
        return self

    def call_again(self) -> dict[str, Any]:
        self._go_on.set()
        self._thread.join(WAIT_SECONDS)
        assert not self._thread.is_alive(), "the agent's second call did not come back"
        return self.second

    def __exit__(self, *exc: object) -> None:
        self._go_on.set()
        self._thread.join(WAIT_SECONDS)

    async def _session(self) -> None:
        config = load_config(self.org.config)
        store = self.org.store()
        recorder = Recorder(config, store=store, policy=load_policy(Path(config.recorder.policy)))
        try:
            async with AsyncExitStack() as stack:
                mcp = await recorder.start(stack)
                async with Client(mcp) as client:
                    self.first = _told(await client.call_tool_mcp(self.tool, self.arguments))
                    self.run = str(recorder.run_id)
                    self._held.set()
                    await anyio.to_thread.run_sync(self._go_on.wait, WAIT_SECONDS)
                    self.second = _told(await client.call_tool_mcp(self.tool, self.arguments))
        finally:
            self._held.set()
            recorder.close()
            store.dispose()


def _told(result: Any) -> dict[str, Any]:
    return {"is_error": bool(result.is_error), "structured": result.structured_content or {}}


__all__ = ["LEAD", "Approver", "HeldAgent", "approver_for", "policy_that_asks_before_publishing"]
