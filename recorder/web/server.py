"""Serving the approver: in this thread for ``hatp-recorder web``, or in a background thread for tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

_POLL_SECONDS = 0.01


@contextmanager
def serving(
    app: ASGIApp,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout: float = 10.0,
    *,
    scheduler: bool = False,
) -> Iterator[str]:
    """Serve ``app`` from a background thread; yields its base URL, stops (bounded) on exit.

    The approver's scheduler runs in the app's lifespan, so it runs only with ``scheduler=True``.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    url = f"http://{host}:{sock.getsockname()[1]}"
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on" if scheduler else "off")
    )
    finished = threading.Event()

    def serve() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            finished.set()

    thread = threading.Thread(target=serve, name=f"hatp-approver {url}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            if finished.wait(_POLL_SECONDS):
                raise RuntimeError("the approver's server stopped while starting (see the log)")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the approver did not start within {timeout} s")
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout)
        sock.close()


def serve_forever(app: ASGIApp, host: str, port: int) -> None:
    """Serve ``app`` in this thread until SIGINT or SIGTERM, with the scheduler (the app's lifespan).

    No access log: sign-in links carry their one-time token in the query string.
    """
    uvicorn.run(app, host=host, port=port, log_level="info", lifespan="on", access_log=False)
