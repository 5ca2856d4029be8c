"""The CRM, except that check or compensate misbehaves in the one way ``--lie NAME`` picks
(``python undo_that_lies.py --db crm.db --lie version_found``): a made-up ``versionFound`` or
``versionLeft``, a check that says conflict, forgets a done undo or compensates, answers signed by
an unpublished key, refusals with the wrong code, an outside edit on a refusal or a repeat, a
compensate that overrides conflicts or ignores the window, a compensation that fails or does
nothing, an outside edit that keeps the version, unknown tokens not refused or never answered,
and check replies that are errors, carry no answer or a garbled one. The names are in
``LyingUndo`` and ``lie()``."""

import argparse
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import _crm
from fastmcp.tools import ToolResult

from hatp_journal.toolkit import Journal, SigningKey, Undone
from hatp_journal.toolkit import _server as toolkit_server
from hatp_journal.toolkit import _undo as toolkit_undo
from hatp_journal.toolkit import _undo_answers as toolkit_answers
from hatp_journal.toolkit._testing_surface import ConformanceSurface
from hatp_journal.toolkit._undo import UndoEngine
from hatp_journal.toolkit.errors import ErrorCode
from hatp_journal.toolkit.signing import answer_payload
from hatp_journal.toolkit.store import UndoRecord
from hatp_journal.toolkit.wire import META_KEY, CompensateRequest, UndoAnswer

STRANGER = SigningKey.generate()
HANG_SECONDS = 12.0
"""How long ``hang_on_unknown_token`` keeps a check of an unknown token waiting."""
REFUSALS = ("conflict", "expired")


class LyingUndo(UndoEngine):
    """The toolkit's undo engine; each lie overrides one of its steps."""

    lie = ""

    def _sign(self, answer: UndoAnswer) -> UndoAnswer:
        if self.lie == "version_found" and (answer.operation, answer.status) == ("check", "ok"):
            answer = answer.model_copy(update={"version_found": "v-made-up"})
        if self.lie == "check_says_conflict" and (answer.operation, answer.status) == ("check", "ok"):
            answer = answer.model_copy(update={"status": "conflict", "code": ErrorCode.UNDO_CONFLICT})
        if self.lie == "check_forgets_done" and (answer.operation, answer.status) == ("check", "done"):
            answer = answer.model_copy(update={"status": "ok"})
        if self.lie == "version_left" and answer.status == "done":
            answer = answer.model_copy(update={"version_left": "v-made-up"})
        if self.lie == "refusal_code" and answer.operation == "compensate" and answer.status in REFUSALS:
            answer = answer.model_copy(update={"code": ErrorCode.UNDO_FAILED})
        unknown = (self.lie, answer.operation) if answer.status == "unknown_token" else None
        if unknown == ("unknown_token_check", "check"):
            answer = answer.model_copy(update={"status": "failed", "code": ErrorCode.UNDO_FAILED})
        if unknown == ("unknown_token_compensate", "compensate"):
            answer = answer.model_copy(update={"code": None})
        key = STRANGER if self.lie == "stranger_signs" else self.journal.key
        return answer.model_copy(update={"receipt": key.sign(answer_payload(answer.wire()), answer.at)})

    def check(self, token: str) -> UndoAnswer:
        answer = super().check(token)
        if self.lie == "hang_on_unknown_token" and answer.status == "unknown_token":
            time.sleep(HANG_SECONDS)
        if self.lie == "check_compensates" and answer.status == "ok":
            self.compensate(CompensateRequest(token=token, if_version=answer.version_found or ""))
        return answer

    def compensate(self, request: CompensateRequest) -> UndoAnswer:
        expired, matches = toolkit_undo.is_expired, toolkit_undo.still_matches
        if self.lie == "compensate_ignores_window":  # check still tells the truth
            toolkit_undo.is_expired = lambda record, now: False
        if self.lie == "override_conflicts":  # writes over whatever changed, as if overridden
            toolkit_undo.still_matches = toolkit_answers.still_matches = lambda record, if_version, state: (
                True
            )
        try:
            answer = super().compensate(request)
        finally:
            toolkit_undo.is_expired, toolkit_undo.still_matches = expired, matches
            toolkit_answers.still_matches = matches
        edits = {"edit_on_refusal": answer.status in REFUSALS, "edit_on_repeat": self._repeated(answer)}
        if edits.get(self.lie) and answer.tool and answer.resource:
            ConformanceSurface(self.journal).touch(answer.tool, answer.resource)
        return answer

    def _repeated(self, answer: UndoAnswer) -> bool:
        seen = self.__dict__.setdefault("done", set())
        repeated = answer.status == "done" and answer.token_digest in seen
        if answer.status == "done":
            seen.add(answer.token_digest)
        return repeated

    def _verify(self, record: UndoRecord, tx: Any) -> str | None:
        return None if self.lie == "undo_does_nothing" else super()._verify(record, tx)


def nothing(payload: Any, tx: Any) -> Undone:
    return Undone(version="v-unchanged")


def fail(payload: Any, tx: Any) -> Undone:
    raise RuntimeError("the compensation broke")


COMPENSATIONS: dict[str, Callable[..., Undone]] = {"undo_does_nothing": nothing, "undo_fails": fail}

CHECK_REPLIES: dict[str, Callable[[ToolResult], ToolResult]] = {
    "check_is_error": lambda result: ToolResult(
        content=result.content, structured_content=result.structured_content, meta=result.meta, is_error=True
    ),
    "check_without_answer": lambda result: ToolResult(content=result.content),
    "check_garbled": lambda result: ToolResult(content=result.content, meta={META_KEY: {"status": "fine"}}),
}
"""Check's replies, changed as the suite's client receives them."""


def keep_the_version(resource: str, tx: Any) -> None:
    """An outside edit that changes nothing."""


def lie(journal: Journal) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lie", required=True)
    chosen = parser.parse_known_args(_crm.arguments())[0].lie
    engine = LyingUndo(journal)
    engine.lie = chosen
    journal._undo = engine
    if chosen in COMPENSATIONS:
        for name, spec in journal.compensations.items():
            journal.compensations[name] = replace(spec, function=COMPENSATIONS[chosen], tx_param="tx")
    if chosen == "edit_keeps_version":
        for name, edit in journal.outside_edits.items():
            journal.outside_edits[name] = replace(edit, function=keep_the_version, tx_param="tx")
    if chosen in CHECK_REPLIES:
        answer_result = toolkit_server.answer_result

        def replied(answer: UndoAnswer) -> ToolResult:
            result = answer_result(answer)
            return CHECK_REPLIES[chosen](result) if answer.operation == "check" else result

        toolkit_server.answer_result = replied  # type: ignore[attr-defined]


VARIANT = _crm.Variant(lie)

if __name__ == "__main__":
    VARIANT.serve()
