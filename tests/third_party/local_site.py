"""A website on 127.0.0.1 for the servers that fetch or browse pages: it serves fixed pages and
records every path asked for, so a test can tell whether anything left through a server. No test
reaches the internet."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Site:
    """The pages served (path to HTML or text) and the paths asked for, in order."""

    pages: Mapping[str, str]
    port: int = 0
    asked: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextmanager
def local_site(pages: Mapping[str, str]) -> Iterator[Site]:
    """Serve ``pages`` on a free port of 127.0.0.1 for as long as the block runs."""
    site = Site(pages)

    class Pages(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            site.asked.append(self.path)
            page = site.pages.get(self.path.split("?", 1)[0])
            body = (page if page is not None else "not here").encode()
            self.send_response(200 if page is not None else 404)
            kind = "text/plain" if self.path.endswith(".txt") else "text/html"
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet: the test reads `asked`
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    site.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
