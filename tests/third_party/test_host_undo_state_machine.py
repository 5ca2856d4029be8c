"""The host-undo state machines against real servers that know nothing of undo: the knowledge-graph
server (graph_machine.py) and the filesystem server (files_machine.py), a few examples each in CI
(the longer profile is bench/host_undo_machine.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import files_machine
import pytest
from anyio.from_thread import start_blocking_portal
from files_machine import FilesMachine, files_policy, files_servers
from graph_machine import GraphMachine, configure, memory_policy, memory_servers, read_graph
from host_undo_org import HostOrg
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test
from third_party_servers import NODE_BIN, require

pytestmark = pytest.mark.slow

CI = settings(
    max_examples=5,
    stateful_step_count=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def machine_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("graph-machine")
    memory = root / "memory.jsonl"
    org = HostOrg.make(root, memory_servers(require(NODE_BIN / "mcp-server-memory"), memory), memory_policy())
    with start_blocking_portal() as portal:
        clear = configure(org, memory, portal)
        yield {"org": org}
        clear()


def test_agent_calls_colleague_edits_no_ops_reads_and_undos_keep_every_invariant(
    machine_world: dict[str, Any],
) -> None:
    run_state_machine_as_test(GraphMachine, settings=CI)
    assert GraphMachine.stats.get("undos", 0) > 0


class Drawn:
    """Stands for ``st.data()`` in a replayed example: each draw gives the next recorded value."""

    def __init__(self, *values: int) -> None:
        self.values = list(values)

    def draw(self, strategy: Any, label: str | None = None) -> int:
        return self.values.pop(0)


def test_the_example_that_once_broke_it_keeps_every_invariant_with_the_documented_cascade_conflict(
    machine_world: dict[str, Any],
) -> None:
    # bench/host_undo_machine.py's example ~1,371: a relation Cy→Ada made before Cy existed; the undo
    # of the create of Cy would have deleted it with Cy (the server's cascade)
    state = GraphMachine()
    state.relate(a="Cy", b="Ada", kind="knew")
    for _ in range(3):
        state.create(names=["Ada"])
    state.relate(a="Ada", b="Ada", kind="knew")
    state.create(names=["Ada"])
    state.create(names=["Bo"])
    state.undo(data=Drawn(6), override=False)  # type: ignore[arg-type]
    state.create(names=["Cy", "Ada"])
    state.undo(data=Drawn(1), override=False)  # type: ignore[arg-type]
    state.teardown()

    assert {"from": "Cy", "to": "Ada", "relationType": "knew"} in read_graph(state.memory)["relations"]
    assert GraphMachine.stats["undos"] >= 2


@pytest.fixture(scope="module")
def files_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("files-machine")
    folder = root / "files"
    folder.mkdir()
    org = HostOrg.make(
        root, files_servers(require(NODE_BIN / "mcp-server-filesystem"), folder), files_policy()
    )
    with start_blocking_portal() as portal:
        clear = files_machine.configure(org, folder, portal)
        yield {"org": org}
        clear()


def test_agent_writes_colleague_edits_no_ops_reads_and_undos_of_real_files_keep_every_invariant(
    files_world: dict[str, Any],
) -> None:
    run_state_machine_as_test(FilesMachine, settings=CI)
    assert FilesMachine.stats.get("undos", 0) > 0
