"""Screenshots kept as evidence of what an undo saw (protocol.md §6).

Each file is referenced from the signed undo receipt as ``"sha256:<hex> <file URI>"``, so the
receipt also pins the file's content: a screenshot swapped afterwards no longer matches.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

_REFERENCE = re.compile(r"^sha256:(?P<digest>[0-9a-f]{64}) (?P<uri>file://\S+)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9-]+")


class EvidenceFiles:
    """A folder of screenshots; :meth:`keep` writes one and returns its reference."""

    def __init__(self, directory: Path, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.directory = directory
        self._clock = clock

    def keep(self, png: bytes, label: str) -> str:
        """Write ``png`` under a name saying when and what (``label``); its reference."""
        self.directory.mkdir(parents=True, exist_ok=True)
        stamp = self._clock().strftime("%Y%m%dT%H%M%S%fZ")
        name = f"{stamp}-{_UNSAFE.sub('-', label)}-{secrets.token_hex(3)}.png"
        path = (self.directory / name).resolve()
        path.write_bytes(png)
        return f"sha256:{hashlib.sha256(png).hexdigest()} {path.as_uri()}"


def evidence_file(reference: str) -> tuple[str, Path]:
    """The digest and path named by a reference :meth:`EvidenceFiles.keep` returned."""
    match = _REFERENCE.fullmatch(reference)
    if match is None:
        raise ValueError(f"not an evidence reference: {reference!r}")
    return "sha256:" + match["digest"], Path(unquote(urlparse(match["uri"]).path))


def matches(reference: str) -> bool:
    """Whether the file a reference names still exists with the content it was kept with."""
    digest, path = evidence_file(reference)
    return path.is_file() and "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() == digest
