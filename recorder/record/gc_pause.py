"""Reading many entries at once without the cyclic garbage collector walking them again and again.

Parsing a long run makes hundreds of thousands of small dicts, lists and strings, none of them
garbage. Each time enough of them are made the collector walks the objects made so far (and now
and then every object in the process): at 10k entries about a third of a plan's CPU time went on
collections that freed nothing. Reference counting frees everything as usual either way; these
only spare the collector's walks over objects known to be alive.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off for the ``with`` block, on again after it if it was on before.

    Only around synchronous work (no ``await`` inside): other tasks of the event loop cannot
    run, and leave cycles behind, while it is off. Other threads do run; their cycles wait for the
    first collection after the block. Nested pauses leave it to the outermost.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


@contextmanager
def gc_frozen() -> Iterator[None]:
    """Every object alive now sits out the collections made during the block (``gc.freeze``), and
    rejoins the oldest generation after it.

    For a block that awaits (a plan's ``check`` calls) while holding a large graph made just
    before: the collector keeps running for what the block and other tasks make, without walking
    that graph each time. A cycle that was garbage already is collected after the block instead.
    An inner block's end lets the outer one's objects rejoin early: slower, never wrong.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
