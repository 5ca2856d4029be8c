"""RFC 8785 canonical JSON, applied before every hash and signature."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785


def canonical_bytes(value: Any) -> bytes:
    """Return the RFC 8785 (JCS) serialization of a JSON-compatible value."""
    return rfc8785.dumps(value)


def sha256_digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical form, the digest format used on the wire."""
    return "sha256:" + hashlib.sha256(canonical_bytes(value)).hexdigest()


def content_etag(fields: Any) -> str:
    """A content-based ETag: equal content gives an equal tag, whatever the history.

    Servers keep it beside a revision counter so that undoing a later edit, which
    brings the content back, is recognised as the earlier version (SPEC §4).
    """
    return "c-" + hashlib.sha256(canonical_bytes(fields)).hexdigest()[:32]
