"""Makes the shipped ``mail_sink`` fixture available here: the CANCEL goes through real SMTP."""

from hatp_journal.servers.mailsink.pytest_fixtures import mail_sink

__all__ = ["mail_sink"]
