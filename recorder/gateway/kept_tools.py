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
import sqlite3
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal._shared.files import FileProblem, read_bytes
from hatp_journal.recorder.config import ServerConfig
from hatp_journal.toolkit.signing import VerifyKey, b64url, b64url_decode
from hatp_journal.toolkit.wire import BINDING_TOOLS, KEYS_TOOL

if TYPE_CHECKING:  # the MCP stack is imported only to start a server, never to read what was kept
    from hatp_journal.recorder.gateway.downstream import Downstream
    from hatp_journal.recorder.intake.pins import PinStore

MAX_KEPT_BYTES = 16 << 20
"""A kept file larger than this is not read (a server's tool list is far smaller)."""


class KeptAnnotations(BaseModel):
    """A tool's MCP annotations as listed (what deciding a call reads of them: the hints)."""

    model_config = ConfigDict(extra="allow", strict=True)

    title: str | None = None
    # The wire's spellings, as Hints.of reads them of anything that is not the MCP SDK's model.
    readOnlyHint: bool | None = None
    destructiveHint: bool | None = None
    idempotentHint: bool | None = None
    openWorldHint: bool | None = None


class KeptTool(BaseModel):
    """A tool as listed: its name, annotations and ``_meta`` (where its HATP declaration is)."""

    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)

    name: str
    annotations: KeptAnnotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


@dataclass(frozen=True)
class KeptServer:
    """A server as its last connect saw it (a :class:`~.call_facts.ListedServer`), not started."""

    name: str
    config: ServerConfig
    tools: Mapping[str, KeptTool]
    keys: Mapping[str, VerifyKey]
    kept_at: str

    @property
    def journal_aware(self) -> bool:
        return KEYS_TOOL in self.tools

    def agent_tools(self) -> list[KeptTool]:
        return [tool for name, tool in self.tools.items() if name not in BINDING_TOOLS]


class KeptTools(BaseModel):
    """What one connect to a server saw: its tools as listed and the keys it offered."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["hatp-kept-tools/1"] = "hatp-kept-tools/1"
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
    if kept_path(store, server) is None:
        return None  # nothing is kept for such a store: no need to read its pins
    if not Path(store).exists():
        return []
    try:
        # Read-only, with no SQLAlchemy: a kept answer must not wait for the store's machinery.
        with contextlib.closing(sqlite3.connect(f"{Path(store).as_uri()}?mode=ro", uri=True)) as db:
            rows = db.execute("SELECT kid, public_key FROM rec_pin WHERE server = ?", (server,)).fetchall()
    except sqlite3.Error as error:
        return [] if "no such table" in str(error) else None
    return sorted(f"store:{kid}={public}" for kid, public in rows)


def pinned_in(config: ServerConfig, pins: PinStore | None, server: str) -> list[str]:
    """:func:`pinned_now` with the store's pins at hand (``pins``)."""
    if config.pin:
        return sorted(f"config:{kid}" for kid in config.pin)
    keys = pins.pinned(server) if pins is not None else {}
    return sorted(f"store:{kid}={b64url(key.raw())}" for kid, key in keys.items())  # as rec_pin has it


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


def kept(store: str, server: str, config: ServerConfig, pinned: list[str] | None) -> KeptServer | None:
    """``server`` as its last connect saw it, not started, if that still holds for this
    configuration and these ``pinned`` keys; None otherwise."""
    path = kept_path(store, server)
    if path is None or pinned is None:
        return None
    try:
        found = KeptTools.model_validate_json(read_bytes(path, limit=MAX_KEPT_BYTES))
        tools = [KeptTool.model_validate(tool) for tool in found.tools]
        offered = {kid: VerifyKey.from_raw(b64url_decode(raw)) for kid, raw in found.offered.items()}
    except (FileProblem, OSError, ValidationError, ValueError):
        return None
    if found.server != server or found.identity != identity(config) or found.pinned != pinned:
        return None
    if any(kid != key.kid for kid, key in offered.items()):
        return None
    listed = {tool.name: tool for tool in tools}
    keys: Mapping[str, VerifyKey] = {}
    if KEYS_TOOL in listed:  # as Downstream.trust settles them, with no store to pin in
        if any(kid not in offered for kid in config.pin):
            return None  # a pinned kid it did not offer: the server itself must say so
        keys = {kid: offered[kid] for kid in config.pin} if config.pin else offered
    return KeptServer(server, config, listed, keys, found.kept_at)
