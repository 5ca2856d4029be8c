"""A journal object over max_journal_bytes is told by its canonical size, even where the gateway
skips measuring it exactly (a journal far below the limit)."""

from __future__ import annotations

from typing import Any

import pytest

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.gateway.replies import oversized as _oversize

JOURNALS: dict[str, Any] = {
    "plain": {
        "v": 1,
        "effect": {"resource": "crm://deals/D-881", "version": 7},
        "undo": {"kind": "compensate"},
    },
    "non-ASCII text": {"note": "Zürich — 東京 😀", "tags": ["ü" * 40]},
    "floats written longer in canonical form": {"amounts": [1e20, 1.5e19, -1e16, 1e-7, 0.1, -0.0, 1.0]},
    "escapes": {"text": 'line\nbreak\t"quoted"\\ \u0001 /'},
    "not an object": [1, "two", None, True, 3.5e20],
}


@pytest.mark.parametrize("journal", JOURNALS.values(), ids=list(JOURNALS))
def test_a_journal_is_kept_up_to_its_canonical_size_and_summarized_one_byte_over(journal: Any) -> None:
    size = len(canonical_bytes(journal))
    assert _oversize(journal, size) is None
    over = _oversize(journal, size - 1)
    assert over is not None
    assert over["bytes"] == size
