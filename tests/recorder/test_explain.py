"""`hatp-recorder explain` refuses questions it can't answer with a stable code, before starting anything."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hatp_journal.recorder.config import RecorderConfig, ServerConfig
from hatp_journal.recorder.gateway.explain import ExplainError, explain, parse_arguments
from hatp_journal.recorder.policy import Policy

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"query"'])
def test_arguments_that_are_not_a_json_object_are_bad_arguments(text: str) -> None:
    with pytest.raises(ExplainError) as caught:
        parse_arguments(text)

    assert caught.value.code == "BAD_ARGUMENTS"


def test_no_arguments_are_an_empty_object() -> None:
    assert parse_arguments(None) == {}


async def test_a_server_the_configuration_does_not_name_is_an_unknown_server() -> None:
    config = RecorderConfig(servers={"files": ServerConfig(command="never-started")})

    with pytest.raises(ExplainError) as caught:
        await explain(config, Policy(), "db", "read_query", {}, datetime(2026, 12, 1, tzinfo=UTC))

    assert caught.value.code == "UNKNOWN_SERVER"
