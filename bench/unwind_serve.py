"""unwind-mcp's ``unwind serve`` with a configuration read from a JSON file (the latency bench's peer).

``python unwind_serve.py CONFIG.json COMMAND [ARG ...]``, run with the Python that has unwind-mcp
installed (the one named on the first line of its ``unwind`` script). unwind-mcp 0.1.0 reads no
configuration file: its settings are the fields of its ``UnwindConfig`` dataclass, and ``unwind serve``
takes its defaults. Those block what the bench does: a tool in none of its classification sets is an
"unknown actuator" held for confirmation, tools it does not know are hidden from ``tools/list``, and
its circuit breaker blocks more than 5 state-modifying calls in 5 seconds. So this starts the same
proxy (``run_stdio_proxy``, after the same start-up validation) with the fields in CONFIG.json
changed: a list is added to the tool set of that name, any other value replaces the default. The
event database goes under ``UNWIND_HOME`` as usual.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import sys
from pathlib import Path


def configured(path: Path):
    """unwind-mcp's default configuration with the changes in ``path``."""
    from unwind.config import UnwindConfig
    from unwind.startup_validator import validate_and_enforce

    config = UnwindConfig()
    fields = {field.name for field in dataclasses.fields(config)}
    for name, value in json.loads(path.read_text()).items():
        if name not in fields:
            raise SystemExit(f"unwind_serve.py: unwind-mcp has no setting {name!r}")
        if isinstance(value, list):
            value = getattr(config, name) | frozenset(value)
        setattr(config, name, value)
    validate_and_enforce(config)
    return config


def main() -> None:
    """Serve the upstream command behind unwind-mcp, configured from the file given first."""
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    config = configured(Path(sys.argv[1]))
    from unwind.transport.stdio import run_stdio_proxy

    # Warnings only, as every variant of the bench runs (`unwind serve` logs its start-up at INFO;
    # it logs nothing per allowed call either way).
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    asyncio.run(run_stdio_proxy(config, sys.argv[2:]))


if __name__ == "__main__":
    main()
