"""Why the web approver refused a request: a stable code (shown on the page as ``data-code``)."""

from __future__ import annotations

from enum import StrEnum


class WebCode(StrEnum):
    """Stable codes for refused web requests; tests match these, never the text."""

    SIGNIN_INVALID = "SIGNIN_INVALID"
    SIGNIN_EXPIRED = "SIGNIN_EXPIRED"
    SIGNIN_USED = "SIGNIN_USED"
    SIGNIN_REQUIRED = "SIGNIN_REQUIRED"
    CROSS_SITE = "CROSS_SITE"
    CSRF_FAILED = "CSRF_FAILED"
    FORM_USED = "FORM_USED"
    FORM_STALE = "FORM_STALE"
    OVERRIDE_NOT_CONFIRMED = "OVERRIDE_NOT_CONFIRMED"
    NO_KEY = "NO_KEY"
    NOT_FOUND = "NOT_FOUND"
    NOT_COUNTED = "NOT_COUNTED"
    LATE_DECISION = "LATE_DECISION"
    NOT_RESUMABLE = "NOT_RESUMABLE"
    HOST_NOT_SERVED = "HOST_NOT_SERVED"


_STATUS = {
    WebCode.SIGNIN_INVALID: 401,
    WebCode.SIGNIN_EXPIRED: 401,
    WebCode.SIGNIN_USED: 401,
    WebCode.SIGNIN_REQUIRED: 401,
    WebCode.CROSS_SITE: 403,
    WebCode.CSRF_FAILED: 403,
    WebCode.FORM_USED: 409,
    WebCode.FORM_STALE: 409,
    WebCode.OVERRIDE_NOT_CONFIRMED: 400,
    WebCode.NO_KEY: 403,
    WebCode.NOT_FOUND: 404,
    WebCode.NOT_COUNTED: 200,
    WebCode.LATE_DECISION: 200,
    WebCode.NOT_RESUMABLE: 409,
    WebCode.HOST_NOT_SERVED: 421,
}


class WebRefusal(Exception):
    """A request the approver refused before anything was recorded (or recorded as not counted)."""

    def __init__(self, code: WebCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    @property
    def status(self) -> int:
        """The HTTP status the page is sent with."""
        return _STATUS[self.code]
