"""A tool server's ``tools/list`` kept from the Recorder's last connect, so ``explain`` need not start it.

Every connect (``serve``, or ``explain`` itself) writes what the server listed and the receipt keys
it offered to ``<store>.tools/<server>.json``, beside a store that is a file named by its full path,
as recorder.toml's ``store`` always is once read (a store named by URL keeps none). ``explain``
answers from that file when it still describes the same server:

- its **identity**, the digest of how it is reached (``command``, ``args``, ``env``, ``cwd`` or
  ``url``): a server started another way may list other tools;
- its **pinned keys**: the kids pinned in recorder.toml (``pin``), or else the keys pinned in the
  store at first contact. Another pin means another server as far as trust goes: its declarations
  count differently, so the kept list is not used.

Anything else (no file, a file that is not JSON or not this shape, another format) is as if nothing
were kept: ``explain`` connects, as ``--refresh`` makes it do, and keeps what it got. The file is a
cache, never a record: nothing in it is signed, and nothing but ``explain`` reads it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from mcp.types import Tool
from pydantic import BaseModel, ConfigDict, ValidationError

from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.downstream import Downstream, DownstreamError
from hatp_journal.recorder.pins import PinStore
from hatp_journal.toolkit.canonical import sha256_digest
from hatp_journal.toolkit.clock import utc_now, wire_time
from hatp_journal.toolkit.errors import StoreError
from hatp_journal.toolkit.files import FileProblem, read_bytes
from hatp_journal.toolkit.signing import VerifyKey, b64url, b64url_decode
from hatp_journal.toolkit.store import open_store_engine

KEPT_FORMAT = "hatp-kept-tools/1"
MAX_KEPT_BYTES = 16 << 20
"""A kept file larger than this is not read (a server's tool list is far smaller)."""


class KeptTools(BaseModel):
    """What one connect to a server saw: its tools as listed and the keys it offered."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["hatp-kept-tools/1"] = KEPT_FORMAT
    server: str
    identity: str
    pinned: list[str]
    kept_at: str
    tools: list[dict[str, Any]]
    offered: dict[str, str]
    """Each offered key's kid and raw public key (base64url)."""


def identity(config: ServerConfig) -> str:
    """The digest of how the server is reached: another command, arguments, environment, folder or
    URL may be another server."""
    reached = {"command": config.command, "args": config.args, "env": config.env, "cwd": config.cwd}
    return sha256_digest({**reached, "url": config.url})


def pinned_now(config: ServerConfig, store: str, server: str) -> list[str] | None:
    """The keys pinned for ``server`` now: recorder.toml's ``pin`` kids, else the store's pins
    (none when the store does not exist yet: nothing is created to find out). None when the store
    cannot be read: then nothing kept can be trusted to hold, and ``explain`` connects."""
    if config.pin:
        return pinned_in(config, None, server)
    if "://" not in store and not Path(store).exists():
        return []
    try:
        engine = open_store_engine(store)
    except StoreError:
        return None
    try:
        return pinned_in(config, PinStore(engine), server)
    except StoreError:
        return None
    finally:
        engine.dispose()


def pinned_in(config: ServerConfig, pins: PinStore | None, server: str) -> list[str]:
    """:func:`pinned_now` with the store's pins at hand (``pins``)."""
    if config.pin:
        return sorted(f"config:{kid}" for kid in config.pin)
    keys = pins.pinned(server) if pins is not None else {}
    return sorted(f"store:{kid}={b64url(key.raw())}" for kid, key in keys.items())


def kept_path(store: str | None, server: str) -> Path | None:
    """Where ``server``'s list is kept: beside a store file named by its full path; else None."""
    if store is None or "://" in store or not Path(store).is_absolute():
        return None
    place = Path(store)
    return place.with_name(place.name + ".tools") / f"{server}.json"


def keep(store: str | None, downstream: Downstream, pinned: list[str] | None) -> None:
    """Write what ``downstream`` listed at its connect (atomically: a reader sees the old file or the
    new one). A place that cannot be written keeps nothing: the next ``explain`` connects."""
    path = kept_path(store, downstream.name)
    if path is None or pinned is None or downstream.embedded is not None:
        return
    kept = KeptTools(
        server=downstream.name,
        identity=identity(downstream.config),
        pinned=pinned,
        kept_at=wire_time(utc_now()),
        tools=[
            tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            for tool in downstream.tools.values()
        ],
        offered={kid: b64url(key.raw()) for kid, key in downstream.offered.items()},
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        written, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError:
        return
    try:
        with os.fdopen(written, "wb") as out:
            out.write(kept.model_dump_json(by_alias=True).encode("utf-8"))
        os.replace(name, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name)


def kept(
    store: str, server: str, config: ServerConfig, pinned: list[str] | None
) -> tuple[Downstream, str] | None:
    """``server`` as its last connect saw it, not started (and when that was), if that still holds
    for this configuration and these ``pinned`` keys; None otherwise."""
    path = kept_path(store, server)
    if path is None or pinned is None:
        return None
    try:
        found = KeptTools.model_validate_json(read_bytes(path, limit=MAX_KEPT_BYTES))
        tools = [Tool.model_validate(tool) for tool in found.tools]
        offered = {kid: VerifyKey.from_raw(b64url_decode(raw)) for kid, raw in found.offered.items()}
    except (FileProblem, OSError, ValidationError, ValueError):
        return None
    if found.server != server or found.identity != identity(config) or found.pinned != pinned:
        return None
    if any(kid != key.kid for kid, key in offered.items()):
        return None
    downstream = Downstream(server, config)
    downstream.tools = {tool.name: tool for tool in tools}
    if downstream.journal_aware:
        try:
            downstream.trust(offered)
        except DownstreamError:  # a pinned kid it did not offer: the server itself must say so
            return None
    return downstream, found.kept_at
