"""``verify --ask-witness``: each witness's latest cosigned head of the file's run, asked now."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from hatp_journal.recorder.record.models import Cosignature
from hatp_journal.recorder.record.stream import ExportReader, NotLaidOut
from hatp_journal.recorder.record.verify import WHOLE_FILE_LIMIT
from hatp_journal.recorder.witness.client import Unreachable, latest_head
from hatp_journal.recorder.witness.wire import WitnessCode, WitnessedHead

ASK_TIMEOUT_SECONDS = 10.0


def ask_witnesses(file: Path, urls: Mapping[str, str]) -> dict[str, Cosignature | None]:
    """By witness name: its latest cosignature of the run ``file`` records, None if it has none.

    A witness that does not answer, or not in its protocol, raises ``OSError`` naming its code:
    ``verify`` cannot say whether the file is the whole record without it.
    """
    run = _run_id(file)
    if run is None:
        return {}  # the verifier says what is wrong with the file
    answers: dict[str, Cosignature | None] = {}
    for name, url in urls.items():
        try:
            answer = latest_head(url, run, ASK_TIMEOUT_SECONDS)
        except Unreachable as error:
            raise OSError(f"{error.code}: witness {name}: {error.message}") from None
        if isinstance(answer, WitnessedHead):
            answers[name] = answer.cosignature
        elif answer.code == WitnessCode.WITNESS_UNKNOWN_RUN:
            answers[name] = None
        else:
            raise OSError(f"{answer.code}: witness {name}: {answer.message}")
    return answers


def _run_id(file: Path) -> str | None:
    """The id of the run the file records, read without reading its entries."""
    try:
        with file.open("rb") as opened:
            try:
                header = ExportReader(opened).header
            except NotLaidOut:
                if opened.seek(0, 2) > WHOLE_FILE_LIMIT:
                    return None
                opened.seek(0)
                header = json.loads(opened.read())
    except (ValueError, RecursionError):
        return None
    except OSError as error:
        raise OSError(f"cannot read {file}: {error.strerror}") from None
    run = header.get("run") if isinstance(header, dict) else None
    identity = run.get("id") if isinstance(run, dict) else None
    return identity if isinstance(identity, str) else None
