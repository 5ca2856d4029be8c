"""verify_record never raises: malformed input of any shape is reported as MALFORMED (or another code)."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from record_helpers import fill, pins, server_pins

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.record import Check, RunStore, verify_record
from hatp_journal.toolkit.signing import SigningKey

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


@pytest.fixture
def exported(store: RunStore, server_key: SigningKey) -> dict[str, Any]:
    run = store.open_run(agent="sales-bot", principal="dana")
    fill(store, run.id, 6, server_key)
    return json.loads(store.export(run.id, {"crm": [server_key.public]}).to_bytes())


@pytest.mark.parametrize(
    "file",
    [
        b"",
        b"{",
        b"[]",
        b"null",
        b'{"format": NaN}',
        b"\xff\xfe{}",
        b"[" * 100_000 + b"]" * 100_000,
        "\ud800",
        {},
        [],
        None,
        42,
        {"format": "hatp-run-record/1"},
        {"format": "hatp-run-record/2", "run": {}, "entries": [], "checkpoints": [], "recorderKey": {}},
    ],
    ids=lambda value: repr(value)[:24],
)
def test_input_that_is_not_a_run_record_is_reported_as_malformed(file: Any, store: RunStore) -> None:
    report = verify_record(file, recorder_keys=pins(store))

    assert not report.ok
    assert report.codes() == {Check.MALFORMED}
    if isinstance(file, bytes):
        assert verify_record(io.BytesIO(file), recorder_keys=pins(store)) == report


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("entries", 0, "seq"), "1"),
        (("entries", 0, "seq"), True),
        (("entries", 0, "seq"), 0),
        (("entries", 1, "body"), []),
        (("entries", 2), None),
        (("checkpoints", 0, "receipt"), {"kid": 1}),
        (("checkpoints", 0, "size"), -1),
        (("run", "id"), ""),
        (("recorderKey",), "key"),
        (("serverKeys", "crm"), {"kid": "k"}),
    ],
)
def test_fields_of_the_wrong_type_are_reported_as_malformed(
    path: tuple[Any, ...], value: Any, exported: dict[str, Any], store: RunStore
) -> None:
    *parents, last = path
    target: Any = exported
    for part in parents:
        target = target[part]
    target[last] = value

    assert verify_record(exported, recorder_keys=pins(store)).codes() == {Check.MALFORMED}


def test_body_values_outside_canonical_json_are_reported_not_raised(
    exported: dict[str, Any], store: RunStore
) -> None:
    exported["entries"][1]["body"]["huge"] = 2**80
    exported["entries"][2]["body"]["nan"] = float("nan")

    report = verify_record(exported, recorder_keys=pins(store))

    assert {(p.entry, p.check) for p in report.problems} >= {("e2", Check.MALFORMED), ("e3", Check.MALFORMED)}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), replacement=JSON)
def test_any_value_put_anywhere_in_a_record_is_reported_and_never_raises(
    data: st.DataObject, replacement: Any, exported: dict[str, Any], store: RunStore, server_key: SigningKey
) -> None:
    record = json.loads(json.dumps(exported))
    target: Any = record
    path = []
    while True:
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        key = data.draw(st.sampled_from(keys))
        path.append(key)
        child = target[key]
        if not isinstance(child, dict | list) or not child or data.draw(st.booleans()):
            break
        target = child
    if target[key] == replacement:
        return
    target[key] = replacement

    report = verify_record(record, recorder_keys=pins(store), server_keys=server_pins(server_key))

    # Shipped server keys are informational (receipts use the pinned ones): dropping them is no attack.
    assert not report.ok or path[0] == "serverKeys"
    try:
        data = canonical_bytes(record)
    except (ValueError, TypeError):
        return  # NaN, an integer beyond 2^53: no file holds it
    streamed = verify_record(io.BytesIO(data), recorder_keys=pins(store), server_keys=server_pins(server_key))
    assert streamed == verify_record(data, recorder_keys=pins(store), server_keys=server_pins(server_key))


D881 = json.loads(
    (Path(__file__).resolve().parents[3] / "docs" / "examples" / "d881" / "run-record.json").read_bytes()
)


def paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value``."""
    found = [here]
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths(child, (*here, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths(child, (*here, index))
    return found


BODY_PATHS = [(n, path) for n, entry in enumerate(D881["entries"]) for path in paths(entry["body"]) if path]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=st.sampled_from(BODY_PATHS), value=JSON)
def test_any_value_put_anywhere_in_a_real_d881_body_is_reported_naming_an_entry_and_never_raises(
    where: tuple[int, tuple[Any, ...]], value: Any
) -> None:
    n, path = where
    record = copy.deepcopy(D881)
    target: Any = record["entries"][n]["body"]
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value

    report = verify_record(record)

    assert all(problem.entry is not None for problem in report.problems if problem.check != Check.MALFORMED)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda e: e.pop("time"), Check.MALFORMED),
        (lambda e: e.update(extra=1), Check.MALFORMED),
        (lambda e: e.update(seq="6"), Check.MALFORMED),
        (lambda e: e.update(kind="plan-of-attack"), Check.UNKNOWN_KIND),
        (lambda e: e["body"].update(checks=[]), Check.BAD_BODY),
        (lambda e: e["body"].update(plan="all of it"), Check.BAD_BODY),
    ],
    ids=[
        "missing member",
        "extra member",
        "wrong type",
        "unknown kind",
        "checks not an object",
        "plan not an object",
    ],
)
def test_an_entry_of_the_wrong_shape_gets_a_code_naming_it(change: Any, code: Check) -> None:
    record = copy.deepcopy(D881)
    plan = next(e for e in record["entries"] if e["kind"] == "plan")
    change(plan)

    report = verify_record(record)

    assert (plan.get("id", "e6"), code) in {(p.entry, p.check) for p in report.problems}
