"""The CRM, except that check or compensate misbehaves in the one way ``--lie NAME`` picks
(``python undo_that_lies.py --db crm.db --lie version_found``); see ``LIES``."""

import argparse
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import _crm

from hatp_journal.toolkit import CompensateRequest, Journal, SigningKey, UndoAnswer, Undone
from hatp_journal.toolkit.errors import ErrorCode
from hatp_journal.toolkit.signing import answer_payload
from hatp_journal.toolkit.store import UndoRecord
from hatp_journal.toolkit.testing_surface import ConformanceSurface
from hatp_journal.toolkit.undo import UndoEngine
from hatp_journal.toolkit.wire import Override

STRANGER = SigningKey.generate()
REFUSALS = ("conflict", "expired")


class LyingUndo(UndoEngine):
    """The toolkit's undo engine; each lie overrides one of its steps."""

    lie = ""

    def _sign(self, answer: UndoAnswer) -> UndoAnswer:
        if self.lie == "version_found" and (answer.operation, answer.status) == ("check", "ok"):
            answer = answer.model_copy(update={"version_found": "v-made-up"})
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
        if self.lie == "check_compensates" and answer.status == "ok":
            self.compensate(CompensateRequest(token=token, if_version=answer.version_found or ""))
        return answer

    def compensate(self, request: CompensateRequest) -> UndoAnswer:
        if self.lie == "override_conflicts":
            request = request.model_copy(update={"override": Override(approval="none", by="the server")})
        answer = super().compensate(request)
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


def lie(journal: Journal) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lie", required=True)
    chosen = parser.parse_known_args()[0].lie
    engine = LyingUndo(journal)
    engine.lie = chosen
    journal._undo = engine
    if chosen in COMPENSATIONS:
        for name, spec in journal.compensations.items():
            journal.compensations[name] = replace(spec, function=COMPENSATIONS[chosen], tx_param="tx")


_crm.serve(lie)
