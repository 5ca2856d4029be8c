"""How a registry file names a server's resources: an exact URI, or a URI template whose only
placeholders are ``{NAME}``, each standing for one plain path segment (docs/policy.md, "Resources").

Both are checked at load and err towards matching nothing: a placeholder takes letters, digits and
``-._~`` only (no ``/``, no ``%``-escape that a server might decode into one, never ``.`` or ``..``),
so a template can't reach outside the folder it names; a URI with control characters or white space
matches no entry at all. A read that matches nothing is classed as nothing classifies it: R4.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_]+)\}")
_SEGMENT_VALUE = r"[A-Za-z0-9._~-]+"
"""What one placeholder matches: part of one plain segment (a URI with a ``.`` or ``..`` segment
matches no template at all)."""


def unsafe(uri: str) -> str | None:
    """Why ``uri`` can't be named or matched (control characters, white space), or None."""
    for char in uri:
        if ord(char) < 0x21 or 0x7F <= ord(char) <= 0x9F or char.isspace():
            return f"it holds U+{ord(char):04X} (control characters and white space match nothing)"
    return None


def _dot_segment(text: str) -> bool:
    """Whether ``text`` (a literal part of a name) has a ``.`` or ``..`` path segment."""
    return any(part in (".", "..") for part in re.split(r"[/?#]", text))


@dataclass(frozen=True)
class ResourceName:
    """One key of a registry file's ``resources``: the URI itself, or a template as a pattern."""

    key: str
    pattern: re.Pattern[str] | None
    """None: the key is a plain URI, matched exactly."""

    @classmethod
    def parse(cls, key: str) -> ResourceName:
        """The name ``key`` stands for; :class:`ValueError` saying why it is refused."""
        if (why := unsafe(key)) is not None:
            raise ValueError(f"resource {key!r}: {why}")
        if _SCHEME.match(key) is None:
            raise ValueError(f"resource {key!r}: a URI or template starts with its scheme (such as file:)")
        parts = _PLACEHOLDER.split(key)
        literals, names = parts[0::2], parts[1::2]
        for literal in literals:
            if "{" in literal or "}" in literal:
                raise ValueError(
                    f"resource {key!r}: only {{NAME}} placeholders are allowed (letters, digits, _),"
                    " each one path segment; no operators ({+x}, {/x}, {?x}), lists or modifiers"
                )
            if _dot_segment(literal):
                raise ValueError(f"resource {key!r}: a '.' or '..' path segment")
        if len(set(names)) != len(names):
            raise ValueError(f"resource {key!r}: a placeholder named twice")
        if not names:
            return cls(key, None)
        pattern = "".join(
            re.escape(part) if index % 2 == 0 else f"(?P<{part}>{_SEGMENT_VALUE})"
            for index, part in enumerate(parts)
        )
        return cls(key, re.compile(pattern))

    def matches(self, uri: str) -> bool:
        """Whether a read of ``uri`` is a read of what this key names."""
        if self.pattern is None:
            return uri == self.key
        return unsafe(uri) is None and not _dot_segment(uri) and self.pattern.fullmatch(uri) is not None
