"""The DSN extension's parameters (RFC 3461), as far as a sink needs them: it offers ``DSN`` in its
EHLO answer and takes ``ENVID`` and ``RET`` on MAIL, ``NOTIFY`` and ``ORCPT`` on RCPT, checking
their syntax. It never sends a delivery report (a sink delivers nothing further); it keeps the
``ENVID`` with the message, so that a resent message is recognisable by its envelope too.

aiosmtpd (1.4.6) refuses every MAIL and RCPT parameter it does not know with ``555``, and upper-cases
the ones it keeps, so these are taken out of the command, case kept, before aiosmtpd sees it. So is
the CHECKPOINT extension's ``TRANSID`` (RFC 1845), when the sink offers it (``_checkpoint.py``): its
syntax is checked here, and the handler's MAIL hook reads it from :data:`PENDING_TRANSID`.
"""

from __future__ import annotations

import re

from aiosmtpd.smtp import SMTP, Envelope

from ._checkpoint import ehlo_name_usable, transid_problem

ENVID_ATTRIBUTE = "hatp_envelope_id"
"""Where the MAIL command's ENVID is kept on aiosmtpd's envelope (xtext, as it came)."""

_XTEXT = re.compile(r"(?:[!-*,-<>-~]|\+[0-9A-F]{2})+")
"""RFC 3461 xtext: printable ASCII but ``+`` and ``=``, or ``+`` and two upper-case hex digits."""
_NOTIFY = re.compile(r"NEVER|(?:SUCCESS|FAILURE|DELAY)(?:,(?:SUCCESS|FAILURE|DELAY))*", re.IGNORECASE)
_ORCPT = re.compile(r"[A-Za-z0-9-]+;" + _XTEXT.pattern)
_MAX_ENVID = 100

PENDING_TRANSID = "hatp_pending_transid"
"""Where the MAIL command being handled keeps its TRANSID (on the session's SMTP object) for the
handler's MAIL hook; None when it gave none."""


def xtext_decoded(text: str) -> str:
    """``text`` (valid xtext) with each ``+XX`` replaced by the character it stands for."""
    return re.sub(r"\+([0-9A-F]{2})", lambda hit: chr(int(hit.group(1), 16)), text)


def _split(arg: str, known: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    """``arg`` without the ``known`` parameters, and those parameters (upper-case name: value)."""
    kept: list[str] = []
    taken: dict[str, str] = {}
    for word in arg.split(" "):
        name, equals, value = word.partition("=")
        if equals and name.upper() in known:
            if name.upper() in taken:
                raise ValueError(f"{name.upper()} given twice")
            taken[name.upper()] = value
        else:
            kept.append(word)
    return " ".join(kept), taken


class DsnSMTP(SMTP):
    """aiosmtpd's SMTP session, taking the DSN parameters (see the module's docstring)."""

    async def smtp_MAIL(self, arg: str | None) -> None:
        if arg is None or self.session is None or not self.session.extended_smtp:
            await super().smtp_MAIL(arg)  # its own syntax error
            return
        # A sink that does not offer CHECKPOINT leaves TRANSID to aiosmtpd, which refuses it (555).
        checkpoint = getattr(self.event_handler, "restarts", None) is not None
        try:
            rest, taken = _split(arg, ("ENVID", "RET", "TRANSID") if checkpoint else ("ENVID", "RET"))
        except ValueError as exc:
            await self.push(f"501 5.5.4 Syntax error in parameters: {exc}")
            return
        transid = taken.get("TRANSID")
        if transid is not None:
            problem = transid_problem(transid)
            if problem is None and not ehlo_name_usable(self.session.host_name):
                problem = "TRANSID needs an EHLO name of printable ASCII without spaces (RFC 1845)"
            if problem is not None:
                await self.push(f"501 5.5.4 {problem}")
                return
        envelope_id = taken.get("ENVID")
        if envelope_id is not None and not (
            _XTEXT.fullmatch(envelope_id) and len(xtext_decoded(envelope_id)) <= _MAX_ENVID
        ):
            await self.push("501 5.5.4 ENVID must be xtext of at most 100 characters (RFC 3461)")
            return
        if "RET" in taken and taken["RET"].upper() not in ("FULL", "HDRS"):
            await self.push("501 5.5.4 RET must be FULL or HDRS (RFC 3461)")
            return
        envelope: Envelope | None = self.envelope
        started = envelope is not None and bool(envelope.mail_from)
        setattr(self, PENDING_TRANSID, transid)
        try:
            await super().smtp_MAIL(rest)
        finally:
            setattr(self, PENDING_TRANSID, None)
        if envelope is not None and not started and envelope.mail_from and envelope_id is not None:
            setattr(envelope, ENVID_ATTRIBUTE, envelope_id)

    async def smtp_RCPT(self, arg: str | None) -> None:
        if arg is None or self.session is None or not self.session.extended_smtp:
            await super().smtp_RCPT(arg)
            return
        try:
            rest, taken = _split(arg, ("NOTIFY", "ORCPT"))
        except ValueError as exc:
            await self.push(f"501 5.5.4 Syntax error in parameters: {exc}")
            return
        if "NOTIFY" in taken and not _NOTIFY.fullmatch(taken["NOTIFY"]):
            await self.push("501 5.5.4 NOTIFY must be NEVER or SUCCESS, FAILURE, DELAY (RFC 3461)")
            return
        if "ORCPT" in taken and not _ORCPT.fullmatch(taken["ORCPT"]):
            await self.push("501 5.5.4 ORCPT must be addr-type;xtext (RFC 3461)")
            return
        await super().smtp_RCPT(rest)
