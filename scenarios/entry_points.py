"""The stories' console script (pyproject.toml): ``hatp-demo`` needs the ``demo`` extra."""

from __future__ import annotations

from collections.abc import Sequence

from hatp_journal._shared.extras import needs_extras, require_extra


@needs_extras
def demo(argv: Sequence[str] | None = None) -> int:
    """``hatp-demo``: the extra is checked once the arguments are read (``--help`` needs none) and
    before a story starts, since a story starts its servers before it reaches a missing part."""
    from hatp_journal.scenarios.cli import _parser, main

    _parser().parse_args(argv)
    require_extra("demo")
    return main(argv)
