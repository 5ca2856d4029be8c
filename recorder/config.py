"""The Recorder's configuration file (TOML). Errors name the file and the line."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hatp_journal._shared.durations import MAX_WINDOW_SECONDS
from hatp_journal._shared.files import MAX_NESTING, FileProblem, check_nesting, read_text, too_deep

SAFE_INTEGER = 2**53 - 1

MAX_CONFIG_BYTES = 1024 * 1024
"""The largest ``recorder.toml`` read (1 MiB; a real one is a few hundred bytes, and ``tomllib``
needs seconds for a megabyte of deeply dotted keys)."""


RUN_KEY_SHAPE = re.compile(r"^[A-Za-z0-9._~-]{8,200}$")
"""What a run key looks like (``recorder/runs/keys.py``): safe in a URL, an env variable and a header."""


RUN_KEY_ENV = "HATP_RUN_KEY"
"""The environment variable a host sets to name the run (as ``serve --run-key`` does)."""


def check_key_shape(key: str) -> None:
    """ValueError for a run key that could never be sent back."""
    if not RUN_KEY_SHAPE.fullmatch(key):  # match would take a trailing newline
        raise ValueError("a run key is 8-200 letters, digits or ._~-")


class ConfigError(ValueError):
    """The configuration can't be used; the Recorder refuses to start."""


class ServerConfig(BaseModel):
    """One downstream tool server: a stdio command or an HTTP URL."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    pin: list[str] = Field(default_factory=list, description="Pinned key ids; empty: pin on first contact")
    timeout_seconds: float = Field(default=30.0, gt=0, le=MAX_WINDOW_SECONDS)
    trusted: bool = Field(
        default=False, description="Trust the server's MCP hints: a closed-world readOnlyHint makes a tool R0"
    )

    @model_validator(mode="after")
    def _one_target(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command or url")
        return self


class RecorderSection(BaseModel):
    """The ``[recorder]`` table."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    store: str = "recorder.db"
    key: str = "recorder.key"
    policy: str = "policy.json"
    directory: str | None = None
    agent: str = "agent"
    principal: str = "principal"
    checkpoint_every: int = Field(default=100, gt=0, le=SAFE_INTEGER)
    max_arguments_bytes: int = Field(
        default=4 * 1024 * 1024,
        gt=0,
        le=SAFE_INTEGER,
        description="Largest arguments (canonical JSON bytes) a call may have; larger: journaled, refused",
    )
    max_journal_bytes: int = Field(
        default=4 * 1024 * 1024,
        gt=0,
        le=SAFE_INTEGER,
        description="Largest journal object of a result kept in an entry; larger: digest kept, unresolved",
    )
    run_key: str | None = Field(
        default=None, description="Name the run: processes and connections with this key share it"
    )
    run_idle_seconds: float = Field(
        default=3600,
        gt=0,
        le=MAX_WINDOW_SECONDS,
        description="A keyed run nobody called for this long is closed, its head signed",
    )
    wait_seconds: float = Field(
        default=0,
        ge=0,
        le=MAX_WINDOW_SECONDS,
        description="How long an ask holds the call open by default (0: answer pending at once)",
    )
    max_wait_seconds: float = Field(
        default=0,
        ge=0,
        le=MAX_WINDOW_SECONDS,
        description="The longest an agent may ask an ask to hold its call open",
    )
    tracing: bool = Field(
        default=False,
        description="Send OpenTelemetry spans to the exporters the OTEL_* environment names",
    )
    retry_window_seconds: float = Field(
        default=60,
        ge=0,
        description="The same write again within this long is a retry and gets the first answer (0: off)",
    )

    @model_validator(mode="after")
    def _run_fields(self) -> RecorderSection:
        if self.run_key is not None:
            check_key_shape(self.run_key)
        if self.wait_seconds > self.max_wait_seconds:
            raise ValueError("wait_seconds must not be more than max_wait_seconds")
        return self


class WebSection(BaseModel):
    """The ``[web]`` table: the browser approver (``hatp-recorder web``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    keys: str = Field(
        default="keys",
        description="Folder of people's signing keys, NAME.key for human://org/NAME (demo only)",
    )
    secret: str = Field(default="web.secret", description="HMAC secret for sign-in links; made if absent")
    base_url: str = Field(default="http://127.0.0.1:8766", description="Where links in messages point")
    link_minutes: int = Field(
        default=15, gt=0, le=MAX_WINDOW_SECONDS // 60, description="How long a sign-in link stays usable"
    )
    session_minutes: int = Field(
        default=480, gt=0, le=MAX_WINDOW_SECONDS // 60, description="How long a sign-in lasts"
    )
    tick_seconds: float = Field(
        default=60, gt=0, le=MAX_WINDOW_SECONDS, description="How often the approver runs `tick`"
    )


class MailSection(BaseModel):
    """The ``[mail]`` table: the SMTP server reviews and reminders are sent through."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    smtp_host: str = "127.0.0.1"
    smtp_port: int | None = Field(default=None, gt=0, lt=65536, description="Unset: no mail is sent")
    sender: str = "hatp-recorder@localhost"


class WitnessConfig(BaseModel):
    """One ``[[witnesses]]`` table: a witness that cosigns this Recorder's heads (docs/witness.md)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,62}$", description="The name its cosignatures carry")
    url: str = Field(pattern=r"^https?://[^\s]+$", description="Its base URL")
    key: str = Field(description="Its public key (JSON from `hatp-witness pubkey`): cosignatures are checked")
    timeout_seconds: float = Field(default=10, gt=0, le=MAX_WINDOW_SECONDS)
    retry_seconds: float = Field(
        default=1, gt=0, le=MAX_WINDOW_SECONDS, description="First wait before retrying; doubles from there"
    )
    max_retry_seconds: float = Field(
        default=60, gt=0, le=MAX_WINDOW_SECONDS, description="The longest wait between two attempts"
    )


class RecorderConfig(BaseModel):
    """The whole configuration file."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    recorder: RecorderSection = Field(default_factory=RecorderSection)
    web: WebSection = Field(default_factory=WebSection)
    mail: MailSection = Field(default_factory=MailSection)
    servers: dict[str, ServerConfig]
    witnesses: list[WitnessConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _names(self) -> RecorderConfig:
        for name in self.servers:
            if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
                raise ValueError(f"server name {name!r} must be lowercase letters, digits and dashes")
        names = [witness.name for witness in self.witnesses]
        if len(set(names)) != len(names):
            raise ValueError("two witnesses have the same name")
        return self


def load_config(path: Path) -> RecorderConfig:
    """Read and validate ``path``; relative paths in it are taken from its folder.

    The file is read through :mod:`hatp_journal._shared.files` (size, UTF-8, nesting limits).
    """
    try:
        text = read_text(path, limit=MAX_CONFIG_BYTES)
        check_nesting(text, path, syntax="toml")
    except FileProblem as problem:
        raise ConfigError(str(problem)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(_syntax_error(path, text, error)) from None
    except ValueError as error:  # an integer of more than 4,300 digits: int() refuses it
        raise ConfigError(f"{path}: {error}".split("; use sys.set_int_max_str_digits")[0]) from None
    deep = too_deep(data)
    if deep is not None:  # a table header's dots and its keys' dots, each within the limit, add up
        shown = ".".join(str(part) for part in deep[:4])
        raise ConfigError(f"{path}: {shown}…: nested deeper than {MAX_NESTING} levels")
    try:
        config = RecorderConfig.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        location = [str(part) for part in first["loc"]]
        line = _line_of(text, location)
        where = f"{path}:{line}" if line else str(path)
        raise ConfigError(f"{where}: {'.'.join(location)}: {first['msg']}") from None
    base = path.resolve().parent  # never the working folder: hosts start the Recorder anywhere
    section = config.recorder
    section.store = _resolve(base, section.store)
    section.key = _resolve(base, section.key)
    section.policy = _resolve(base, section.policy)
    if section.directory is not None:
        section.directory = _resolve(base, section.directory)
    config.web.keys = _resolve(base, config.web.keys)
    config.web.secret = _resolve(base, config.web.secret)
    for witness in config.witnesses:
        witness.key = _resolve(base, witness.key)
    for server in config.servers.values():
        if server.command is not None:
            # A stdio server starts in the config's folder unless cwd says otherwise, so a relative
            # --db in its args is the same file whichever folder the host started the Recorder in.
            server.cwd = _resolve(base, server.cwd) if server.cwd else str(base)
            server.command = resolve_command(base, server.command)
    return config


def resolve_command(base: Path, command: str) -> str:
    """A server's command as an absolute path where one can be found: a bare name beside the
    Recorder's own Python first (the environment hatp-recorder was installed in), then on PATH; a
    relative path from the config's folder. Unfound, it is kept as written (:func:`missing_commands`)."""
    if Path(command).is_absolute():
        return command
    if "/" in command or "\\" in command:
        return str((base / command).resolve())
    beside = Path(sys.executable).parent / command
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(command)
    return str(Path(found).resolve()) if found else command


def missing_commands(config: RecorderConfig, path: Path) -> list[str]:
    """One line per stdio server whose command can't be run (``path:line: servers.NAME.command: …``)."""
    problems = []
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    for name, server in config.servers.items():
        command = server.command
        if command is None or Path(command).is_absolute():
            continue  # found, or written absolute: starting it says what is wrong (DOWNSTREAM_FAILED)
        line = _server_line(text, name)
        where = f"{path}:{line}" if line else str(path)
        problems.append(
            f"{where}: servers.{name}.command: {command!r} is neither beside hatp-recorder "
            f"({Path(sys.executable).parent}) nor on PATH ({os.environ.get('PATH', '')}); "
            "give its absolute path (`hatp-recorder install` prints a config that works in any host)"
        )
    return problems


def _server_line(text: str, name: str) -> int | None:
    """The line of the ``command`` key inside ``[servers.NAME]``, else of that table's header."""
    header = re.compile(rf"^\s*\[\s*servers\.{re.escape(name)}\s*\]")
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if header.search(line):
            for offset, later in enumerate(lines[number:], start=number + 1):
                if later.lstrip().startswith("["):
                    break
                if re.match(r"^\s*command\s*=", later):
                    return offset
            return number
    return None


def with_run_key(config: RecorderConfig, key: str | None) -> RecorderConfig:
    """``config`` with the run key the host gave on the command line or in the environment."""
    if not key:
        return config
    try:
        check_key_shape(key)
    except ValueError as error:
        raise ConfigError(f"run key: {error}") from None
    return config.model_copy(update={"recorder": config.recorder.model_copy(update={"run_key": key})})


def _syntax_error(path: Path, text: str, error: tomllib.TOMLDecodeError) -> str:
    """``path:line:column: what``; the parser says where only in its message: ``(at line 3, column 7)``."""
    message = str(error)
    found = re.search(r" \(at line (\d+), column (\d+)\)$", message)
    if found is not None:
        return f"{path}:{found[1]}:{found[2]}: {message[: found.start()]}"
    if message.endswith(" (at end of document)"):
        last = text.rstrip("\n").count("\n") + 1
        return f"{path}:{last}: {message.removesuffix(' (at end of document)')} at the end of the file"
    return f"{path}: {message}"


def _resolve(base: Path, value: str) -> str:
    return value if "://" in value or Path(value).is_absolute() else str(base / value)


def _line_of(text: str, location: list[str]) -> int | None:
    """The line where the last named key of ``location`` (or its table) appears."""
    for name in reversed(location):
        pattern = re.compile(rf"^\s*(\[\s*[\w.-]*\b{re.escape(name)}\b\s*\]|{re.escape(name)}\s*=)")
        for number, line in enumerate(text.splitlines(), start=1):
            if pattern.search(line):
                return number
    return None
