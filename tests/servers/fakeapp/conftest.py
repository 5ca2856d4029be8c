"""Fixtures for the fake app's tests: the shipped ones, plus a small HTTP client that reads pages."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import httpx2
import pytest

from hatp_journal.servers.fakeapp import FakeApp
from hatp_journal.servers.fakeapp.pytest_fixtures import (
    browser_page,
    chromium,
    fake_app,
    fake_app_server,
)

__all__ = ["browser_page", "chromium", "fake_app", "fake_app_server", "site"]

BOUND = 5.0  # seconds; every HTTP call is bounded by this


@dataclass
class Table:
    """A table read from a page: column headers, and each row's cells keyed by header."""

    headers: list[str] = field(default_factory=list)
    rows: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class Page:
    """What the tests read from a page: its tables (by aria-label), alerts and status lines."""

    tables: dict[str, Table] = field(default_factory=dict)
    alerts: list[dict[str, str]] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)


class _Reader(HTMLParser):
    """Reads tables, ``role=alert`` and ``role=status`` out of the app's pages (stdlib only)."""

    def __init__(self) -> None:
        super().__init__()
        self.page = Page()
        self._table: Table | None = None
        self._row: tuple[str, list[str]] | None = None
        self._cell: list[str] | None = None
        self._in_head = False
        self._role: tuple[str, dict[str, str], list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag == "table":
            self._table = self.page.tables.setdefault(attributes.get("aria-label", ""), Table())
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr" and self._table is not None:
            self._row = (attributes.get("aria-label", ""), [])
        elif tag in ("th", "td") and self._row is not None:
            self._cell = []
        if attributes.get("role") in ("alert", "status"):
            self._role = (attributes["role"], attributes, [])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td") and self._row is not None and self._cell is not None:
            self._row[1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            label, cells = self._row
            if self._in_head:
                self._table.headers = cells
            elif label:
                self._table.rows[label] = dict(zip(self._table.headers, cells, strict=True))
            self._row = None
        elif tag == "thead":
            self._in_head = False
        elif tag == "table":
            self._table = None
        elif tag == "p" and self._role is not None:
            role, attributes, text = self._role
            if role == "alert":
                self.page.alerts.append({**attributes, "text": "".join(text)})
            else:
                self.page.statuses.append("".join(text))
            self._role = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._role is not None:
            self._role[2].append(data)


def read_page(html: str) -> Page:
    """Parse one of the app's pages."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    return reader.page


class Site:
    """The fake app seen over real HTTP: get pages, post forms, turn knobs via ``/_control``."""

    def __init__(self, app: FakeApp, client: httpx2.Client) -> None:
        self.app = app
        self.client = client

    def get(self, path: str) -> httpx2.Response:
        return self.client.get(path)

    def post(self, path: str, **form: str) -> httpx2.Response:
        return self.client.post(path, data=form)

    def control(self, path: str, body: dict[str, Any]) -> httpx2.Response:
        return self.client.post(f"/_control/{path}", json=body)

    def read(self, response: httpx2.Response) -> Page:
        """Parse a response's page (whatever its status)."""
        return read_page(response.text)

    def follow(self, response: httpx2.Response) -> Page:
        """Follow a 303 after a form post and parse the page it leads to."""
        assert response.status_code == 303, response.text
        return self.page(response.headers["location"])

    def page(self, path: str) -> Page:
        response = self.get(path)
        assert response.status_code == 200, response.text
        return read_page(response.text)

    def table(self, path: str = "/") -> Table:
        label = "Trash" if path.startswith("/trash") else "Invoices"
        return self.page(path).tables[label]


@pytest.fixture
def site(fake_app: FakeApp) -> Iterator[Site]:
    """A :class:`Site` over a fresh fake app (layout a, test controls on)."""
    # Plain HTTP on loopback: verify=False only skips loading the CA store (~80 ms a client).
    with httpx2.Client(base_url=fake_app.url, timeout=BOUND, verify=False) as client:
        yield Site(fake_app, client)
