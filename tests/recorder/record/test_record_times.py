"""A Run Record's times are exactly ``YYYY-MM-DDTHH:MM:SSZ``: a real UTC time, nothing around it."""

from __future__ import annotations

import pytest

from hatp_journal.recorder.record.times import is_wire_time


@pytest.mark.parametrize("value", ["2026-12-04T04:03:52Z", "2028-02-29T23:59:59Z"])
def test_a_real_time_written_the_one_way_is_a_time(value: str) -> None:
    assert is_wire_time(value)


@pytest.mark.parametrize(
    "value",
    [
        "2026-12-04T04:03:52Z\n",  # a line break after it (``$`` matched before it)
        "2026-12-04T04:03:52+00:00",
        "2026-12-04T04:03:52.5Z",
        "2026-13-04T04:03:52Z",
        "2026-12-04T23:59:60Z",
        "٢٠٢٦-12-04T04:03:52Z",  # digits, but not ASCII ones
        " 2026-12-04T04:03:52Z",
        None,
    ],
)
def test_anything_else_is_not(value: object) -> None:
    assert not is_wire_time(value)
