"""The verifier's witness checks (docs/run-record.md, "Witnessed heads").

``verify --witness NAME=KEY`` pins a witness's key: the file's final head must carry a valid
cosignature of that witness, and every cosignature of it in the file must verify and name a head
the file has. A witness's own answer (its latest cosigned head of the run, asked over HTTP by
``verify --ask-witness``) is checked too: a file shorter than it is truncated or rolled back, a file
whose head at its size differs is a fork.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hatp_journal.recorder.record.chain import entry_id
from hatp_journal.recorder.record.models import Cosignature, RunRecordFile
from hatp_journal.recorder.record.report import Check, Findings
from hatp_journal.toolkit.signing import VerifyKey, verify


@dataclass(frozen=True)
class WitnessPins:
    """What the verifier holds of witnesses: their keys, and what those it asked answered.

    ``answers`` maps a witness's name to its latest cosigned head of the run, or None when it
    answered that it cosigned none; a name in ``answers`` must also be in ``keys``.
    """

    keys: Mapping[str, VerifyKey] = field(default_factory=dict)
    answers: Mapping[str, Cosignature | None] = field(default_factory=dict)


class WitnessCheck:
    """The witness checks of one record, run once its entries were read."""

    def __init__(self, header: RunRecordFile, pins: WitnessPins | None) -> None:
        self.header = header
        self.pins = pins or WitnessPins()
        self.mine = [c for c in header.cosignatures or [] if c.witness in self.pins.keys]

    def sizes(self) -> set[int]:
        """The sizes at which the verifier must keep the file's head."""
        answered = {c.size for c in self.pins.answers.values() if c is not None}
        return {c.size for c in self.mine} | answered

    def finish(
        self,
        found: Findings,
        size: int,
        heads: Mapping[int, str],
        final: str | None,
        recorder_kids: set[str],
    ) -> None:
        """Add the problems; ``heads`` holds the file's head at each of :meth:`sizes` it reaches."""
        run = self.header.run.id
        largest: dict[str, int] = {}
        for cosignature in self.mine:
            label = entry_id(cosignature.size) if cosignature.size else None
            if not self._valid(cosignature, run):
                found.add(
                    Check.BAD_COSIGNATURE,
                    label,
                    f"witness {cosignature.witness!r}: at size {cosignature.size}",
                )
            elif cosignature.size > size or heads.get(cosignature.size) != cosignature.head:
                found.add(
                    Check.WITNESS_FORKED,
                    label,
                    f"witness {cosignature.witness!r} cosigned another head at size {cosignature.size}",
                )
            else:
                largest[cosignature.witness] = max(largest.get(cosignature.witness, 0), cosignature.size)
        for name in self.pins.keys:
            if not any(
                c.witness == name
                and (c.size, c.head) == (size, final)
                and c.recorder_kid in recorder_kids
                and self._valid(c, run)
                for c in self.mine
            ):
                found.add(
                    Check.WITNESS_MISSING,
                    None,
                    f"the final head (size {size}) has no cosignature of {name!r}",
                )
        for name, answer in self.pins.answers.items():
            self._answer(found, name, answer, size, heads, largest.get(name, 0))

    def _answer(
        self,
        found: Findings,
        name: str,
        answer: Cosignature | None,
        size: int,
        heads: Mapping[int, str],
        seen: int,
    ) -> None:
        run = self.header.run.id
        if answer is None:
            found.add(Check.WITNESS_NO_HEAD, None, f"witness {name!r} cosigned no head of run {run!r}")
            return
        label = entry_id(answer.size) if answer.size else None
        if answer.witness != name or not self._valid(answer, run):
            found.add(
                Check.BAD_COSIGNATURE,
                label,
                f"witness {name!r}: its answer is not its cosignature of this run",
            )
        elif answer.size > size:
            found.add(
                Check.WITNESS_AHEAD,
                label,
                f"witness {name!r} cosigned {answer.size} entries, the file has {size}: "
                "truncated or rolled back",
            )
        elif heads.get(answer.size) != answer.head:
            found.add(
                Check.WITNESS_FORKED, label, f"witness {name!r} cosigned another head at size {answer.size}"
            )
        elif answer.size < seen:
            found.add(
                Check.WITNESS_FORKED,
                label,
                f"witness {name!r} answers size {answer.size}, after cosigning {seen}",
            )

    def _valid(self, cosignature: Cosignature, run: str) -> bool:
        key = self.pins.keys.get(cosignature.witness)
        return (
            key is not None
            and cosignature.run == run
            and verify(cosignature.receipt, cosignature.signed(), {key.kid: key})
        )
