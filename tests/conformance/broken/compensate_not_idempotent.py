"""The CRM, except that compensate forgets what it already did, so a retry runs the undo again."""

import _crm
from sqlalchemy import delete, update
from sqlmodel import Session

from hatp_journal.toolkit import Journal
from hatp_journal.toolkit._undo import UndoEngine
from hatp_journal.toolkit.store import UndoAttempt, UndoRecord, hash_token
from hatp_journal.toolkit.wire import CompensateRequest, UndoAnswer


class ForgetfulUndo(UndoEngine):
    def compensate(self, request: CompensateRequest) -> UndoAnswer:
        token_hash = hash_token(request.token)
        with Session(self.journal.engine) as session:
            session.execute(
                update(UndoRecord).where(UndoRecord.token_hash == token_hash).values(done_answer_json=None)
            )
            session.execute(delete(UndoAttempt).where(UndoAttempt.token_hash == token_hash))
            session.commit()
        return super().compensate(request)


def forget_outcomes(journal: Journal) -> None:
    journal._undo = ForgetfulUndo(journal)


VARIANT = _crm.Variant(forget_outcomes)

if __name__ == "__main__":
    VARIANT.serve()
