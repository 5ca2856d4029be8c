"""Send one email over SMTP, in a form the server said it accepts, with stable errors.

What goes on the wire depends on the server's EHLO answer:

- The body is 8-bit only if the server offers 8BITMIME (then ``BODY=8BITMIME`` is declared);
  otherwise every part with non-ASCII data is re-encoded, text as quoted-printable and anything
  else as base64, so each byte sent is 7-bit ASCII.
- Headers with non-ASCII text are RFC 2047 encoded words, unless an address of the envelope is
  not ASCII (``zoë@globex.com``): such a message needs SMTPUTF8 (RFC 6531) and is sent with UTF-8
  headers (RFC 6532). A server that does not offer SMTPUTF8 cannot carry it at all:
  :class:`SmtpUtf8NotOfferedError`, with its own code, before anything is sent.

Sending can be split in two (:func:`open_delivery`): everything up to the content goes first, so a
refused recipient or a missing extension shows up while the caller can still roll back; the final
``.`` that makes the server accept the message comes later (:meth:`OpenDelivery.finish`). A
connection closed before that ``.`` (an abort, or the process dying) delivers nothing.
"""

from __future__ import annotations

import copy
import quopri
import re
import smtplib
from dataclasses import dataclass
from email import encoders
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.policy import EmailPolicy, default
from email.utils import getaddresses
from io import BytesIO

__all__ = [
    "Envelope",
    "MailDeliveryError",
    "OpenDelivery",
    "SmtpUtf8NotOfferedError",
    "open_delivery",
    "send_envelope",
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


@dataclass(frozen=True)
class Envelope:
    """A message exactly as it goes on the wire: sender, recipients, bytes and MAIL FROM options."""

    sender: str
    recipients: tuple[str, ...]
    data: bytes
    options: tuple[str, ...]


class OpenDelivery:
    """An SMTP transaction stopped just before the final ``.``: the server holds the content but
    has not accepted it. :meth:`finish` sends the ``.`` and reads the answer (or :meth:`end`, then
    :meth:`answer`); :meth:`abort` drops the connection instead; :meth:`close` then says QUIT.

    ``envelope`` lists only the recipients the server accepted; ``refused`` the others.
    """

    def __init__(
        self, client: smtplib.SMTP, envelope: Envelope, refused: dict[str, tuple[int, bytes]], where: str
    ) -> None:
        self._client: smtplib.SMTP | None = client
        self._finished = False
        self._lost: Exception | None = None  # a failure sending the ".", told by answer()
        self.envelope = envelope
        self.refused = refused
        self.where = where

    def finish(self) -> None:
        """Send the final ``.``; raises :class:`MailDeliveryError` unless the server answers 250.

        The connection stays open for :meth:`close`, so a caller can record the delivery first.
        """
        self.end()
        self.answer()

    def end(self) -> None:
        """Send the final ``.`` without waiting for the answer (several deliveries can end at once)."""
        if self._client is None or self._finished:
            raise RuntimeError("this delivery was already finished or aborted")
        self._finished = True
        try:
            self._client.send(b".\r\n")
        except (smtplib.SMTPException, OSError) as exc:
            self._lost = exc

    def answer(self) -> None:
        """Read the server's answer to the ``.``; raises :class:`MailDeliveryError` unless it is 250."""
        if self._client is None or not self._finished:
            raise RuntimeError("this delivery has not been ended, or was aborted")
        try:
            if self._lost is not None:
                raise self._lost
            code, reply = self._client.getreply()
        except (smtplib.SMTPException, OSError) as exc:
            self.abort()
            # Whether the server stored it is unknown: the caller may send it again (same Message-ID).
            raise MailDeliveryError(f"lost {self.where} before its answer to the message: {exc}") from exc
        if code != 250:
            self.close()
            text = reply.decode("utf-8", "replace")
            raise MailDeliveryError(f"server refused: {code} {text}", smtp_code=code)

    def close(self) -> None:
        """End the session politely (QUIT) once finished; abort it if it was not."""
        if not self._finished:
            self.abort()
            return
        client, self._client = self._client, None
        if client is not None:
            try:
                client.quit()
            except (smtplib.SMTPException, OSError):
                client.close()

    def abort(self) -> None:
        """Close the connection without the final ``.`` (if not yet sent): the server discards it."""
        client, self._client = self._client, None
        if client is not None:
            client.close()


def open_delivery(msg: EmailMessage, host: str, port: int, timeout: float = 10) -> OpenDelivery:
    """Go through an SMTP transaction for ``msg`` up to (not including) the final ``.``.

    Raises like :func:`send_message` for an unreachable server, a refused sender or content, every
    recipient refused, or a non-ASCII address without SMTPUTF8 — with nothing sent. If only some
    recipients are refused, the others stay in the returned delivery's envelope.
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
        accepted, refused = _start_transaction(client, envelope)
    except MailDeliveryError:
        client.close()
        raise
    except smtplib.SMTPRecipientsRefused as exc:
        client.close()
        raise _all_refused(exc) from exc
    except smtplib.SMTPResponseException as exc:
        client.close()
        raise _refusal(exc) from exc
    except (smtplib.SMTPException, OSError) as exc:
        client.close()
        raise MailDeliveryError(f"cannot deliver via {where}: {exc}") from exc
    return OpenDelivery(client, Envelope(sender, accepted, data, tuple(options)), refused, where)


def send_message(msg: EmailMessage, host: str, port: int, timeout: float = 10) -> None:
    """Send ``msg`` to the SMTP server at ``host:port`` (recipients from its To/Cc/Bcc headers).

    Raises :class:`MailDeliveryError` if the server is unreachable, refuses the message, or refuses
    any recipient (in that last case the others did receive it; ``refused`` lists who did not),
    and :class:`SmtpUtf8NotOfferedError` for a non-ASCII address the server can't take.
    ``msg`` itself is not changed; Bcc headers are not sent.
    """
    delivery = open_delivery(msg, host, port, timeout)
    try:
        delivery.finish()
    finally:
        delivery.close()
    if delivery.refused:
        raise MailDeliveryError(
            f"recipients refused: {', '.join(sorted(delivery.refused))}", delivery.refused
        )


def send_envelope(
    envelope: Envelope, host: str, port: int, timeout: float = 10
) -> dict[str, tuple[int, bytes]]:
    """Send an :class:`Envelope` again exactly as it went before (same bytes, same Message-ID).

    Returns the recipients refused this time; raises :class:`MailDeliveryError` if none accepted it,
    the server refused it, or cannot take it any more (e.g. it stopped offering SMTPUTF8).
    """
    where = f"{host}:{port}"
    try:
        with smtplib.SMTP(host, port, timeout=timeout) as client:
            client.ehlo_or_helo_if_needed()
            for option, extension in (("SMTPUTF8", "smtputf8"), ("BODY=8BITMIME", "8bitmime")):
                if option in envelope.options and not client.has_extn(extension):
                    missing = SmtpUtf8NotOfferedError if extension == "smtputf8" else MailDeliveryError
                    raise missing(f"{where} no longer offers {extension.upper()}, which this message needs")
            _, refused = _start_transaction(client, envelope)
            client.send(b".\r\n")
            code, reply = client.getreply()
            if code != 250:
                raise smtplib.SMTPDataError(code, reply)
    except MailDeliveryError:
        raise
    except smtplib.SMTPRecipientsRefused as exc:
        raise _all_refused(exc) from exc
    except smtplib.SMTPResponseException as exc:
        raise _refusal(exc) from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise MailDeliveryError(f"cannot deliver via {where}: {exc}") from exc
    return refused


def _refusal(exc: smtplib.SMTPResponseException) -> MailDeliveryError:
    error = exc.smtp_error
    reply = error.decode("utf-8", "replace") if isinstance(error, bytes) else error
    return MailDeliveryError(f"server refused: {exc.smtp_code} {reply}", smtp_code=exc.smtp_code)


def _all_refused(exc: smtplib.SMTPRecipientsRefused) -> MailDeliveryError:
    # Temporary only if every refusal was temporary (4xx): then a later try may reach someone.
    codes = [code for code, _ in exc.recipients.values()]
    worst = max(codes, default=None)
    return MailDeliveryError("all recipients were refused", exc.recipients, smtp_code=worst)


def _start_transaction(
    client: smtplib.SMTP, envelope: Envelope
) -> tuple[tuple[str, ...], dict[str, tuple[int, bytes]]]:
    """MAIL, RCPT for each recipient, DATA and the content, without the final ``.``.

    Returns (accepted, refused); raises ``SMTPRecipientsRefused`` if nobody was accepted.
    """
    code, reply = client.mail(envelope.sender, list(envelope.options))
    if code != 250:
        raise smtplib.SMTPSenderRefused(code, reply, envelope.sender)
    refused: dict[str, tuple[int, bytes]] = {}
    for address in envelope.recipients:
        code, reply = client.rcpt(address)
        if code not in (250, 251):
            refused[address] = (code, reply)
    if len(refused) == len(envelope.recipients):
        raise smtplib.SMTPRecipientsRefused(refused)
    client.putcmd("data")
    code, reply = client.getreply()
    if code != 354:
        raise smtplib.SMTPDataError(code, reply)
    # Dot-stuffing as in RFC 5321 4.5.2; the content ends with CRLF so that ".\r\n" ends it.
    content = re.sub(rb"(?m)^\.", b"..", envelope.data)
    client.send(content if content.endswith(b"\r\n") else content + b"\r\n")
    accepted = tuple(address for address in envelope.recipients if address not in refused)
    return accepted, refused


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
