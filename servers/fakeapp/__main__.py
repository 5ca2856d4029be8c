"""``python -m hatp_journal.servers.fakeapp`` is the same as ``hatp-fakeapp``."""

from .cli import main

raise SystemExit(main())
