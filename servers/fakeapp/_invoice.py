"""The invoice record and the parsing of what users type into its fields."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Final

from ._errors import InvalidField

DRAFT: Final = "Draft"
SENT: Final = "Sent"
STATUSES: Final = (DRAFT, SENT)

_ID_PATTERN = re.compile(r"INV-(\d{4,9})")
# Plain decimal, at most two places, no sign or thousands separators: what the form asks for.
_AMOUNT_PATTERN = re.compile(r"\d{1,9}(?:\.\d{1,2})?")
_MAX_CUSTOMER = 80


@dataclass(frozen=True)
class Invoice:
    """One invoice as the app stores it (ground truth for tests).

    ``id`` is the on-screen id (``INV-0001``); ``deleted_at`` is set while it sits in Trash.
    """

    id: str
    customer: str
    amount: Decimal
    status: str
    updated_by: str
    updated_at: datetime
    deleted_at: datetime | None

    @property
    def in_trash(self) -> bool:
        """Whether the invoice was deleted and can still be restored."""
        return self.deleted_at is not None

    @property
    def amount_text(self) -> str:
        """The amount as the app shows it, e.g. ``1200.00``."""
        return f"{self.amount:.2f}"


def format_invoice_id(number: int) -> str:
    """``7`` → ``INV-0007``."""
    return f"INV-{number:04d}"


def parse_invoice_id(text: str) -> int | None:
    """``INV-0007`` → ``7``; anything else → ``None``."""
    match = _ID_PATTERN.fullmatch(text)
    return int(match.group(1)) if match else None


def parse_customer(raw: str) -> str:
    """Validate a customer name; raises :class:`InvalidField` naming ``customer``."""
    value = raw.strip()
    if not value:
        raise InvalidField("customer", "is required")
    if len(value) > _MAX_CUSTOMER:
        raise InvalidField("customer", f"must be at most {_MAX_CUSTOMER} characters")
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise InvalidField("customer", "must not contain control characters")
    return value


def parse_amount(raw: str) -> Decimal:
    """Validate an amount like ``120.50``; raises :class:`InvalidField` naming ``amount``."""
    value = raw.strip()
    if not _AMOUNT_PATTERN.fullmatch(value):
        raise InvalidField("amount", "must be a number with up to two decimals, like 120.50")
    return Decimal(value).quantize(Decimal("0.01"))


def parse_status(raw: str) -> str:
    """Validate a status name; raises :class:`InvalidField` naming ``status``."""
    if raw not in STATUSES:
        raise InvalidField("status", f"must be one of {', '.join(STATUSES)}")
    return raw
