"""Makes the shipped ``mail_sink`` fixture available to the mail sink tests."""

from hatp_journal.servers.mailsink.pytest_fixtures import mail_sink

__all__ = ["mail_sink"]
