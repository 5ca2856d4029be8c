"""Send one email over SMTP, in a form the server said it accepts, with stable errors.

What goes on the wire depends on the server's EHLO answer:

- The body is 8-bit only if the server offers 8BITMIME (then ``BODY=8BITMIME`` is declared);
  otherwise every part with non-ASCII data is re-encoded, text as quoted-printable and anything
  else as base64, so each byte sent is 7-bit ASCII.
- Headers with non-ASCII text are RFC 2047 encoded words, unless an address of the envelope is
  not ASCII (``zoë@globex.com``): such a message needs SMTPUTF8 (RFC 6531) and is sent with UTF-8
  headers (RFC 6532). A server that does not offer SMTPUTF8 cannot carry it at all:
  :class:`SmtpUtf8NotOfferedError`, with its own code, before anything is sent.
"""

from __future__ import annotations

import copy
import quopri
import smtplib
from email import encoders
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.policy import EmailPolicy, default
from email.utils import getaddresses
from io import BytesIO

__all__ = ["MailDeliveryError", "SmtpUtf8NotOfferedError", "send_message"]


class MailDeliveryError(Exception):
    """The message was not (fully) delivered: refused by the server, or the server was unreachable.

    ``reason`` says why; ``refused`` maps each refused recipient to the server's (code, reply).
    """

    code = "MAIL_DELIVERY_FAILED"

    def __init__(self, reason: str, refused: dict[str, tuple[int, bytes]] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.refused: dict[str, tuple[int, bytes]] = dict(refused or {})


class SmtpUtf8NotOfferedError(MailDeliveryError):
    """An address is not ASCII and the server does not offer SMTPUTF8, so nothing was sent."""

    code = "SMTPUTF8_NOT_OFFERED"


def send_message(msg: EmailMessage, host: str, port: int, timeout: float = 10) -> None:
    """Send ``msg`` to the SMTP server at ``host:port`` (recipients from its To/Cc/Bcc headers).

    Raises :class:`MailDeliveryError` if the server is unreachable, refuses the message, or refuses
    any recipient (in that last case the others did receive it; ``refused`` lists who did not),
    and :class:`SmtpUtf8NotOfferedError` for a non-ASCII address the server can't take.
    ``msg`` itself is not changed; Bcc headers are not sent.
    """
    sender, recipients = _envelope(msg)
    international = not "".join([sender, *recipients]).isascii()
    try:
        with smtplib.SMTP(host, port, timeout=timeout) as client:
            client.ehlo_or_helo_if_needed()
            if international and not client.has_extn("smtputf8"):
                raise SmtpUtf8NotOfferedError(
                    f"{host}:{port} does not offer SMTPUTF8, which the non-ASCII address needs"
                )
            eight_bit = client.has_extn("8bitmime")
            data = _wire_bytes(msg, eight_bit=eight_bit, utf8=international)
            options = ["SMTPUTF8"] if international else []
            if eight_bit and not data.isascii():
                options.append("BODY=8BITMIME")
            refused = client.sendmail(sender, recipients, data, options)
    except smtplib.SMTPRecipientsRefused as exc:
        raise MailDeliveryError("all recipients were refused", exc.recipients) from exc
    except smtplib.SMTPResponseException as exc:
        error = exc.smtp_error
        reply = error.decode("utf-8", "replace") if isinstance(error, bytes) else error
        raise MailDeliveryError(f"server refused: {exc.smtp_code} {reply}") from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise MailDeliveryError(f"cannot deliver via {host}:{port}: {exc}") from exc
    if refused:
        raise MailDeliveryError(f"recipients refused: {', '.join(sorted(refused))}", refused)


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
