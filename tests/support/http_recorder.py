"""``hatp-recorder serve --transport http`` as a process of its own, on a free port."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.ports import free_port

RECORDER = [sys.executable, "-m", "hatp_journal.recorder.cli.command_line"]


def start_http_recorder(config: Path | str, cwd: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start a Recorder over streamable HTTP with ``config`` (relative to ``cwd`` if relative): its
    process, stderr piped, and its port. It may not listen yet: ``support.ports.wait_listening``."""
    port = free_port()
    process = subprocess.Popen(
        [*RECORDER, "--config", str(config), "serve", "--transport", "http", "--port", str(port)],
        cwd=cwd,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return process, port
