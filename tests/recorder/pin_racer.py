"""One of two processes racing to pin a server's key: ``python pin_racer.py STORE``.

Per round it reads ``{"server": ..., "key": ..., "engine": ...}`` (a raw public key, base64url), answers
``ready``, waits for ``go`` and then trusts that key for that server as a Recorder meeting it would,
answering ``{"trusted": [kids]}`` or ``{"code": CODE}``. ``engine`` is ``immediate`` (the Recorder's
store: ``BEGIN IMMEDIATE``) or ``deferred`` (plain SQLAlchemy SQLite, which locks nothing until it
writes, as a server database would not: only the per-server row can stop a second pin there), or
``postgresql`` when STORE is a PostgreSQL URL.
"""

import json
import sys

from sqlalchemy import create_engine

from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.gateway.downstream import Downstream, DownstreamError
from hatp_journal.recorder.intake.pins import PinStore
from hatp_journal.toolkit.signing import VerifyKey, b64url_decode
from hatp_journal.toolkit.store import create_store_engine


def main() -> None:
    """Race one round per line on stdin until it closes."""
    store = sys.argv[1]
    if "://" in store:  # a PostgreSQL store: its row locks, not a file lock, decide the race
        pins = {"postgresql": PinStore(create_store_engine(store))}
    else:
        pins = {
            "immediate": PinStore(create_store_engine(store)),
            "deferred": PinStore(create_engine(f"sqlite:///{store}")),
        }
    while line := sys.stdin.readline():
        round_ = json.loads(line)
        key = VerifyKey.from_raw(b64url_decode(round_["key"]))
        # Only trust() runs: the key is handed over as the server's keys answer would have offered it.
        downstream = Downstream(round_["server"], ServerConfig(command="not-started"), pins[round_["engine"]])
        print("ready", flush=True)
        if sys.stdin.readline() != "go\n":
            return
        try:
            downstream.trust({key.kid: key})
        except DownstreamError as error:
            print(json.dumps({"code": error.code}), flush=True)
        else:
            print(json.dumps({"trusted": sorted(downstream.keys)}), flush=True)


if __name__ == "__main__":
    main()
