"""The demo servers' console scripts (pyproject.toml), each naming its extra when it is missing."""

from __future__ import annotations

from collections.abc import Sequence

from hatp_journal._shared.extras import needs_extras, require_extra


@needs_extras
def mailsink(argv: Sequence[str] | None = None) -> int:
    """``hatp-mailsink`` (extra ``servers``)."""
    from hatp_journal.servers.mailsink.cli import main

    return main(argv)


@needs_extras
def fakeapp(argv: Sequence[str] | None = None) -> int:
    """``hatp-fakeapp`` (extra ``servers``)."""
    from hatp_journal.servers.fakeapp.cli import main

    return main(argv)


@needs_extras
def crm(argv: Sequence[str] | None = None) -> int:
    """``hatp-crm`` (a PostgreSQL store names the ``postgresql`` extra itself: STORE_BAD_URL)."""
    from hatp_journal.servers.crm.cli import main

    return main(argv)


@needs_extras
def calendar(argv: Sequence[str] | None = None) -> int:
    """``hatp-calendar`` (extra ``servers``, checked first: icalendar is imported at the first invitation)."""
    require_extra("servers")
    from hatp_journal.servers.calendar.cli import main

    return main(argv)


@needs_extras
def email(argv: Sequence[str] | None = None) -> int:
    """``hatp-email`` (a PostgreSQL store names the ``postgresql`` extra itself: STORE_BAD_URL)."""
    from hatp_journal.servers.email.cli import main

    return main(argv)


@needs_extras
def ui(argv: Sequence[str] | None = None) -> int:
    """``hatp-ui`` (extras ``browser`` and ``serve``; the browser is named first, being its own)."""
    require_extra("browser")
    from hatp_journal.servers.ui.cli import main

    return main(argv)
