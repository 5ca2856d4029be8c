"""Commands and stores that need an optional part say which extra to install, not a traceback.

The toolkit installs with what a server author needs to declare, run and test journaled tools;
serving them over MCP, the demo servers, the Recorder's web pages, the browser and PostgreSQL are
extras of the ``hatp-journal`` package (docs/install.md). A command that reaches a module of a
missing extra prints ``MISSING_EXTRA`` with the ``pip install`` line that brings it, and exits 2.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final, ParamSpec

MISSING_EXTRA: Final = "MISSING_EXTRA"
"""Printed (as the code) by a command whose extra is not installed."""

EXTRA_MODULES: Final = {
    "serve": ("fastmcp", "mcp"),
    "servers": ("aiosmtpd", "icalendar"),
    "web": ("jinja2",),
    "browser": ("playwright",),
    "postgresql": ("psycopg",),
    "demo": ("fastmcp", "mcp", "aiosmtpd", "icalendar", "jinja2"),
}
"""The top-level modules each extra brings that the toolkit does not (``demo`` is servers and web,
``servers`` brings ``serve``)."""

EXTRA_OF_MODULE: Final = {
    module: extra for extra, modules in EXTRA_MODULES.items() if extra != "demo" for module in modules
}
"""Which extra to install for a missing module."""


class MissingExtra(ImportError):
    """``extra`` is not installed: its ``module`` (``name``) is missing."""

    def __init__(self, extra: str, module: str) -> None:
        super().__init__(f"the {extra!r} extra is not installed ({module} is missing)", name=module)
        self.extra = extra


def require_extra(extra: str) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` is installed: for a command
    that needs it from the start (and would otherwise fail later, after starting other parts)."""
    for module in EXTRA_MODULES[extra]:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra(extra, module)


def missing_extra(error: ImportError) -> str | None:
    """The extra whose absence caused ``error``, or ``None`` if it is not a missing extra."""
    if isinstance(error, MissingExtra):
        return error.extra
    top = (error.name or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(top)
    if extra is None or importlib.util.find_spec(top) is not None:
        return None  # installed, yet failing to import: a real error, shown as it is
    return extra


Arguments = ParamSpec("Arguments")


def install_hint(extra: str) -> str:
    """How to install ``extra``."""
    return f"pip install 'hatp-journal[{extra}]'"


def needs_extras(command: Callable[Arguments, int]) -> Callable[Arguments, int]:
    """Wrap a console script's ``main`` so a missing extra ends it with ``MISSING_EXTRA`` and exit 2."""

    @functools.wraps(command)
    def run(*args: Arguments.args, **kwargs: Arguments.kwargs) -> int:
        try:
            return command(*args, **kwargs)
        except ImportError as error:
            extra = missing_extra(error)
            if extra is None:
                raise
            program = Path(sys.argv[0]).name
            print(
                f"{program}: {MISSING_EXTRA}: this needs the {extra!r} extra "
                f"({error.name} is not installed): {install_hint(extra)}",
                file=sys.stderr,
            )
            return 2

    return run
