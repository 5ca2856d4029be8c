"""Whether a process still runs: what frees a lease or a claim its holder left behind (run keys,
the fleet lease, the undo lease)."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (a lease's holder, say)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True
