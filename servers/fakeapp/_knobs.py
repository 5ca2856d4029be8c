"""The switches tests and server authors turn at run time (see the README's "Knobs")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeGuard

Layout = Literal["a", "b"]
LAYOUTS: Final[tuple[Layout, ...]] = ("a", "b")


def is_layout(value: object) -> TypeGuard[Layout]:
    """Whether ``value`` names a layout (``"a"`` or ``"b"``)."""
    return value in LAYOUTS


@dataclass
class Knobs:
    """Mutable run-time settings read on every request.

    ``layout`` picks the page layout; ``faulty_restore`` makes Restore report success while
    leaving the invoice in Trash. Plain attribute writes, so a test thread can flip them while the
    server thread serves.
    """

    layout: Layout = "a"
    faulty_restore: bool = False
