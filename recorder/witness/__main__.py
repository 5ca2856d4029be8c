"""``python -m hatp_journal.recorder.witness``: the same as ``hatp-witness``."""

import sys

from hatp_journal.recorder.witness.cli import main

sys.exit(main())
