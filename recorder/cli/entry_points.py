"""The Recorder's console scripts (pyproject.toml): `hatp-recorder web` names the `web` extra if missing."""

from __future__ import annotations

from hatp_journal._shared.extras import needs_extras


@needs_extras
def recorder(argv: list[str] | None = None) -> int:
    """``hatp-recorder``."""
    # lazy: an entry point checks the extras (needs_extras) before anything that needs them loads
    from hatp_journal.recorder.cli.command_line import main

    return main(argv)


@needs_extras
def witness(argv: list[str] | None = None) -> int:
    """``hatp-witness`` (its ``serve`` needs the ``serve`` extra: starlette and uvicorn)."""
    # lazy: as above
    from hatp_journal.recorder.witness.cli import main

    return main(argv)
