"""Ports on 127.0.0.1 for servers a test starts as processes, and waiting for one to listen."""

from __future__ import annotations

import socket
import subprocess
from functools import partial

from support.waiting import wait_until


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def listening(port: int) -> bool:
    """Whether something accepts connections on ``port`` of 127.0.0.1."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def running(process: subprocess.Popen[bytes]) -> bool:
    return process.poll() is None


def wait_listening(port: int, process: subprocess.Popen[bytes], what: str = "the server") -> None:
    """Wait until ``process`` listens on ``port``, for as long as it runs (no clock deadline)."""
    wait_until(partial(listening, port), f"{what} to listen on port {port}", alive=partial(running, process))
