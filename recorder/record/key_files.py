"""A pinned public key read from its file: what ``verify --recorder-key``, a witness's ``key`` and
``hatp-witness --recorder-key`` name (docs/verify.md). Here, below the CLI and the witness, so that
both read keys one way."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from hatp_journal._shared.files import MAX_KEY_BYTES, FileProblem, check_nesting, read_text
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.signing import SigningKey, VerifyKey
from hatp_journal.toolkit.wire import PublicKey


def pinned_key(path: Path) -> VerifyKey:
    """A public key as `hatp-journal pubkey` prints it, or the public half of a key file."""
    try:
        text = read_text(path, limit=MAX_KEY_BYTES)
        if not text.lstrip().startswith("{"):
            return SigningKey.from_file(path).public
        check_nesting(text, path, syntax="json")
    except FileProblem as problem:
        raise KeyFileError(str(problem)) from None
    try:
        return VerifyKey.from_wire(PublicKey.model_validate_json(text))
    except ValidationError as error:
        first = error.errors()[0]
        at = "".join(f"{part}: " for part in first["loc"])
        raise KeyFileError(f"{path}: not a published public key: {at}{first['msg']}") from None
    except ValueError as error:  # the key's bytes, or a kid that does not name them
        raise KeyFileError(f"{path}: not a published public key: {error}") from None
