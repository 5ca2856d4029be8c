"""``python -m hatp_journal.recorder.cli``: the name hosts' files used before the CLI became a package."""

from hatp_journal.recorder.cli.command_line import main

raise SystemExit(main())
