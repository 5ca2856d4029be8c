"""Send email over SMTP, in a form the server said it accepts, with stable errors.

The one SMTP sender of the project: the Recorder's reminders send with :func:`send_message`; the
demo servers' outbox checks a message with :func:`probe` inside the tool's transaction and its
courier delivers it later, exactly as probed, with :class:`SmtpSession`.

What goes on the wire depends on the server's EHLO answer:

- The body is 8-bit only if the server offers 8BITMIME (then ``BODY=8BITMIME`` is declared);
  otherwise every part with non-ASCII data is re-encoded, text as quoted-printable and anything
  else as base64, so each byte sent is 7-bit ASCII.
- Headers with non-ASCII text are RFC 2047 encoded words, unless an address of the envelope is
  not ASCII (``zoë@globex.com``): such a message needs SMTPUTF8 (RFC 6531) and is sent with UTF-8
  headers (RFC 6532). A server that does not offer SMTPUTF8 cannot carry it at all:
  :class:`SmtpUtf8NotOfferedError`, with its own code, before anything is sent.

Sending can be split in two: :func:`probe` goes through EHLO, MAIL and RCPT and then resets, so a
refused recipient or a missing extension shows up while the caller can still roll back, and gives
the exact envelope (bytes and options) to send later with :meth:`SmtpSession.send`.

A message sent again after a lost ``250`` (RFC 1047: plain SMTP can't ask whether it arrived) is
recognisable: the same bytes, so the same Message-ID, and, to a server that offers DSN (RFC 3461),
the same envelope identifier (``MAIL FROM:<…> ENVID=…``) when the envelope carries one. To a server
that offers CHECKPOINT (RFC 1845) such an envelope also names its transaction
(``TRANSID=<envelope-id@our-EHLO-name>``), the same on every attempt: a server that stored the
message answers a restart ``355`` with the whole message's length as the offset, and the message is
then ended with its final ``.`` alone, so the server stores no second copy. A caller that records
deliveries passes a :class:`DeliveryMark` to :meth:`SmtpSession.send`, staged before the final
``.`` and committed as the first thing after the ``250``.
"""

from __future__ import annotations

import copy
import quopri
import re
import select
import smtplib
from collections.abc import Iterable
from dataclasses import dataclass
from email import encoders
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.policy import EmailPolicy, default
from email.utils import getaddresses, quote
from io import BytesIO
from typing import NoReturn, Protocol

__all__ = [
    "MARK_HOLD_SECONDS",
    "DeliveryMark",
    "Envelope",
    "MailAddressError",
    "MailDeliveryError",
    "SmtpSession",
    "SmtpUtf8NotOfferedError",
    "compose",
    "envelope_id_allowed",
    "header_text",
    "mail_addresses",
    "probe",
    "send_message",
]


class MailDeliveryError(Exception):
    """The message was not (fully) delivered: refused by the server, or the server was unreachable.

    ``reason`` says why; ``refused`` maps each refused recipient to the server's (code, reply).
    ``smtp_code`` is the server's reply code when it answered one (None when it could not be
    reached); :attr:`temporary` says whether trying again later may work.
    """

    code = "MAIL_DELIVERY_FAILED"

    def __init__(
        self,
        reason: str,
        refused: dict[str, tuple[int, bytes]] | None = None,
        smtp_code: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.refused: dict[str, tuple[int, bytes]] = dict(refused or {})
        self.smtp_code = smtp_code

    @property
    def temporary(self) -> bool:
        """No answer (unreachable, connection lost) or a 4xx reply: worth trying again later."""
        return self.smtp_code is None or 400 <= self.smtp_code < 500


class SmtpUtf8NotOfferedError(MailDeliveryError):
    """An address is not ASCII and the server does not offer SMTPUTF8, so nothing was sent."""

    code = "SMTPUTF8_NOT_OFFERED"


class MailAddressError(MailDeliveryError):
    """An address is not one (a line break, a control character, not ``local@domain``): nothing
    was sent, and trying again will not help."""

    code = "MAIL_ADDRESS_INVALID"

    @property
    def temporary(self) -> bool:
        return False


_NOT_IN_A_HEADER = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
"""Line breaks (the Unicode ones too) and every other control character: none belongs in a header."""


def header_text(text: str) -> str:
    """``text`` (a tool server's summary, an agent's subject) as one header line: each run of line
    breaks, control characters and spaces becomes one space. The email library folds a long line
    and encodes what is not ASCII when it writes the message; a raw line break would start a header."""
    return " ".join(_NOT_IN_A_HEADER.sub(" ", text).split())


def mail_addresses(addresses: Iterable[str]) -> str:
    """``addresses`` (each ``a@b`` or ``Name <a@b>``) as one address-list header value, a display
    name quoted; the header registry parses it again when it is set (``formataddr`` would refuse a
    local part that is not ASCII, which SMTPUTF8 delivers).

    Raises :class:`MailAddressError` for one holding a control character (``parseaddr`` would drop
    what follows a line break without a word), or that is not exactly one ``local@domain``.
    """
    made = []
    for address in addresses:
        if _NOT_IN_A_HEADER.search(address):
            raise MailAddressError(f"not an email address (a line break or control character): {address!r}")
        found = getaddresses([address])
        if len(found) != 1 or "@" not in found[0][1] or found[0][1].startswith("@"):
            raise MailAddressError(f"not one email address: {address!r}")
        name, spec = found[0]
        made.append(f'"{quote(name)}" <{spec}>' if name else spec)
    return ", ".join(made)


def compose(sender: str, to: Iterable[str], subject: str, text: str) -> EmailMessage:
    """A plain-text message whose headers are built only through the email library's header API:
    addresses checked one by one, the subject as one line (:func:`header_text`), folded when
    written. Raises :class:`MailAddressError` for an address that is not one."""
    message = EmailMessage()
    message["From"] = mail_addresses([sender])
    message["To"] = mail_addresses(to)
    message["Subject"] = header_text(subject)
    message.set_content(text)
    return message


@dataclass(frozen=True)
class Envelope:
    """A message exactly as it goes on the wire: sender, recipients, bytes and MAIL FROM options.

    ``envelope_id``, if set, goes with MAIL FROM as ``ENVID`` (RFC 3461) to a server that offers DSN,
    and is left out for one that does not: the same on every attempt, it lets the receiver tell a
    resend. It must be :func:`envelope_id_allowed` (a notice id such as ``ntc_3f…`` is).
    """

    sender: str
    recipients: tuple[str, ...]
    data: bytes
    options: tuple[str, ...]
    envelope_id: str | None = None

    def __post_init__(self) -> None:
        if self.envelope_id is not None and not envelope_id_allowed(self.envelope_id):
            raise ValueError(f"not an envelope identifier (RFC 3461 ENVID): {self.envelope_id!r}")


_ENVELOPE_ID = re.compile(r"[!-*,-<>-~]{1,100}")
"""Printable ASCII but ``+`` and ``=`` (the xtext that needs no encoding), at most 100 characters."""


def envelope_id_allowed(text: str) -> bool:
    """Whether ``text`` can go on the wire as it is as an ``ENVID`` (RFC 3461 xtext, 100 characters
    at most, without ``+`` and ``=``, which xtext would have to encode)."""
    return _ENVELOPE_ID.fullmatch(text) is not None


MARK_HOLD_SECONDS = 2.0
"""How long a staged :class:`DeliveryMark` waits for the server's final reply. A mark staged in a
SQLite store holds its write lock, so a server slower than this gets the mark dropped and made
after its reply instead (the window as wide as the wait)."""


class DeliveryMark(Protocol):
    """Records one message as delivered, in the step that reads the server's final reply.

    :meth:`SmtpSession.send` calls :meth:`prepare` just before the content and its final ``.`` go
    out, then :meth:`commit` as the first thing after a ``250``, or :meth:`abandon` for anything
    else (a refusal, a lost connection, or no reply within :data:`MARK_HOLD_SECONDS`).
    """

    def prepare(self) -> None:
        """Stage the mark, not yet durable."""

    def commit(self) -> None:
        """Make the staged mark durable."""

    def abandon(self) -> None:
        """Drop the staged mark; nothing recorded."""


def probe(
    msg: EmailMessage, host: str, port: int, timeout: float = 10
) -> tuple[Envelope, dict[str, tuple[int, bytes]]]:
    """Ask the server whether it would take ``msg``, and send nothing: EHLO, MAIL, RCPT, then RSET.

    Returns the envelope as it would go on the wire (only the recipients the server accepted, the
    bytes in the form its EHLO allows) and the refused recipients. Raises like :func:`send_message`
    for an unreachable server, a refused sender, every recipient refused, or a non-ASCII address
    without SMTPUTF8. The content itself is judged only when it is sent (:class:`SmtpSession`).
    """
    sender, recipients = _envelope(msg)
    international = not "".join([sender, *recipients]).isascii()
    where = f"{host}:{port}"
    try:
        client = smtplib.SMTP(host, port, timeout=timeout)
    except (smtplib.SMTPException, OSError) as exc:
        raise MailDeliveryError(f"cannot deliver via {where}: {exc}") from exc
    try:
        client.ehlo_or_helo_if_needed()
        if international and not client.has_extn("smtputf8"):
            raise SmtpUtf8NotOfferedError(
                f"{where} does not offer SMTPUTF8, which the non-ASCII address needs"
            )
        eight_bit = client.has_extn("8bitmime")
        data = _wire_bytes(msg, eight_bit=eight_bit, utf8=international)
        options = ["SMTPUTF8"] if international else []
        if eight_bit and not data.isascii():
            options.append("BODY=8BITMIME")
        envelope = Envelope(sender, tuple(recipients), data, tuple(options))
        accepted, refused, _ = _offer(client, envelope)
        client.rset()
        client.quit()
    except (MailDeliveryError, smtplib.SMTPException, OSError) as exc:
        client.close()
        _raise_delivery_error(exc, where)
    return Envelope(sender, accepted, data, tuple(options)), refused


class SmtpSession:
    """One SMTP connection that sends envelopes one after another (reconnecting after a failure).

    :meth:`send` returns as soon as the server has answered ``250`` to a message, and commits a
    caller's :class:`DeliveryMark` before even that, so a delivery is recorded before anything else
    happens on the wire or in the caller.
    """

    def __init__(self, host: str, port: int, timeout: float = 10) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._client: smtplib.SMTP | None = None

    @property
    def where(self) -> str:
        """The server, as ``host:port``."""
        return f"{self.host}:{self.port}"

    def send(self, envelope: Envelope, mark: DeliveryMark | None = None) -> dict[str, tuple[int, bytes]]:
        """Send ``envelope`` exactly as it is (same bytes, same Message-ID); returns who was refused.

        With a ``mark``: it is prepared just before the content goes out and committed the moment
        the ``250`` is read (see :class:`DeliveryMark`); returns True in :attr:`marked` then.

        Raises :class:`MailDeliveryError` if none accepted it, the server refused it or cannot take
        it any more (e.g. it stopped offering SMTPUTF8), or could not be reached; the connection is
        then dropped and the next call opens a new one. A prepared mark is abandoned then.
        """
        self.marked = self.restarted = False
        try:
            client = self._connected()
            for option, extension in (("SMTPUTF8", "smtputf8"), ("BODY=8BITMIME", "8bitmime")):
                if option in envelope.options and not client.has_extn(extension):
                    missing = SmtpUtf8NotOfferedError if extension == "smtputf8" else MailDeliveryError
                    raise missing(
                        f"{self.where} no longer offers {extension.upper()}, which this message needs"
                    )
            _, refused, restarted = _offer(client, envelope)
            client.putcmd("data")
            code, reply = client.getreply()
            if code != 354:
                raise smtplib.SMTPDataError(code, reply)
            if restarted:  # the server holds the whole message: end the transaction, send nothing
                wire = b".\r\n"
            else:
                # Dot-stuffing as in RFC 5321 4.5.2; the content ends with CRLF so that ".\r\n" ends it.
                content = re.sub(rb"(?m)^\.", b"..", envelope.data)
                # One write, content and ".": a "." of its own would wait for the content's ACK (Nagle).
                wire = (content if content.endswith(b"\r\n") else content + b"\r\n") + b".\r\n"
            if mark is None:
                client.send(wire)
                code, reply = client.getreply()
            else:
                code, reply = self._send_marked(client, wire, mark)
            if code != 250:
                raise smtplib.SMTPDataError(code, reply)
        except (MailDeliveryError, smtplib.SMTPException, OSError) as exc:
            self._drop()
            _raise_delivery_error(exc, self.where)
        self.restarted = restarted
        return refused

    marked = False
    """Whether the last :meth:`send` committed its mark (False if it was dropped for a slow reply)."""
    restarted = False
    """Whether the last :meth:`send` found the message stored already (a CHECKPOINT restart)."""

    def _send_marked(self, client: smtplib.SMTP, wire: bytes, mark: DeliveryMark) -> tuple[int, bytes]:
        try:
            mark.prepare()
        except BaseException:
            self._drop()  # mid-DATA: closing without the "." makes the server discard the message
            raise
        staged = True
        try:
            client.send(wire)
            if not _replied_within(client, MARK_HOLD_SECONDS):
                staged = False  # don't hold the store's lock for a slow server: the caller marks
                mark.abandon()
            code, reply = client.getreply()
            if staged and code == 250:
                staged = False
                mark.commit()  # the first thing after the 250: the resend window ends here
                self.marked = True
        finally:
            if staged:
                mark.abandon()
        return code, reply

    def close(self) -> None:
        """Say QUIT (or just close, if the server went away)."""
        client, self._client = self._client, None
        if client is not None:
            try:
                client.quit()
            except (smtplib.SMTPException, OSError):
                client.close()

    def _connected(self) -> smtplib.SMTP:
        if self._client is None:
            client = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
            client.ehlo_or_helo_if_needed()
            self._client = client
        return self._client

    def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()


def send_message(msg: EmailMessage, host: str, port: int, timeout: float = 10) -> None:
    """Send ``msg`` to the SMTP server at ``host:port`` (recipients from its To/Cc/Bcc headers).

    Raises :class:`MailDeliveryError` if the server is unreachable, refuses the message, or refuses
    any recipient (in that last case the others did receive it; ``refused`` lists who did not),
    and :class:`SmtpUtf8NotOfferedError` for a non-ASCII address the server can't take.
    ``msg`` itself is not changed; Bcc headers are not sent.
    """
    envelope, refused = probe(msg, host, port, timeout)
    session = SmtpSession(host, port, timeout)
    try:
        refused.update(session.send(envelope))
    finally:
        session.close()
    if refused:
        raise MailDeliveryError(f"recipients refused: {', '.join(sorted(refused))}", refused)


def _replied_within(client: smtplib.SMTP, seconds: float) -> bool:
    """Whether the server's reply is there to read within ``seconds`` (False if it is not yet).

    Nothing is buffered unread before it: the server sends nothing between the 354 and this reply.
    """
    if client.sock is None:
        return True  # not connected: reading the reply raises at once
    readable, _, _ = select.select([client.sock], [], [], seconds)
    return bool(readable)


def _refusal(exc: smtplib.SMTPResponseException) -> MailDeliveryError:
    error = exc.smtp_error
    reply = error.decode("utf-8", "replace") if isinstance(error, bytes) else error
    return MailDeliveryError(f"server refused: {exc.smtp_code} {reply}", smtp_code=exc.smtp_code)


def _raise_delivery_error(exc: Exception, where: str) -> NoReturn:
    """Raise a failed conversation with ``where`` as the caller sees it: ours as it is, SMTP's
    translated (one refusal per recipient, a refusal, or an unreachable server)."""
    if isinstance(exc, MailDeliveryError):
        raise exc
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        raise _all_refused(exc) from exc
    if isinstance(exc, smtplib.SMTPResponseException):
        raise _refusal(exc) from exc
    raise MailDeliveryError(f"cannot deliver via {where}: {exc}") from exc


def _all_refused(exc: smtplib.SMTPRecipientsRefused) -> MailDeliveryError:
    # Temporary only if every refusal was temporary (4xx): then a later try may reach someone.
    codes = [code for code, _ in exc.recipients.values()]
    worst = max(codes, default=None)
    return MailDeliveryError("all recipients were refused", exc.recipients, smtp_code=worst)


def _offer(
    client: smtplib.SMTP, envelope: Envelope
) -> tuple[tuple[str, ...], dict[str, tuple[int, bytes]], bool]:
    """MAIL and RCPT for each recipient; returns (accepted, refused, whether the server holds the
    whole message already: a CHECKPOINT restart answered ``355`` with its full length).

    Raises ``SMTPRecipientsRefused`` if nobody was accepted.
    """
    options = list(envelope.options)
    if envelope.envelope_id is not None and client.has_extn("dsn"):
        options.append(f"ENVID={envelope.envelope_id}")
    transid = _transid(envelope, client)
    code, reply = client.mail(envelope.sender, [*options, f"TRANSID={transid}"] if transid else options)
    restarted = False
    if code == 355 and transid is not None:
        offset = reply.split(b" ", 1)[0]
        restarted = offset.isdigit() and int(offset) == _stored_length(envelope.data)
        if not restarted:  # part of it, or a length we did not send: start over, as a new transaction
            client.rset()
            code, reply = client.mail(envelope.sender, options)
    if code != 250 and not restarted:
        raise smtplib.SMTPSenderRefused(code, reply, envelope.sender)
    refused: dict[str, tuple[int, bytes]] = {}
    for address in envelope.recipients:
        code, reply = client.rcpt(address)
        if code not in (250, 251):
            refused[address] = (code, reply)
    if len(refused) == len(envelope.recipients):
        raise smtplib.SMTPRecipientsRefused(refused)
    accepted = tuple(address for address in envelope.recipients if address not in refused)
    return accepted, refused, restarted


_TRANSID_PART = re.compile(r"(?:(?![()<>@,;:\\\"/\[\]?=])[!-~])+")
"""A TRANSID's local or domain part (RFC 1845): ASCII without controls, space and MIME's tspecials."""


def _transid(envelope: Envelope, client: smtplib.SMTP) -> str | None:
    """The envelope's transaction name for a server offering CHECKPOINT: its envelope identifier at
    our EHLO name (``localhost`` if that name can't be a TRANSID's domain), or None."""
    if envelope.envelope_id is None or not client.has_extn("checkpoint"):
        return None
    if not _TRANSID_PART.fullmatch(envelope.envelope_id):
        return None
    domain = client.local_hostname if _TRANSID_PART.fullmatch(client.local_hostname) else "localhost"
    transid = f"<{envelope.envelope_id}@{domain}>"
    return transid if len(transid) <= 80 else None


def _stored_length(data: bytes) -> int:
    """How many octets of ``data`` a server stores: the content as sent, ending with CRLF."""
    return len(data) if data.endswith(b"\r\n") else len(data) + 2


def _envelope(msg: EmailMessage) -> tuple[str, list[str]]:
    # As smtplib takes them: Sender (or From), then everyone in To, Bcc and Cc.
    sender = msg["Sender"] if "Sender" in msg else msg["From"]
    fields = [str(value) for name in ("To", "Bcc", "Cc") for value in msg.get_all(name, [])]
    return getaddresses([str(sender)])[0][1], [address for _, address in getaddresses(fields)]


def _wire_bytes(msg: EmailMessage, *, eight_bit: bool, utf8: bool) -> bytes:
    wire = copy.deepcopy(msg)
    del wire["Bcc"]
    if not eight_bit:
        for part in wire.walk():
            _make_seven_bit(part)
    # An EmailMessage's policy is an EmailPolicy unless the caller chose the legacy compat32.
    policy = msg.policy if isinstance(msg.policy, EmailPolicy) else default
    out = BytesIO()
    BytesGenerator(out, policy=policy.clone(utf8=utf8)).flatten(wire, linesep="\r\n")
    return out.getvalue()


def _make_seven_bit(part: EmailMessage) -> None:
    # A payload stored as str holds 8-bit bytes as surrogates; an ASCII one needs nothing.
    payload = part.get_payload()
    if part.is_multipart() or not isinstance(payload, str) or payload.isascii():
        return
    data = part.get_payload(decode=True)
    assert isinstance(data, bytes)
    del part["Content-Transfer-Encoding"]
    if part.get_content_maintype() == "text":
        # Quoted-printable keeps text readable, and its line breaks stay the message's CRLFs.
        part.set_payload(quopri.encodestring(data).decode("ascii"))
        part["Content-Transfer-Encoding"] = "quoted-printable"
    else:
        part.set_payload(data)
        encoders.encode_base64(part)
