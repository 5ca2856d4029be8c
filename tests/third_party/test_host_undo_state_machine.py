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
from graph_machine import GraphMachine, configure, memory_policy, memory_servers
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
    """Stands for ``st.data()`` in a replayed example: every draw gives the recorded value."""

    def __init__(self, value: int) -> None:
        self.value = value

    def draw(self, strategy: Any, label: str | None = None) -> int:
        return self.value


ONCE_BROKEN = {
    # bench/host_undo_machine.py's example ~1,371: a relation Cy→Ada made before Cy existed; the
    # undo of the create of Cy would have deleted it with Cy (the server's cascade)
    "a relation made before its entity": [
        ("relate", {"a": "Cy", "b": "Ada", "kind": "knew"}),
        *[("create", {"names": ["Ada"]})] * 3,
        ("relate", {"a": "Ada", "b": "Ada", "kind": "knew"}),
        ("create", {"names": ["Ada"]}),
        ("create", {"names": ["Bo"]}),
        ("undo", {"data": Drawn(6), "override": False}),
        ("create", {"names": ["Cy", "Ada"]}),
        ("undo", {"data": Drawn(1), "override": False}),
    ],
    # the cascade's relation comes back with the undo of a later delete, in the same reversal
    "a relation a later delete's undo puts back": [
        ("relate", {"a": "Ada", "b": "Bo", "kind": "knew"}),
        ("create", {"names": ["Ada", "Bo"]}),
        ("delete", {"name": "Ada"}),
        ("relate", {"a": "Ada", "b": "Ada", "kind": "knew"}),
        ("undo", {"data": Drawn(1), "override": False}),
    ],
    # overridden: the relate that made the relation is undone after the create's cascade conflict
    "a relation its own relate's undo removes": [
        ("relate", {"a": "Bo", "b": "Cy", "kind": "knew"}),
        ("delete", {"name": "Cy"}),
        ("relate", {"a": "Bo", "b": "Bo", "kind": "met"}),
        ("undo", {"data": Drawn(2), "override": False}),
        ("undo", {"data": Drawn(2), "override": True}),
        ("create", {"names": ["Ada", "Cy"]}),
        ("undo", {"data": Drawn(2), "override": True}),
        ("relate", {"a": "Bo", "b": "Ada", "kind": "met"}),
        ("undo", {"data": Drawn(1), "override": True}),
    ],
}


@pytest.mark.parametrize("story", list(ONCE_BROKEN))
def test_an_example_that_once_broke_it_keeps_every_invariant_with_the_documented_cascade_conflict(
    machine_world: dict[str, Any], story: str
) -> None:
    state = GraphMachine()
    seen = GraphMachine.stats.get("cascade conflicts", 0)
    for rule, arguments in ONCE_BROKEN[story]:
        getattr(state, rule)(**arguments)
        state.the_server_file_stays_readable()
    state.teardown()

    assert GraphMachine.stats["cascade conflicts"] > seen


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
