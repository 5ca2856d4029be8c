"""``python -m hatp_journal.servers.calendar``: the same as the ``hatp-calendar`` command."""

import sys

from hatp_journal.servers.calendar.cli import main

sys.exit(main())
