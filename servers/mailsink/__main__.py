"""``python -m hatp_journal.servers.mailsink`` runs the ``hatp-mailsink`` command."""

import sys

from .cli import main

sys.exit(main())
