"""A Recorder fleet: 4 ``hatp-recorder serve --transport http`` processes on one PostgreSQL store.

One organisation (one config, one Recorder key) fronts one CRM, served over HTTP from this test's
process on a PostgreSQL store of its own. Eight agents, real MCP clients over streamable HTTP,
are spread over the Recorders (two connections to one Recorder share its run) and charge orders
under a per-period money cap the fleet together would pass: the calls over it become asks; a
person approves one ask of each agent (the CLI, against the database) and the agent calls again
through a different Recorder with its run key, so every run is also appended to by another process;
one more ask is approved while its call waits for the decision on a third Recorder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastmcp import Client
from sqlmodel import Session, select
from support.ports import free_port, wait_listening
from support.waiting import until_set

from hatp_journal._shared.pytest_postgres import ThrowawayCluster
from hatp_journal.recorder.cli.command_line import main as recorder_cli
from hatp_journal.recorder.policy.stored_ledger import StoredLedger
from hatp_journal.recorder.record import RunStore, verify_record
from hatp_journal.recorder.web.server import serving
from hatp_journal.servers.crm.server import build as build_crm
from hatp_journal.servers.crm.store import Charge
from hatp_journal.toolkit import SigningKey, create_store_engine
from hatp_journal.toolkit.signing import b64url

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RECORDERS, AGENTS = 4, 8
LEAD = "human://acme.com/role/team-lead"
CAP = Decimal(100)  # USD per day, for the whole organisation
CHARGES = 3  # rounds, one charge of each agent per round: a little over 10 USD, no two alike
MAX_WAIT = 300  # seconds a call may wait for its decision: only a hung test reaches it
ORDER = "O-1001"  # 1200 USD due: room for every charge the test makes


@dataclass
class Agent:
    """One agent's session: its run, its run key, and what it was told."""

    number: int
    run: str = ""
    key: str = ""
    allowed: list[Decimal] = field(default_factory=list)  # amounts charged without an ask
    asks: dict[str, str] = field(default_factory=dict)  # amount -> ask entry id


def configure(root: Path, store: str, crm_url: str) -> Path:
    """One organisation: the team lead approves, charges are capped per day, every Recorder alike."""
    lee = SigningKey.generate()
    lee.save(root / "lee.key")
    SigningKey.generate().save(root / "recorder.key")  # made once: four Recorders starting must not race
    people = [{"id": "lee", "roles": [LEAD], "publicKey": b64url(lee.public.raw())}]
    (root / "directory.json").write_text(json.dumps({"people": people}))
    cap = {"amount": str(CAP), "currency": "USD", "period": "P1D"}
    autonomy = {"compensate": "allow", "read": "allow", "none": "allow", "unknown": "allow", "approver": LEAD}
    (root / "policy.json").write_text(json.dumps({"autonomy": {**autonomy, "money": {"perPeriod": cap}}}))
    (root / "recorder.toml").write_text(
        "[recorder]\n"
        f"store = {json.dumps(store)}\n"
        'directory = "directory.json"\nagent = "sales-bot"\nprincipal = "human://acme.com/dana"\n'
        f"max_wait_seconds = {MAX_WAIT}\n\n"
        f"[servers.crm]\nurl = {json.dumps(crm_url)}\n"
    )
    return root / "recorder.toml"


@contextmanager
def crm_over_http(store: str) -> Iterator[str]:
    """The CRM on ``store``, served over streamable HTTP from this process; yields its MCP URL."""
    mcp, journal = build_crm(store, SigningKey.generate())
    try:
        with serving(mcp.http_app(), scheduler=True) as url:  # the MCP session manager runs in the lifespan
            yield f"{url}/mcp"
    finally:
        journal.engine.dispose()


def serve_recorder(
    config: Path, n: int, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """Recorder ``n`` over HTTP on a free port, its log in ``recorder-N.log``; ``env`` added to its own."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "hatp_journal.recorder.cli.command_line",
        "--config",
        str(config),
        "serve",
    ]
    with (config.parent / f"recorder-{n}.log").open("wb") as log:
        process = subprocess.Popen(
            [*command, "--transport", "http", "--port", str(port)],
            cwd=config.parent,
            env={**os.environ, "FASTMCP_LOG_LEVEL": "WARNING", **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    return process, port


@asynccontextmanager
async def recorder_fleet(config: Path) -> AsyncIterator[list[str]]:
    """``RECORDERS`` Recorder processes on ``config``; yields their MCP URLs once all listen."""
    started: list[tuple[subprocess.Popen[bytes], int]] = []
    try:
        for n in range(RECORDERS):  # all starting at once: they race to create the store's tables
            started.append(serve_recorder(config, n))
        for n, (process, port) in enumerate(started):
            wait_listening(port, process, f"Recorder {n}")
        yield [f"http://127.0.0.1:{port}/mcp" for _, port in started]
    finally:
        for process, _ in started:
            process.send_signal(signal.SIGTERM)
        for process, _ in started:
            process.wait(timeout=60)


def recorded(result: Any) -> dict[str, Any]:
    assert result.meta is not None, result
    meta: dict[str, Any] = result.meta["hatp/recorder"]
    return meta


async def charge(client: Client[Any], amount: str, key: str | None = None, once: str | None = None) -> Any:
    """Charge ``amount`` in the run of ``key``, if given, as the call named ``once`` (an idempotency key)."""
    arguments = {"order_id": ORDER, "amount": amount, "currency": "USD"}
    meta = {"hatp/runKey": key} if key else {}
    if once is not None:
        meta["hatp/idempotencyKey"] = once
    return await client.call_tool_mcp("crm_charge_order", arguments, meta=meta or None)


def pending(result: Any) -> bool:
    return recorded(result).get("status") == "pending_approval"


def amount(agent: Agent, round_: int) -> str:
    """What ``agent`` charges in a round: 10.00 USD and some cents, different for every call of the test."""
    return f"10.{agent.number * CHARGES + round_:02d}"


async def charge_in_rounds(agents: list[Agent], urls: list[str]) -> None:
    """Every agent charges once per round through its Recorder, the rounds one after the other: the
    first round fits under the cap (8 x 10.xx), the second fills it, the third is all asks."""
    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(Client(urls[agent.number % RECORDERS], timeout=120))
            for agent in agents
        ]
        for round_ in range(CHARGES):
            async with anyio.create_task_group() as tasks:
                for agent, client in zip(agents, clients, strict=True):
                    tasks.start_soon(one_charge, agent, client, amount(agent, round_))


async def one_charge(agent: Agent, client: Client[Any], amount: str) -> None:
    result = await charge(client, amount)
    agent.run, agent.key = recorded(result)["run"], recorded(result)["runKey"]
    if pending(result):
        agent.asks[amount] = recorded(result)["ask"]
    else:
        assert not result.is_error, result.content
        agent.allowed.append(Decimal(amount))


async def retries(agent: Agent, url: str, amount: str) -> tuple[Any, Any]:
    """The approved call made again through another Recorder, then retried. Agents share runs, so
    another's charge may come between the two: the agent names its call (an idempotency key)."""
    once = f"agent-{agent.number}-{amount}"
    async with Client(url, timeout=120) as client:
        return await charge(client, amount, agent.key, once), await charge(client, amount, agent.key, once)


async def waited_for(config: Path, agent: Agent, url: str, amount: str) -> Any:
    """The asked call made again through yet another Recorder, waiting there for the decision; the
    team lead approves it with the CLI once the Recorder says it waits."""
    waiting = anyio.Event()

    async def progress(done: float, total: float | None, message: str | None) -> None:
        waiting.set()

    answers: list[Any] = []

    async def call() -> None:
        arguments = {"order_id": ORDER, "amount": amount, "currency": "USD"}
        meta = {"hatp/runKey": agent.key, "hatp/wait": MAX_WAIT}
        async with Client(url, timeout=MAX_WAIT) as client:
            answers.append(await client.call_tool_mcp("crm_charge_order", arguments, progress, meta=meta))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(call)
        await until_set(waiting, "the held charge's first progress notice")
        approve(config, agent.run, agent.asks[amount])
    return answers[0]


def approve(config: Path, run: str, ask: str) -> None:
    lee = ["--as", "lee", "--key", str(config.parent / "lee.key")]
    assert recorder_cli(["--config", str(config), "approve", f"{run}/{ask}", *lee]) == 0


def charges_made(store: str) -> int:
    """What the CRM itself says: one row per charge that reached it."""
    engine = create_store_engine(store)
    try:
        with Session(engine) as session:
            return len(session.exec(select(Charge)).all())
    finally:
        engine.dispose()


def forks_and_gaps(store: RunStore, run: str) -> int:
    """Entries out of sequence or not chained after their predecessor."""
    entries = store.entries(run)
    wrong = sum(entry.seq != n for n, entry in enumerate(entries, start=1))
    return wrong + sum(later.prev_hash != earlier.hash for earlier, later in pairwise(entries))


async def test_four_recorders_on_one_database_serve_eight_agents_without_forks_or_double_calls(
    tmp_path: Path, postgres_cluster: ThrowawayCluster
) -> None:
    store, crm_store = postgres_cluster.new_store(), postgres_cluster.new_store()
    agents = [Agent(n) for n in range(AGENTS)]
    with crm_over_http(crm_store) as crm_url:
        config = configure(tmp_path, store, crm_url)
        async with recorder_fleet(config) as urls:
            await charge_in_rounds(agents, urls)
            # Each agent's last ask is approved and the agent calls again through the next Recorder.
            approved = {agent.number: list(agent.asks)[-1] for agent in agents}
            for agent in agents:
                approve(config, agent.run, agent.asks[approved[agent.number]])
            answers: dict[int, tuple[Any, Any]] = {}

            async def retry(agent: Agent) -> None:
                elsewhere = urls[(agent.number + 1) % RECORDERS]
                answers[agent.number] = await retries(agent, elsewhere, approved[agent.number])

            async with anyio.create_task_group() as tasks:
                for agent in agents:
                    tasks.start_soon(retry, agent)
            # One agent's other ask is waited for through a third Recorder while it is approved.
            waiter = next(agent for agent in agents if len(agent.asks) == 2)
            [other] = [amount for amount in waiter.asks if amount != approved[waiter.number]]
            waited = await waited_for(config, waiter, urls[(waiter.number + 2) % RECORDERS], other)
        made = charges_made(crm_store)

    allowed = [amount for agent in agents for amount in agent.allowed]
    # The fleet asked for more than the cap: it held across processes, to the last whole charge.
    assert len(allowed) == AGENTS + 1
    assert sum(allowed) <= CAP
    assert sum(len(agent.asks) for agent in agents) == AGENTS * CHARGES - len(allowed)
    for agent in agents:
        used, again = answers[agent.number]
        assert not used.is_error, used.content
        assert not pending(used)
        assert recorded(used)["run"] == agent.run
        # The same call again at once is a retry: it gets the first answer, and is not made again.
        assert again.structured_content == used.structured_content
        assert (recorded(again)["entry"], recorded(again)["replayed"]) == (recorded(used)["entry"], True)
    assert not waited.is_error, waited.content
    assert not pending(waited)
    assert recorded(waited)["run"] == waiter.run
    # Every approved call reached the CRM exactly once, beside the ones the cap allowed.
    assert made == len(allowed) + len(approved) + 1

    key = SigningKey.from_file(tmp_path / "recorder.key")
    records = RunStore(store, key)
    try:
        runs = [run.id for run in records.runs()]
        assert sorted(runs) == sorted({agent.run for agent in agents})
        assert len(runs) == RECORDERS  # a Recorder's own run, shared by the agents connected to it
        assert [forks_and_gaps(records, run) for run in runs] == [0] * RECORDERS
        for run in runs:
            report = verify_record(records.export(run).to_bytes(), recorder_keys={key.public.kid: key.public})
            assert report.ok, report
        spends = StoredLedger(records.engine).spends()
    finally:
        records.dispose()
    assert sorted(state for _, _, state in spends) == ["spent"] * made
    approved_amounts = [Decimal(amount) for amount in [*approved.values(), other]]
    assert sum(Decimal(amount) for _, amount, _ in spends) == sum(allowed) + sum(approved_amounts)


MODERN = "2026-07-28"
"""The protocol era whose ``tools/call`` the Recorder's data plane answers without a session."""


async def call_until_killed(process: subprocess.Popen[bytes], url: str, agent: Agent, amount: str) -> int:
    """Make the approved call through the Recorder at ``url`` (its data plane: one 2026-era POST),
    which is killed before it answers; its exit status, once it is gone."""
    arguments = {"order_id": ORDER, "amount": amount, "currency": "USD"}
    envelope = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    meta = {**envelope, "hatp/runKey": agent.key}
    params = {"name": "crm_charge_order", "arguments": arguments, "_meta": meta}
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "crm_charge_order",
    }
    async with httpx2.AsyncClient(timeout=None) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        try:
            answer = await http.post(url, json=body, headers=headers)
        except httpx2.RemoteProtocolError:  # the connection drops: no answer ever comes
            return await anyio.to_thread.run_sync(process.wait)
    raise AssertionError(f"the Recorder answered: {answer.status_code} {answer.text}")


async def test_a_recorder_killed_after_making_an_approved_write_leaves_its_answer_to_the_agents_retry(
    tmp_path: Path, postgres_cluster: ThrowawayCluster
) -> None:
    store, crm_store = postgres_cluster.new_store(), postgres_cluster.new_store()
    agent = Agent(0)
    over_cap = "150.00"  # above the day's cap: an ask for the team lead
    crash = {"HATP_JOURNAL_TESTING": "1", "HATP_JOURNAL_CRASH_AT": "gateway:answered"}
    with crm_over_http(crm_store) as crm_url:
        config = configure(tmp_path, store, crm_url)
        doomed, doomed_port = serve_recorder(config, 0, crash)
        other, other_port = serve_recorder(config, 1)
        try:
            wait_listening(doomed_port, doomed, "Recorder 0")
            wait_listening(other_port, other, "Recorder 1")
            async with Client(f"http://127.0.0.1:{other_port}/mcp", timeout=120) as client:
                held = await charge(client, over_cap)
            agent.run, agent.key, ask = recorded(held)["run"], recorded(held)["runKey"], recorded(held)["ask"]
            approve(config, agent.run, ask)
            # The agent calls again through Recorder 0: it makes the charge, journals it and its answer,
            # and is killed (SIGKILL) before the answer leaves.
            status = await call_until_killed(doomed, f"http://127.0.0.1:{doomed_port}/mcp", agent, over_cap)
            # The agent's retry goes to the other Recorder, with its run key.
            async with Client(f"http://127.0.0.1:{other_port}/mcp", timeout=120) as client:
                retry = await charge(client, over_cap, agent.key)
        finally:
            for process in (doomed, other):
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in (doomed, other):
                process.wait(timeout=60)
        made = charges_made(crm_store)

    assert status == -signal.SIGKILL
    assert not retry.is_error, retry.content
    assert recorded(retry)["replayed"] is True
    records = RunStore(store, SigningKey.from_file(tmp_path / "recorder.key"))
    try:
        entries = records.entries(agent.run)
        [call] = [entry for entry in entries if entry.kind == "call"]
        charge_id = retry.structured_content["charge"]
        with Session(create_store_engine(crm_store)) as session:
            charges = session.exec(select(Charge)).all()
    finally:
        records.dispose()
    assert [entry.id for entry in entries if entry.kind == "ask"] == [ask]  # no second ask
    assert call.body["ask"] == ask  # made by the approval, by the killed Recorder
    assert recorded(retry)["entry"] == call.id  # the retry got the answer journaled with that call
    assert made == 1
    assert [row.id for row in charges] == [charge_id]  # the first answer: the one charge there is
