"""``hatp-recorder explain``: the command line around :mod:`.explain`.

Kept apart from ``commands.py`` so that an answer from a kept tool list imports neither the MCP stack
nor the store's machinery: it is meant to come in well under a second.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import anyio

from hatp_journal._shared.clock import utc_now
from hatp_journal._shared.text import json_for_people
from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.gateway.explain import ExplainError, explain, explanation, parse_arguments
from hatp_journal.recorder.policy import load_policy


def explain_command(args: argparse.Namespace) -> int:
    """Run ``explain`` for the parsed arguments; 2 for anything the command line calls bad input."""
    try:
        config = load_config(args.config)
        policy = load_policy(Path(config.recorder.policy), directory=config.recorder.directory)
        arguments = parse_arguments(args.args)
        explained = anyio.run(
            partial(explain, refresh=args.refresh),
            config,
            policy,
            args.server,
            args.tool,
            arguments,
            utc_now(),
        )
    except ExplainError as error:
        print(f"hatp-recorder: {error.code}: {error.message}", file=sys.stderr)
        return 2
    except Exception as error:
        from hatp_journal.recorder.cli.bad_input import said_as_bad_input  # lazy: only now: it imports much

        if not said_as_bad_input(error):
            raise
        return 2
    if args.json:
        print(json_for_people(explained.decision.wire(), indent=2))
    else:
        print(explanation(explained, policy))
        if explained.listed_at is not None:
            print(f"listed: as the server listed its tools at {explained.listed_at} (--refresh asks it now)")
        else:
            print("listed: as the server listed its tools just now")
    return 0
