"""The stdio front cuts the agent's stdin into lines as they arrive, over a real pipe."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from support.waiting import POLL_CAP, until_set

from hatp_journal.recorder.front import stdio as front
from hatp_journal.recorder.front.stdio import LIBRARY_BACKLOG, _Lines

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def agent_pipe(lines: _Lines) -> AsyncIterator[Any]:
    """A pipe whose read end ``lines`` reads, and its write end for the test to write to."""
    read_fd, write_fd = os.pipe()
    reading = os.fdopen(read_fd, "rb", buffering=0)
    writing = os.fdopen(write_fd, "wb", buffering=0)
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: lines, reading)
    try:
        yield writing
    finally:
        writing.close()
        transport.close()


async def until_ended(lines: _Lines) -> None:
    for _ in range(POLL_CAP):  # each turn is a chunk read from the pipe: only a hung test reaches the cap
        if lines.ended:
            return
        await until_set(lines.more, "more of the pipe read")
        lines.more.clear()
    raise AssertionError(f"the pipe did not end after {POLL_CAP} chunks")


async def test_lines_split_across_writes_are_taken_whole_in_order_and_a_last_line_needs_no_newline() -> None:
    taken: list[bytes] = []
    lines = _Lines(lambda line: taken.append(line))
    async with agent_pipe(lines) as agent:
        for chunk in (b'{"a":', b'1}\n{"b"', b":2}\n\n", b'{"c":3}'):
            agent.write(chunk)
        agent.close()
        await until_ended(lines)
    assert taken == [b'{"a":1}\n', b'{"b":2}\n', b"\n", b'{"c":3}']


async def test_a_line_over_the_limit_ends_the_input_and_nothing_after_it_is_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(front, "LINE_LIMIT", 64)
    taken: list[bytes] = []
    lines = _Lines(lambda line: taken.append(line))
    async with agent_pipe(lines) as agent:
        agent.write(b'{"first":1}\n' + b"x" * 100 + b'\n{"after":2}\n')
        await until_ended(lines)
    assert taken == [b'{"first":1}\n']


async def test_stdin_is_not_read_while_the_library_has_a_backlog_and_is_read_again_once_it_drains() -> None:
    lines = _Lines(lambda line: line)  # every line is a message for the library
    count = 4 * LIBRARY_BACKLOG
    async with agent_pipe(lines) as agent:
        for n in range(count):
            agent.write(b'{"n":%d}\n' % n)
        agent.close()
        taken: list[bytes] = []
        paused = False
        for _ in range(POLL_CAP):  # each turn is a chunk read: only a hung test reaches the cap
            if lines.ended and not lines.library:
                break
            await until_set(lines.more, "more of the pipe read")
            lines.more.clear()
            paused = paused or lines.paused
            while lines.library:
                taken.append(lines.library.popleft())
                assert lines.transport is not None
                lines.resume_if_drained(lines.transport)
        else:
            raise AssertionError(f"the pipe did not end after {POLL_CAP} chunks")
    assert paused
    assert taken == [b'{"n":%d}\n' % n for n in range(count)]


async def test_a_line_whose_handling_fails_is_lost_alone_and_the_lines_after_it_are_taken() -> None:
    taken: list[bytes] = []

    def take(line: bytes) -> None:
        if b"boom" in line:
            raise RuntimeError("a bug in one line's handling")
        taken.append(line)

    lines = _Lines(take)
    async with agent_pipe(lines) as agent:
        agent.write(b'{"a":1}\n{"boom":2}\n{"c":3}\n')
        agent.close()
        await until_ended(lines)
    assert taken == [b'{"a":1}\n', b'{"c":3}\n']


class _Transport:
    def pause_reading(self) -> None: ...


def test_a_line_arriving_in_many_pieces_without_a_newline_is_taken_whole_once_it_ends() -> None:
    taken: list[bytes] = []
    lines = _Lines(lambda line: taken.append(line))
    lines.connection_made(_Transport())
    for piece in (b'{"text":"', b"a" * 1000, b"b" * 1000, b'"}'):
        lines.data_received(piece)
    assert taken == []
    lines.data_received(b'\n{"next":')
    lines.eof_received()
    assert taken == [b'{"text":"' + b"a" * 1000 + b"b" * 1000 + b'"}\n', b'{"next":']


def test_a_line_growing_past_the_limit_in_pieces_ends_the_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(front, "LINE_LIMIT", 64)
    taken: list[bytes] = []
    lines = _Lines(lambda line: taken.append(line))
    lines.connection_made(_Transport())
    for piece in (b'{"first":1}\n', b"x" * 40, b"x" * 40, b'\n{"after":2}\n'):
        lines.data_received(piece)
    assert taken == [b'{"first":1}\n']
    assert lines.ended
