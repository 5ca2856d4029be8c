"""Pytest fixtures for tests that need a real SMTP server.

Import the fixture into a test module (or a conftest) to use it::

    from hatp_journal.servers.mailsink.pytest_fixtures import mail_sink  # noqa: F401

    def test_welcome_email_is_delivered(mail_sink):
        send_message(msg, mail_sink.host, mail_sink.port)
        assert mail_sink.wait_for(1)[0].envelope_to == ("buyer@globex.com",)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ._server import MailSink

__all__ = ["mail_sink"]


@pytest.fixture
def mail_sink(tmp_path: Path) -> Iterator[MailSink]:
    """A running :class:`MailSink` on a free loopback port, storing into ``tmp_path/maildir``."""
    with MailSink(tmp_path / "maildir") as sink:
        yield sink
