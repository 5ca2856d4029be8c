"""Durations, integers and times are bounded where they enter, so one bad value is refused for what
it came with and never reaches a loop every server or run shares.

A window longer than ``P36500D`` (100 years) — declared by a tool server or written in a policy —
is a ``ValueError`` with its reason, never an ``OverflowError``; a policy integer beyond 2^53 - 1,
of thousands of digits, or a ``…Seconds`` over 100 years is refused at load naming its line; a
configuration whose key file name the file system can't take, or with a 4,400-digit number, is
bad input (exit 2), not a traceback. A value matched by a pattern is matched whole: a trailing
newline is not part of any shape.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP

from hatp_journal._shared.durations import MAX_WINDOW, parse_window
from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.config import check_key_shape
from hatp_journal.recorder.policy import CallFacts, MoneyLedger, Policy, PolicyFileError, decide, parse_policy
from hatp_journal.recorder.testing import recorder_world
from hatp_journal.toolkit.wire import META_KEY, Declaration

pytestmark = pytest.mark.anyio

AT = datetime(2026, 12, 4, 4, 0, tzinfo=UTC)
HUGE_PERIOD = "P9999999999D"


@pytest.mark.parametrize(
    "window",
    [
        HUGE_PERIOD,
        "P36501D",
        "PT9999999999999999999999H",
        "P" + "9" * 5000 + "D",
        10**30,
        1e300,
    ],
)
def test_a_window_longer_than_a_hundred_years_is_a_value_error_not_an_overflow(window: Any) -> None:
    with pytest.raises(ValueError, match=r"is longer than the longest window, P36500D"):
        parse_window(window)


@pytest.mark.parametrize("window", ["P7D\n", "P7D ", "P\u0667D", float("nan"), float("inf")])
def test_a_window_with_a_trailing_newline_or_another_scripts_digits_is_refused(window: Any) -> None:
    with pytest.raises(ValueError, match=r"is not an ISO-8601 duration|must be a finite number"):
        parse_window(window)


def test_the_longest_window_itself_is_taken() -> None:
    assert parse_window("P36500D") == MAX_WINDOW


def declared(window: str) -> Declaration:
    return Declaration.model_validate({"undo": {"kind": "compensate", "window": window, "via": "api"}})


def test_a_declared_window_of_ten_billion_days_is_no_window_and_the_minimum_asks() -> None:
    facts = CallFacts.from_declaration(declared(HUGE_PERIOD), server="shop", tool="put", at=AT)
    policy = Policy.model_validate({"autonomy": {"compensate": "allow", "minWindowSeconds": 3600}})

    decision = decide(policy, facts, MoneyLedger())

    assert facts.window_seconds == 0
    assert decision.action == "ask"
    assert [reason.code for reason in decision.reasons] == ["WINDOW_TOO_SHORT"]


def servers() -> dict[str, FastMCP]:
    """``shop`` declares an undo window of ten billion days; ``notes`` is a plain server beside it."""
    shop, notes = FastMCP("shop"), FastMCP("notes")

    @shop.tool(meta={META_KEY: {"protocol": "hatp/1", "undo": {"kind": "compensate", "window": HUGE_PERIOD}}})
    def put(key: str) -> str:
        return key

    @notes.tool
    def write(text: str) -> str:
        return text

    return {"shop": shop, "notes": notes}


async def test_a_server_declaring_ten_billion_days_does_not_stop_the_recorder_for_the_others(
    tmp_path: Path,
) -> None:
    policy = Policy.model_validate(
        {"autonomy": {"compensate": "allow", "unknown": "allow", "minWindowSeconds": 3600}}
    )
    async with recorder_world(tmp_path, servers(), policy) as world:
        held = await world.agent.call_tool_mcp("shop_put", {"key": "k"})
        written = await world.agent.call_tool_mcp("notes_write", {"text": "hello"})
        kinds = [entry.kind for entry in world.entries()]

    # The keyless shop's declaration counts for nothing (docs/policy.md, precedence): its call is
    # unknown, which this policy allows; what matters here is that the Recorder started and serves both.
    assert not held.is_error
    assert not written.is_error
    assert kinds == ["call", "call"]


POLICY_VALUES = {
    "perPeriod of ten billion days": (
        {"autonomy": {"money": {"perPeriod": {"amount": "5", "currency": "USD", "period": HUGE_PERIOD}}}},
        "autonomy.money.perPeriod.period: window 'P9999999999D' is longer than the longest window",
    ),
    "minWindowSeconds of 2^53": (
        {"autonomy": {"minWindowSeconds": 2**53}},
        "autonomy.minWindowSeconds: 9007199254740992 is an integer beyond 2^53 - 1",
    ),
    "remindBeforeSeconds of 10^30": (
        {"review": {"remindBeforeSeconds": 10**30}},
        "review.remindBeforeSeconds: 10000000000000000000… (31 characters) is an integer beyond 2^53 - 1",
    ),
    "remindBeforeSeconds of 10^15": (
        {"review": {"remindBeforeSeconds": 10**15}},
        "review.remindBeforeSeconds: Input should be less than or equal to 3153600000",
    ),
    "decideWithinSeconds over 100 years": (
        {"autonomy": {"decideWithinSeconds": 3_153_600_001}},
        "autonomy.decideWithinSeconds: Input should be less than or equal to 3153600000",
    ),
}


@pytest.mark.parametrize("name", POLICY_VALUES)
def test_a_policy_value_out_of_bounds_is_refused_at_load_naming_its_key(name: str) -> None:
    policy, said = POLICY_VALUES[name]

    with pytest.raises(PolicyFileError) as refused:
        parse_policy(json.dumps(policy, indent=1), source="policy.json")

    assert said in refused.value.message
    assert str(refused.value).startswith("policy.json:")


def test_a_policy_integer_of_4400_digits_is_refused_at_its_line() -> None:
    text = '{\n "autonomy": {\n  "minWindowSeconds": 1' + "0" * 4400 + "\n }\n}"

    with pytest.raises(PolicyFileError) as refused:
        parse_policy(text, source="policy.json")

    assert (refused.value.line, refused.value.column) == (3, 23)
    assert "(4401 characters) is an integer beyond 2^53 - 1" in refused.value.message


def write_config(folder: Path, recorder: str) -> Path:
    (folder / "policy.json").write_text("{}")
    config = folder / "recorder.toml"
    config.write_text(f'[recorder]\n{recorder}\n[servers.notes]\ncommand = "true"\n')
    return config


@pytest.mark.parametrize(
    ("recorder", "said"),
    [
        (f'key = "{"k" * 300}"', "cannot use the key file: File name too long"),
        ("checkpoint_every = 1" + "0" * 4400, "Exceeds the limit (4300 digits)"),
        ("run_idle_seconds = inf", "recorder.run_idle_seconds: Input should be a finite number"),
        ("run_idle_seconds = 1e300", "recorder.run_idle_seconds: Input should be less than or equal to"),
    ],
)
def test_a_configuration_the_recorder_cannot_use_is_bad_input_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recorder: str, said: str
) -> None:
    config = write_config(tmp_path, recorder)

    status = main(["--config", str(config), "runs"])

    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("hatp-recorder: error: ")
    assert said in err
    assert "Traceback" not in err
    assert len(err) < 1000


@pytest.mark.parametrize("key", ["run-key-1\n", "run-key-1\r\n", "\nrun-key-1"])
def test_a_run_key_with_a_trailing_newline_is_refused(key: str) -> None:
    with pytest.raises(ValueError, match="a run key is 8-200 letters"):
        check_key_shape(key)
