"""Run the fake app: in a background thread for tests, or in the foreground for the CLI."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from types import TracebackType
from typing import Self

import uvicorn
from starlette.applications import Starlette
from uvicorn.config import LOGGING_CONFIG

from ._app import create_app
from ._clock import Clock
from ._controls import Controls
from ._host import HOST as HOST  # re-exported
from ._invoice import Invoice
from ._knobs import Knobs, Layout, is_layout
from ._store import InvoiceStore

# How often start() looks at uvicorn's ``started`` flag; the whole wait is bounded by its timeout.
_POLL_SECONDS = 0.01


class FakeApp:
    """The fake invoicing app, served on 127.0.0.1, with helpers that turn its knobs.

    ``FakeApp(db_path)`` opens (or creates and seeds) the SQLite file at once, so a bad path fails
    here. ``start()`` serves it from a background thread on a free port (``url`` then says where);
    ``stop()`` or leaving a ``with`` block shuts it down; ``start()`` again serves on the same port.
    The helpers work whether it is serving or not, and change the same state the ``/_control`` API
    does.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        *,
        layout: Layout = "a",
        retention_days: int = 30,
        test_controls: bool = True,
        port: int = 0,
    ) -> None:
        if not is_layout(layout):
            raise ValueError(f"layout must be 'a' or 'b', got {layout!r}")
        self._clock = Clock()
        self._knobs = Knobs(layout=layout)
        self._store = InvoiceStore(db_path, clock=self._clock, retention_days=retention_days)
        self._controls = Controls(self._store, self._knobs, self._clock)
        self._asgi: Starlette = create_app(
            self._store, self._knobs, self._controls, test_controls=test_controls
        )
        self._port = port
        self._url: str | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    @property
    def url(self) -> str:
        """Base URL while serving, e.g. ``http://127.0.0.1:53123`` (no trailing slash)."""
        if self._url is None:
            raise RuntimeError("the fake app is not serving: call start() first")
        return self._url

    @property
    def asgi_app(self) -> Starlette:
        """The ASGI application, for serving it some other way."""
        return self._asgi

    # -- serving -----------------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> Self:
        """Serve from a background thread; returns once requests are answered (or raises)."""
        if self._thread is not None:
            raise RuntimeError("the fake app is already serving")
        sock = self._listen()
        server = self._make_server(sock, quiet=True)
        finished = threading.Event()

        def serve() -> None:
            try:
                server.run(sockets=[sock])
            finally:
                finished.set()

        thread = threading.Thread(target=serve, name=f"hatp-fakeapp {self._url}", daemon=True)
        self._sock, self._server, self._thread = sock, server, thread
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            # Wakes at once if the server thread died; otherwise re-checks until the deadline.
            if finished.wait(_POLL_SECONDS):
                self.stop()
                raise RuntimeError("the fake app's server stopped while starting (see the log)")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"the fake app did not start within {timeout} s")
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait (bounded) for the server thread; safe to call twice."""
        server, thread, sock = self._server, self._thread, self._sock
        self._server = self._thread = self._sock = None
        self._url = None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive() and server is not None:
                server.force_exit = True
                thread.join(timeout)
        if sock is not None:
            sock.close()

    def run(self, announce: Callable[[str], None] = print) -> None:
        """Serve in this thread until SIGINT or SIGTERM (what ``hatp-fakeapp serve`` does).

        ``announce`` is called with ``listening on <url>`` once the port is bound. Raises
        :class:`OSError` if the port cannot be bound.
        """
        sock = self._listen()
        try:
            server = self._make_server(sock, quiet=False)
            announce(f"listening on {self.url}")
            server.run(sockets=[sock])
        finally:
            self._url = None
            sock.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- knobs and ground truth ----------------------------------------------------------------

    def invoice(self, invoice_id: str) -> Invoice | None:
        """Ground truth: the invoice wherever it is (list or Trash); ``None`` if unknown or purged."""
        return self._store.get(invoice_id)

    def invoices(self) -> list[Invoice]:
        """Ground truth: the invoices in the list (not in Trash), oldest first."""
        return self._store.active()

    def trash(self) -> list[Invoice]:
        """Ground truth: the invoices in Trash that can still be restored."""
        return self._store.trash()

    def reset(self) -> None:
        """Back to the state of a new database: seeded invoices, knobs as constructed, real time.

        Cheaper than a new app per test; the ``fake_app`` fixture does this before each test.
        """
        self._controls.reset()

    def colleague_edit(
        self,
        invoice_id: str,
        *,
        by: str = "eve@acme.com",
        customer: str | None = None,
        amount: str | Decimal | None = None,
        status: str | None = None,
    ) -> Invoice:
        """Change fields as a colleague (``by``) would, outside the agent's session."""
        return self._controls.colleague_edit(
            invoice_id, by=by, customer=customer, amount=amount, status=status
        )

    def set_layout(self, layout: Layout) -> None:
        """Switch every page to layout ``"a"`` or ``"b"``."""
        self._controls.set_layout(layout)

    def set_faulty_restore(self, enabled: bool) -> None:
        """When on, Restore answers success but leaves the invoice in Trash."""
        self._controls.set_faulty_restore(enabled)

    def advance_clock(self, days: float) -> datetime:
        """Move the app's clock forward by ``days`` and return the app's new time."""
        return self._controls.advance_clock(days)

    def set_clock(self, now: datetime) -> None:
        """Stop the app's clock at ``now`` (``advance_clock`` still moves it)."""
        self._controls.set_clock(now)

    def now(self) -> datetime:
        """The app's current time."""
        return self._clock.now()

    # -- internals ---------------------------------------------------------------------------

    def _listen(self) -> socket.socket:
        # Bind before serving so port 0 resolves to a real port and requests queue until ready.
        # proto must be TCP explicitly: asyncio sets TCP_NODELAY on accepted sockets only then,
        # and without it every keep-alive response with a body waits ~40 ms for a delayed ACK.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((HOST, self._port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        # Keep the port: a restart after stop() serves at the same URL (an app that was down, then back).
        self._port = sock.getsockname()[1]
        self._url = f"http://{HOST}:{self._port}"
        return sock

    def _make_server(self, sock: socket.socket, *, quiet: bool) -> uvicorn.Server:
        config = uvicorn.Config(
            self._asgi,
            host=HOST,
            port=sock.getsockname()[1],
            lifespan="off",
            ws="none",
            log_level="warning",
            access_log=False,
            # In-process (tests), leave the host's logging configuration alone.
            log_config=None if quiet else LOGGING_CONFIG,
        )
        return uvicorn.Server(config)
