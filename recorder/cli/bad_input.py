"""Which errors ``hatp-recorder`` says as bad input (exit status 2, one line), apart from the commands.

``serve`` and ``explain`` start without the commands' imports (they boot servers or read kept tools
first); they import this module only when a command fails, and the commands import it at the top.
"""

from __future__ import annotations

import sys

from hatp_journal.recorder import tracing
from hatp_journal.recorder.config import ConfigError
from hatp_journal.recorder.directory import DirectoryError
from hatp_journal.recorder.intake.downstream_errors import DownstreamError
from hatp_journal.recorder.policy import PolicyFileError
from hatp_journal.recorder.record import UnknownRun
from hatp_journal.recorder.record.entry_bodies import OwnBodyUnreadable
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.toolkit.errors import KeyFileError, StoreError


def said_as_bad_input(error: Exception) -> bool:
    """Print ``error`` as the command line says bad input (exit status 2), if it is such an error."""
    if isinstance(error, StoreError | UndoError | DownstreamError):
        # A bad URL, an unreachable database, a schema of a later version; a refused undo; a tool
        # server that won't start, answers garbage or changed its key.
        print(f"hatp-recorder: {error.code}: {error.message}", file=sys.stderr)
    elif isinstance(error, ConfigError | PolicyFileError | KeyFileError | DirectoryError | KeyError):
        said = error.args[0] if isinstance(error, KeyError) and error.args else error  # no repr quotes
        print(f"hatp-recorder: error: {said}", file=sys.stderr)
    elif isinstance(error, tracing.TracingError):  # asked for, but no SDK or exporter to send to
        print(f"hatp-recorder: {error}", file=sys.stderr)
    elif isinstance(error, OwnBodyUnreadable):  # an entry of the Recorder's own, edited in the store
        print(f"hatp-recorder: {error.code}: {error}", file=sys.stderr)
    elif isinstance(error, UnknownRun):  # show, export, approve/deny of an ask in a run that does not exist
        print(f"hatp-recorder: {UndoCode.UNKNOWN_RUN}: {error}", file=sys.stderr)
    else:
        return False
    return True
