"""Mail headers are built only through the email library's header API: text from a tool server or
an agent becomes one folded header line, and an address holding a line break is refused with
``MAIL_ADDRESS_INVALID`` (``parseaddr`` would silently drop what follows it)."""

from __future__ import annotations

import pytest

from hatp_journal._shared.mail import MailAddressError, compose

HOSTILE_SUBJECTS = [
    "Put k1\nBcc: eve@evil.example",
    "Put k1\r\n\r\nInjected body",
    "Put\x00k1\x0b\x0c\x1b[31m",
    "Put k1\u2028\u2029\x85 next",
    "é" * 300,
]


@pytest.mark.parametrize("subject", HOSTILE_SUBJECTS)
def test_a_subject_with_line_breaks_or_controls_is_one_folded_header_line(subject: str) -> None:
    message = compose("recorder@acme.example", ["dana@acme.example"], subject, "text")

    written = message.as_bytes()
    headers = written.split(b"\n\n", 1)[0].decode("ascii")
    assert [line.split(":")[0] for line in headers.splitlines() if not line.startswith(" ")] == [
        "From",
        "To",
        "Subject",
        "Content-Type",
        "Content-Transfer-Encoding",
        "MIME-Version",
    ]
    assert all(len(line) <= 78 for line in headers.splitlines())
    assert "\n" not in str(message["Subject"])


@pytest.mark.parametrize(
    "address", ["dana@acme.example\nBcc: eve@evil.example", "dana@acme.example\r", "a@b, c@d", "dana", "@x"]
)
def test_an_address_that_is_not_exactly_one_is_refused_with_a_stable_code(address: str) -> None:
    with pytest.raises(MailAddressError) as refused:
        compose("recorder@acme.example", [address], "subject", "text")

    assert refused.value.code == "MAIL_ADDRESS_INVALID"
    assert not refused.value.temporary


def test_names_and_addresses_that_are_not_ascii_are_kept() -> None:
    to = ["zoë@globex.example", "Dana <dana@acme.example>"]
    message = compose("Zoë <zoë@globex.example>", to, "s", "t")

    assert str(message["To"]) == "zoë@globex.example, Dana <dana@acme.example>"
    assert str(message["From"]) == "Zoë <zoë@globex.example>"
