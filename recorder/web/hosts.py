"""The approver answers only the Host it serves: its ``base_url`` (where its links point) and the
address ``hatp-recorder web`` listens on. A page asked for under any other name — a DNS name
rebound to 127.0.0.1 by a web page the approver's browser opened — is refused before any handler
runs (``HOST_NOT_SERVED``, 421), so no other site's script can read a page or post a decision."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

DEFAULT_PORTS = {"http": 80, "https": 443}


def served_hosts(base_url: str, listening: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` header values (lower case) the approver answers: ``base_url``'s host with its
    port (and without it, for a scheme's default port), and each of ``listening`` (``host:port``)."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 literal is written in brackets in a Host header
        host = f"[{host}]"
    port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    hosts = {f"{host}:{port}"} if port is not None else set()
    if port is None or port == DEFAULT_PORTS.get(parts.scheme):
        hosts.add(host)
    return frozenset({*hosts, *(name.lower() for name in listening)})


class ServedHostOnly:
    """ASGI middleware: an HTTP request whose ``Host`` is not one of ``hosts()`` gets ``refuse``'s
    answer; everything else (and the lifespan) goes on to ``app``."""

    def __init__(
        self, app: ASGIApp, hosts: Callable[[], frozenset[str]], refuse: Callable[[Scope, str], ASGIApp]
    ) -> None:
        self.app = app
        self.hosts = hosts
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            given = [value for name, value in scope["headers"] if name == b"host"]
            host = given[0].decode("latin-1").lower() if len(given) == 1 else ""
            if host not in self.hosts():
                await self.refuse(scope, host)(scope, receive, send)
                return
        await self.app(scope, receive, send)
