"""Where the MCP servers written by others live once ``make setup`` installed them, and how to
start each one over stdio. Without them a test skips with the install hint, or fails under CI=true.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from fastmcp.client.transports import StdioTransport

ROOT = Path(__file__).resolve().parents[2]
THIRD_PARTY = ROOT / "third_party"
NODE_BIN = THIRD_PARTY / "node_modules" / ".bin"
SQLITE_VENV = THIRD_PARTY / "sqlite" / ".venv"
FETCH_VENV = THIRD_PARTY / "fetch" / ".venv"
CHROMIUM = Path("/usr/bin/chromium")  # Debian's; Playwright's server downloads no browser here
INSTALL_HINT = "run `make setup` (it needs Node.js and npm: apt-get install nodejs npm, as root)"


def require(path: Path, environ: Mapping[str, str] = os.environ) -> Path:
    """``path`` if it is installed; otherwise skip the test, or fail it under CI=true."""
    if path.exists():
        return path
    message = f"{path} is missing: {INSTALL_HINT}"
    if environ.get("CI") == "true":
        pytest.fail(f"{message}; the third-party servers must run in CI", pytrace=False)
    pytest.skip(message)


def filesystem_server(*allowed: Path) -> StdioTransport:
    """The reference filesystem server, allowed to touch only ``allowed`` directories."""
    command = require(NODE_BIN / "mcp-server-filesystem")
    return StdioTransport(str(command), [str(path) for path in allowed], keep_alive=False)


def everything_server() -> StdioTransport:
    """The reference server that exercises every MCP feature (tools, resources, prompts, ...)."""
    command = require(NODE_BIN / "mcp-server-everything")
    return StdioTransport(str(command), ["stdio"], keep_alive=False)


def sqlite_server(db: Path) -> StdioTransport:
    """The SQLite server (MCP SDK 1.x), from its own virtual environment, on the file ``db``."""
    command = require(SQLITE_VENV / "bin" / "mcp-server-sqlite")
    return StdioTransport(str(command), ["--db-path", str(db)], keep_alive=False)


def fetch_args() -> list[str]:
    """How the fetch server is started in tests: the pages it reads are served on this machine,
    which it refuses unless told (it guards against reaching private addresses)."""
    return ["--allow-private-ips"]


def served(listed: Mapping[str, Any], server: str) -> dict[str, Any]:
    """The tools of ``server`` among those the Recorder ``listed`` to the agent, by their own names."""
    prefix = f"{server}_"
    return {name.removeprefix(prefix): tool for name, tool in listed.items() if name.startswith(prefix)}


def fetch_env() -> dict[str, str]:
    """The fetch server's environment in tests: a PATH without Node.js. With ``npm`` on its PATH,
    the page extractor it uses (readabilipy) runs ``npm install`` of unpinned packages into its own
    folder on the first page; without, it extracts in Python, as it does on a machine without Node."""
    return {"PATH": str(FETCH_VENV / "bin")}


def playwright_args(output: Path) -> list[str]:
    """How Playwright's browser server is started in tests: Debian's Chromium, headless, a profile
    kept in memory, and files it writes kept in ``output``. As root Chromium runs only without its
    sandbox."""
    chromium = require(CHROMIUM)
    args = ["--headless", "--isolated", "--executable-path", str(chromium), "--output-dir", str(output)]
    return [*args, "--no-sandbox"] if os.geteuid() == 0 else args
