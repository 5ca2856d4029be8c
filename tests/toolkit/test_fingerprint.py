"""Record fingerprints read from ARIA snapshots, without a browser (the browser tests are in
tests/servers/ui). The snapshots here are copied from Playwright's output for the fake app."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hatp_journal.toolkit._aria import AriaNode, AriaSnapshotError, parse_aria_snapshot
from hatp_journal.toolkit._fingerprint import record_in_table
from hatp_journal.toolkit.ui import RecordReadError, RecordView, record_fingerprint

LAYOUT_A = """- table "Invoices":
  - rowgroup:
    - row "Invoice Customer Amount Status Actions":
      - columnheader "Invoice"
      - columnheader "Customer"
      - columnheader "Amount"
      - columnheader "Status"
      - columnheader "Actions"
  - rowgroup:
    - row "INV-0001":
      - rowheader "INV-0001"
      - 'cell "Hooli: \\"West\\" #1 \\\\ ''q''"'
      - cell "1200.00"
      - cell "Draft"
      - cell "Edit Send invoice Delete":
        - link "Edit":
          - /url: /invoices/INV-0001/edit
        - button "Send invoice"
        - button "Delete"
    - row "INV-0002":
      - rowheader "INV-0002"
      - cell "- true"
      - cell "450.00"
      - cell "Sent"
      - cell "Edit Delete":
        - link "Edit":
          - /url: /invoices/INV-0002/edit
        - button "Delete"
"""

LAYOUT_B = """- table "Invoices":
  - rowgroup:
    - row "Status Customer Amount Invoice Actions":
      - columnheader "Status"
      - columnheader "Customer"
      - columnheader "Amount"
      - columnheader "Invoice"
      - columnheader "Actions"
  - rowgroup:
    - row "INV-0001":
      - cell "Draft"
      - 'cell "Hooli: \\"West\\" #1 \\\\ ''q''"'
      - cell "1200.00"
      - cell "INV-0001"
      - cell "Delete Send invoice Edit":
        - button "Delete"
        - button "Send invoice"
        - link "Edit":
          - /url: /invoices/INV-0001/edit
"""


def table(snapshot: str) -> AriaNode:
    [node] = parse_aria_snapshot(snapshot)
    return node


def test_a_record_is_read_by_column_header_with_playwrights_quoting_undone() -> None:
    view = record_in_table(table(LAYOUT_A), "INV-0001")

    assert view == RecordView(
        id="INV-0001",
        table="Invoices",
        fields={
            "Invoice": "INV-0001",
            "Customer": "Hooli: \"West\" #1 \\ 'q'",
            "Amount": "1200.00",
            "Status": "Draft",
        },
    )


def test_the_same_record_in_the_other_layout_has_the_same_fingerprint() -> None:
    a = record_in_table(table(LAYOUT_A), "INV-0001")
    b = record_in_table(table(LAYOUT_B), "INV-0001")

    assert a is not None
    assert b is not None
    assert a.fingerprint == b.fingerprint
    assert re.fullmatch(r"fp-[0-9a-f]{32}", a.fingerprint)


def test_a_row_that_is_not_shown_reads_as_none() -> None:
    assert record_in_table(table(LAYOUT_A), "INV-0009") is None


def test_a_fingerprint_is_the_hash_of_the_canonical_view() -> None:
    view = RecordView(id="INV-0002", table="Trash", fields={"Status": "Sent", "Amount": "450.00"})

    assert record_fingerprint(view) == view.fingerprint
    assert view.wire() == {
        "id": "INV-0002",
        "table": "Trash",
        "fields": {"Status": "Sent", "Amount": "450.00"},
    }


@pytest.mark.parametrize(
    ("snapshot", "problem"),
    [
        (LAYOUT_A + '    - row "INV-0001":\n      - rowheader "INV-0001"', "2 rows named"),
        (
            '- table "T":\n  - row "H":\n    - columnheader "A"\n    - columnheader "A"\n'
            '  - row "INV-0001":\n    - cell "1"\n    - cell "2"',
            "repeated column headers",
        ),
        (
            '- table "T":\n  - row "H":\n    - columnheader "A"\n  - row "INV-0001":\n    - cell "1"\n'
            '    - cell "2"',
            "2 cells under 1",
        ),
        ('- table "T":\n  - row "INV-0001":\n    - cell "1"', "no column headers"),
    ],
)
def test_a_record_that_cannot_be_read_unambiguously_is_refused(snapshot: str, problem: str) -> None:
    with pytest.raises(RecordReadError, match=problem):
        record_in_table(table(snapshot), "INV-0001")


def test_text_values_are_unescaped_as_playwright_escapes_them() -> None:
    snapshot = '- paragraph: "a\\x07b \\"q\\" \\\\ \\n"\n- text: "- item: x"\n- heading "T" [level=1]'
    nodes = parse_aria_snapshot(snapshot)

    assert [(n.role, n.name, n.text) for n in nodes] == [
        ("paragraph", "", 'a\x07b "q" \\ \n'),
        ("text", "", "- item: x"),
        ("heading", "T", None),
    ]


@pytest.mark.parametrize(
    "snapshot",
    [
        "table",
        '- \'cell "x"',
        '- cell "x" extra',
        "- cell /x/",
        "    - cell",
        '- cell "unterminated',
        '- p: "\\q"',
    ],
)
def test_lines_playwright_would_not_write_are_refused(snapshot: str) -> None:
    with pytest.raises(AriaSnapshotError):
        parse_aria_snapshot(snapshot)


# -- the parser against Playwright's own writing rules (ariaSnapshotRenderer.ts, 1.65) ---------


def _needs_quotes(text: str) -> bool:
    return bool(
        not text
        or re.search(r"^\s|\s$", text)
        or re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", text)
        or text.startswith("-")
        or re.search(r"[\n:](\s|$)", text)
        or re.search(r"\s#", text)
        or re.search(r"[\n\r]", text)
        or re.match(r"[&*\],?!>|@\"'#%]", text)
        or re.search(r"[{}`]", text)
        or text.startswith("[")
        or _is_number(text)
        or text.lower() in {"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"}
        or re.fullmatch(r"[-+]?\.(inf|nan)", text, re.I)
    )


def _is_number(text: str) -> bool:
    try:
        float(text.strip() or "x")
    except ValueError:
        return False
    return True


def playwright_key(role: str, name: str) -> str:
    key = f"{role} {json.dumps(name, ensure_ascii=False)}" if name else role
    return "'" + key.replace("'", "''") + "'" if _needs_quotes(key) else key


visible_text = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\u2028\u2029"), max_size=40
)


@given(names=st.lists(visible_text, min_size=1, max_size=5))
def test_any_cell_names_playwright_writes_parse_back_exactly(names: list[str]) -> None:
    headers = [f"Column {i}" for i in range(len(names))]
    lines = ['- table "T":', '  - row "H":']
    lines += [f"    - {playwright_key('columnheader', header)}" for header in headers]
    lines += ['  - row "R-1":'] + [f"    - {playwright_key('cell', name)}" for name in names]

    view = record_in_table(table("\n".join(lines)), "R-1")

    assert view is not None
    assert list(view.fields.values()) == names


columns = st.sampled_from(["Invoice", "Customer", "Amount", "Status"])
fields = st.dictionaries(columns, visible_text, min_size=1)


@given(fields=fields, column=st.integers(min_value=0), new=visible_text)
def test_changing_any_visible_value_changes_the_fingerprint(
    fields: dict[str, str], column: int, new: str
) -> None:
    name = sorted(fields)[column % len(fields)]
    changed = {**fields, name: new}
    before = RecordView("INV-0001", "Invoices", fields)
    after = RecordView("INV-0001", "Invoices", changed)

    assert (before.fingerprint == after.fingerprint) == (fields == changed)


@given(fields=fields)
def test_the_order_of_columns_does_not_change_the_fingerprint(fields: dict[str, str]) -> None:
    reordered = dict(reversed(list(fields.items())))

    assert (
        RecordView("INV-0001", "Invoices", fields).fingerprint
        == RecordView("INV-0001", "Invoices", reordered).fingerprint
    )
    assert (
        RecordView("INV-0001", "Trash", fields).fingerprint
        != RecordView("INV-0001", "Invoices", fields).fingerprint
    )
