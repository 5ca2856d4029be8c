"""The approver's pages over plain HTTP, as a browser without JavaScript sees them (no chromium: fast)."""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar

from support.undo_org import LEE
from web_org import Approver


class Browser:
    """A cookie-keeping HTTP client, like a browser without JavaScript."""

    def __init__(self, approver: Approver) -> None:
        self.approver = approver
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

    def get(self, path_or_url: str) -> tuple[int, str]:
        url = path_or_url if "://" in path_or_url else self.approver.url + path_or_url
        return self._send(urllib.request.Request(url))

    def post(self, path: str, fields: dict[str, str], origin: str | None = None) -> tuple[int, str]:
        data = urllib.parse.urlencode(fields).encode()
        request = urllib.request.Request(self.approver.url + path, data=data, method="POST")
        request.add_header("Origin", origin or self.approver.url)
        return self._send(request)

    def _send(self, request: urllib.request.Request) -> tuple[int, str]:
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()


def code(html: str) -> str:
    found = re.search(r'id="message" data-code="([A-Z_]+)"', html)
    return found.group(1) if found else "no message"


def form_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', html))


def signed_in(approver: Approver, person: str = LEE) -> Browser:
    browser = Browser(approver)
    status, html = browser.get(approver.web.link(person))
    assert status == 200, html
    assert "signed in as" in html
    return browser


def decisions(approver: Approver, run: str) -> list[bool]:
    return [bool(e.body["counted"]) for e in approver.org.entries(run) if e.kind == "decision"]
