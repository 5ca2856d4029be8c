"""RFC 8785 canonical JSON, applied before every hash and signature.

The reference is the ``rfc8785`` package. It is written in Python and was the largest single
cost of journaling a call, so values it would write exactly as the standard library's C encoder
does take that road instead: ``json`` with sorted keys, no whitespace and UTF-8 output writes
RFC 8785 bytes for objects, arrays, strings, ``true``/``false``/``null`` and integers within
±(2^53 - 1). Everything else (any float, a bigger integer, a key that is not an ASCII string, a
type that is not plain JSON, a lone surrogate, absurd depth) goes to ``rfc8785``, which either
writes it or refuses it exactly as before. ``tests/toolkit/test_canonical.py`` checks the two
roads give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785

_SAFE_INTEGER = 2**53 - 1
"""RFC 8785 writes integers as IEEE doubles: beyond this one it refuses them (``rfc8785``)."""

_MAX_FAST_DEPTH = 64
"""Deeper values take the reference road, which also keeps a cyclic value from looping here."""

_encode = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":"), check_circular=False
).encode


def canonical_bytes(value: Any) -> bytes:
    """Return the RFC 8785 (JCS) serialization of a JSON-compatible value."""
    return canonical_and_plain(value)[0]


def canonical_and_plain(value: Any) -> tuple[bytes, bool]:
    """:func:`canonical_bytes`, and whether ``value`` took the fast road.

    A value that took it is plain JSON (exact ``dict``, ``list``, ``str``, ``bool``, ``None`` and
    integers within ±(2^53 - 1)): parsing its bytes gives back an equal value of the same types,
    so a caller that needs that parse can keep ``value`` instead.
    """
    if _plain(value, 0):
        try:
            return _encode(value).encode("utf-8"), True
        except UnicodeEncodeError:
            pass  # a lone surrogate: rfc8785 refuses it with its own error
    return rfc8785.dumps(value), False


def _plain(value: Any, depth: int) -> bool:
    """True when ``json`` writes ``value`` byte for byte as RFC 8785 does.

    Exact types only: a subclass (an enum, say) takes the reference road. Object keys must be
    ASCII, where Python's code-point order and RFC 8785's UTF-16 order agree.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        number: int = value
        return -_SAFE_INTEGER <= number <= _SAFE_INTEGER
    if depth >= _MAX_FAST_DEPTH:
        return False
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not key.isascii():
                return False
            item_kind = type(item)
            if item_kind is str or item_kind is bool or item is None:
                continue
            if not _plain(item, depth + 1):
                return False
        return True
    if kind is list:
        for item in value:
            item_kind = type(item)
            if item_kind is str or item_kind is bool or item is None:
                continue
            if not _plain(item, depth + 1):
                return False
        return True
    return False


def sha256_digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical form, the digest format used on the wire."""
    return "sha256:" + hashlib.sha256(canonical_bytes(value)).hexdigest()


def content_etag(fields: Any) -> str:
    """A content-based ETag: equal content gives an equal tag, whatever the history.

    Servers keep it beside a revision counter so that undoing a later edit, which
    brings the content back, is recognised as the earlier version (protocol.md §4).
    """
    return "c-" + hashlib.sha256(canonical_bytes(fields)).hexdigest()[:32]
