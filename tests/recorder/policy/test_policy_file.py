"""A policy file with errors is refused, naming the file and the line; what it leaves out asks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hatp_journal._shared.files import MAX_TEXT_BYTES
from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.policy import Policy, PolicyFileError, load_policy, parse_policy

EXAMPLE = Path(__file__).parents[3] / "docs" / "examples" / "policy.json"
GOOD = """{
  "autonomy": {
    "compensate": "allow",
    "none": "ask",
    "money": {
      "perRun": {
        "amount": "500",
        "currency": "USD"
      }
    }
  }
}
"""


def refused(tmp_path: Path, text: str | bytes) -> PolicyFileError:
    path = tmp_path / "policy.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyFileError) as caught:
        load_policy(path)
    assert str(caught.value).startswith(f"{path}:{caught.value.line}:")
    return caught.value


def test_a_json_syntax_error_names_its_line(tmp_path: Path) -> None:
    broken = GOOD.replace('"allow",', '"allow"')  # missing comma after line 3

    assert refused(tmp_path, broken).line == 4


def test_a_wrong_type_at_the_per_run_amount_names_the_line_of_that_key(tmp_path: Path) -> None:
    error = refused(tmp_path, GOOD.replace('"amount": "500"', '"amount": 500'))

    assert (error.line, error.column) == (7, 9)
    assert error.message.startswith("autonomy.money.perRun.amount:")


def test_an_unknown_action_names_its_line(tmp_path: Path) -> None:
    assert refused(tmp_path, GOOD.replace('"none": "ask"', '"none": "maybe"')).line == 4


def test_a_duplicate_key_is_refused_at_its_second_occurrence(tmp_path: Path) -> None:
    text = GOOD.replace('    "none": "ask",\n', '    "none": "ask",\n    "none": "allow",\n')

    assert refused(tmp_path, text).line == 5


def test_a_second_document_after_the_policy_is_refused_at_its_line(tmp_path: Path) -> None:
    error = refused(tmp_path, GOOD + '{"autonomy": {"none": "allow"}}\n')

    assert (error.line, error.column) == (13, 1)
    assert "extra data" in error.message.lower()


def test_a_misspelt_key_is_refused_at_its_line_instead_of_being_ignored(tmp_path: Path) -> None:
    assert refused(tmp_path, GOOD.replace('"none"', '"nnoe"')).line == 4


def test_python_style_key_names_are_refused(tmp_path: Path) -> None:
    text = GOOD.replace('"none": "ask",', '"none": "ask", "min_window_seconds": 5,')

    assert refused(tmp_path, text).line == 4


def test_a_string_where_a_number_belongs_is_not_coerced(tmp_path: Path) -> None:
    assert (
        refused(tmp_path, GOOD.replace('"none": "ask",', '"none": "ask", "minWindowSeconds": "5",')).line == 4
    )


def test_not_a_number_is_refused_with_its_line(tmp_path: Path) -> None:
    assert (
        refused(tmp_path, GOOD.replace('"none": "ask",', '"none": "ask",\n"minWindowSeconds": NaN,')).line
        == 5
    )


def test_a_period_in_months_is_refused_because_its_length_depends_on_the_calendar(tmp_path: Path) -> None:
    text = GOOD.replace(
        '"currency": "USD"\n      }', '"currency": "USD"\n      },\n "perPeriod": {"period": "P1M",'
    )
    text = text.replace('"P1M",', '"P1M", "amount": "1", "currency": "USD"}')

    assert refused(tmp_path, text).line == 10


def test_an_override_without_a_timezone_or_without_who_decided_it_is_refused(tmp_path: Path) -> None:
    override = {"server": "crm", "tool": "t", "action": "allow", "from": "2026-11-01T00:00:00", "reason": "r"}
    text = '{\n"overrides": [\n' + json.dumps(override) + "\n]}"

    error = refused(tmp_path, text)

    assert error.line == 3
    assert len(error.problems) == 2  # the naive time and the missing "by"


def test_every_problem_is_listed_earliest_first(tmp_path: Path) -> None:
    text = GOOD.replace('"none": "ask"', '"none": "maybe"').replace('"500"', "500")

    error = refused(tmp_path, text)

    assert [problem.line for problem in error.problems] == [4, 7]
    assert len(str(error).splitlines()) == 2


def run_tick(folder: Path, policy: bytes | None) -> int:
    """``hatp-recorder tick`` with ``policy`` as its policy file (None: a folder in its place)."""
    (folder / "recorder.toml").write_text(
        '[recorder]\npolicy = "policy.json"\ndirectory = "directory.json"\n'
        '[servers.crm]\ncommand = "hatp-crm"\n'
    )
    (folder / "directory.json").write_text('{"people": []}')
    if policy is None:
        (folder / "policy.json").mkdir()
    else:
        (folder / "policy.json").write_bytes(policy)
    return main(["--config", str(folder / "recorder.toml"), "tick"])


DEEP = 100_000  # deeper than the standard parser can recurse


@pytest.mark.parametrize(
    ("policy", "line"),
    [
        (b'{\n"undoAuthority": "\xff"}', 2),
        (b" " * (MAX_TEXT_BYTES + 1), 1),
        (b'{\n"autonomy":\n' + b"[" * DEEP + b"]" * DEEP + b"}", 3),
        (b'{\n"autonomy":\n' + b'{"a": ' * DEEP + b"1" + b"}" * DEEP + b"}", 3),
        (None, 1),
        (b"\n\n", 1),
        (GOOD.replace('"allow",', '"allow"').encode(), 4),
        (GOOD.replace('"amount": "500"', '"amount": 500').encode(), 7),
    ],
    ids=[
        "not-utf8",
        "too-large",
        "arrays-too-deep",
        "objects-too-deep",
        "folder",
        "empty",
        "syntax",
        "shape",
    ],
)
def test_a_policy_file_that_cannot_be_used_stops_the_recorder_with_exit_2_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: bytes | None, line: int
) -> None:
    assert run_tick(tmp_path, policy) == 2

    [said] = capsys.readouterr().err.splitlines()
    assert said.startswith(f"hatp-recorder: error: {tmp_path / 'policy.json'}:{line}:")


def test_a_policy_file_that_starts_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    assert run_tick(tmp_path, b"\xef\xbb\xbf" + GOOD.encode()) == 0


def test_a_missing_file_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError) as caught:
        load_policy(tmp_path / "absent.json")

    assert caught.value.path == str(tmp_path / "absent.json")


def test_a_top_level_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    assert refused(tmp_path, "[]").line == 1


def test_an_empty_policy_asks_for_every_kind_of_call() -> None:
    autonomy = parse_policy("{}").autonomy

    assert {autonomy.compensate, autonomy.none, autonomy.unknown, autonomy.read, autonomy.via.ui} == {"ask"}


def test_the_digest_covers_the_effective_policy_not_the_file_layout() -> None:
    compact = parse_policy(json.dumps(json.loads(GOOD), separators=(",", ":"), sort_keys=True))
    explicit_defaults = parse_policy('{"autonomy": {"read": "ask"}, "overrides": []}')

    assert parse_policy(GOOD).digest() == compact.digest()
    assert parse_policy("{}").digest() == explicit_defaults.digest()
    assert parse_policy(GOOD).digest() != parse_policy(GOOD.replace('"500"', '"501"')).digest()


def test_a_changed_copy_of_a_policy_gets_its_own_digest() -> None:
    policy = parse_policy(GOOD)
    before = policy.digest()

    stricter = policy.model_copy(
        update={"autonomy": policy.autonomy.model_copy(update={"compensate": "ask"})}
    )

    assert stricter.digest() != before
    assert stricter.digest() == parse_policy(GOOD.replace('"allow"', '"ask"')).digest()


def test_the_example_file_and_its_wire_form_are_the_same_policy() -> None:
    policy = load_policy(EXAMPLE)

    assert parse_policy(json.dumps(policy.canonical())) == policy
    assert isinstance(policy, Policy)


def leaf_paths(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in leaf_paths(item, (*path, key))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in leaf_paths(item, (*path, index))]
    return [path]


EXAMPLE_JSON = json.loads(EXAMPLE.read_text(encoding="utf-8"))


@given(leaf=st.sampled_from(leaf_paths(EXAMPLE_JSON)), indent=st.integers(min_value=1, max_value=4))
def test_a_wrong_value_at_any_key_of_the_example_is_reported_at_that_key(
    leaf: tuple[str | int, ...], indent: int
) -> None:
    document = json.loads(json.dumps(EXAMPLE_JSON))
    parent = document
    for part in leaf[:-1]:
        parent = parent[part]
    parent[leaf[-1]] = ["__BAD__"]  # no leaf of a policy may be an array
    text = json.dumps(document, indent=indent)
    bad_value_line = next(number for number, line in enumerate(text.splitlines(), 1) if "__BAD__" in line)

    with pytest.raises(PolicyFileError) as caught:
        parse_policy(text)

    # json.dumps puts the array's first element on the line after its key.
    assert {problem.line for problem in caught.value.problems} == {bad_value_line - 1}
