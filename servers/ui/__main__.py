"""``python -m hatp_journal.servers.ui``: the same as the ``hatp-ui`` command."""

import sys

from hatp_journal.servers.ui.cli import main

sys.exit(main())
