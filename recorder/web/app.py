"""The web approver: the Human Gateway's pages (protocol.md §9, §11, §12), the same gateway as the CLI.

Every page reads the Run Record when it is requested; every decision goes through the same code
as ``hatp-recorder approve`` (signed with the person's key), and an approved plan is run with the
same ``UndoServers`` the command line uses. Pages are rendered on the server with Jinja2 and
autoescaping on, so whatever a tool server or agent wrote is shown as text, never as markup.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import anyio
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.changes.plan import recorded_undo
from hatp_journal.recorder.config import RecorderConfig
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.record.entry_bodies import CallBody, OwnBodyUnreadable, read_own
from hatp_journal.recorder.runs.asks import Asks, in_doubt
from hatp_journal.recorder.runs.keys import stalled_approvals
from hatp_journal.recorder.runs.reminders import record_seen, tick
from hatp_journal.recorder.undo.approval import (
    listed_plans,
)
from hatp_journal.recorder.undo.remedy import is_remedy, perform_remedy
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.recorder.web.errors import WebCode, WebRefusal
from hatp_journal.recorder.web.hosts import ServedHostOnly, served_hosts
from hatp_journal.recorder.web.pages import (
    COOKIE,
    SECURITY_HEADERS,
    ApproverPages,
    Clock,
    _decision,
    _one,
    _ref,
)
from hatp_journal.recorder.web.runner import UndoRunner
from hatp_journal.recorder.web.signin import SignIn, load_secret, make_link_token
from hatp_journal.recorder.web.views import (
    DoubtLine,
    ask_view,
    clock_time,
    day_time,
    plan_line,
    request_words,
    review,
    status_words,
    timeline,
    unreadable_line,
)
from hatp_journal.toolkit.signing import SigningKey

_log = logging.getLogger(__name__)

TICK_FAILED = "TICK_FAILED"
"""Printed by the scheduler for a tick that failed as a whole (the store away); the next one runs."""
TEMPLATES = Path(__file__).parent / "templates"


class WebApprover(ApproverPages):
    """The approver's pages over one Recorder configuration; ``app`` is the ASGI application."""

    def __init__(
        self, config: RecorderConfig, *, clock: Clock = utc_now, listening: tuple[str, ...] = ()
    ) -> None:
        """``listening``: the ``host:port`` names it is served on besides ``[web] base_url``'s."""
        self.config = config
        self.listening = listening
        self.clock = clock
        self.store = RunStore(config.recorder.store, SigningKey.load_or_create(config.recorder.key))
        secret_file = Path(config.web.secret)
        self.signin = SignIn(
            load_secret(secret_file),
            secret_file.with_name(secret_file.name + ".used"),
            timedelta(minutes=config.web.session_minutes),
            # On a database URL every approver on the store shares sessions and used links.
            database=self.store.engine if "://" in config.recorder.store else None,
        )
        self.templates = Environment(
            loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined
        )
        self.templates.filters["recorded_undo"] = recorded_undo
        self.templates.filters["clock_time"] = clock_time
        self.templates.filters["day_time"] = day_time
        self.templates.filters["status_words"] = status_words
        self.templates.filters["request_words"] = request_words
        routes = [
            Route("/", self._home),
            Route("/signin", self._page(self._sign_in)),
            Route("/asks", self._page(self._asks)),
            Route("/asks/{run}/{entry}", self._page(self._ask), methods=["GET"]),
            Route("/asks/{run}/{entry}", self._page(self._decide_ask), methods=["POST"]),
            Route("/plans/{run}/{entry}", self._page(self._plan), methods=["GET"]),
            Route("/plans/{run}/{entry}", self._page(self._decide_plan), methods=["POST"]),
            Route("/plans/{run}/{entry}/outcome", self._page(self._outcome)),
            Route("/plans/{run}/{entry}/resume", self._page(self._resume), methods=["POST"]),
            Route("/runs", self._page(self._runs)),
            Route("/runs/{run}", self._page(self._review), methods=["GET"]),
            Route("/runs/{run}/plan", self._page(self._ask_for_plan), methods=["POST"]),
            Route("/runs/{run}/timeline", self._page(self._timeline), methods=["GET"]),
        ]
        only_served = Middleware(ServedHostOnly, hosts=self._served_hosts, refuse=self._host_not_served)
        self.app = Starlette(routes=routes, lifespan=self._lifespan, middleware=[only_served])
        self.undos = UndoRunner(config, clock)
        # Plans whose Reversal Record a page has shown: whoever serves the approver for one
        # decision (the demo) stops once the person has seen the outcome.
        self.shown_outcomes: set[str] = set()

    def link(self, person: str, *, valid_for: timedelta | None = None) -> str:
        """A one-time sign-in link for ``person`` (what ``hatp-recorder web-link`` prints)."""
        return sign_in_link(self.config, person, now=self.clock(), valid_for=valid_for)

    def tick(self) -> list[str]:
        """Send what is due (reviews, reminders, escalations) and record lapses; one line per notice
        or mail that did not go, starting with its code."""
        _, failed = tick(
            self.store,
            self._policy(),
            self._directory(),
            self.config.mail,
            self.clock(),
            self.config.web.base_url,
        )
        return failed

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """The scheduler: ``tick`` every ``[web] tick_seconds`` while serving (idempotent, like cron)."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._tick_forever)
            yield
            tasks.cancel_scope.cancel()

    async def _tick_forever(self) -> None:
        while True:
            try:
                problems = await anyio.to_thread.run_sync(self.tick)
            except Exception as error:  # noqa: BLE001 -- the scheduler outlives any one bad tick
                problems = [f"{TICK_FAILED}: {type(error).__name__}: {error}"]
            for problem in problems:
                print(f"hatp-recorder: {problem}", file=sys.stderr, flush=True)
            await anyio.sleep(self.config.web.tick_seconds)

    def close(self) -> None:
        self.undos.join(timeout=30)
        self.store.dispose()

    # -- plumbing -----------------------------------------------------------------------------

    def _served_hosts(self) -> frozenset[str]:
        return served_hosts(self.config.web.base_url, self.listening)  # read each time: tests move it

    def _host_not_served(self, scope: Scope, host: str) -> Response:
        shown = host if len(host) <= 100 else f"{host[:100]}…"
        said = f"this approver answers only {self.config.web.base_url}, not the host {shown!r}"
        code = WebCode.HOST_NOT_SERVED
        return self._message(Request(scope), code, said, status=WebRefusal(code, said).status)

    # -- pages ----------------------------------------------------------------------------------

    async def _home(self, request: Request) -> Response:
        return RedirectResponse("/asks", status_code=303, headers=SECURITY_HEADERS)

    async def _sign_in(self, request: Request) -> Response:
        session_id, session = self.signin.redeem(request.query_params.get("token", ""), self.clock())
        response = RedirectResponse("/asks", status_code=303, headers=SECURITY_HEADERS)
        max_age = int((session.expires - self.clock()).total_seconds())
        response.set_cookie(COOKIE, session_id, max_age=max_age, httponly=True, samesite="strict", path="/")
        return response

    async def _asks(self, request: Request) -> Response:
        self._session(request)
        directory = self._directory()
        self._withdraw_overdue(directory)
        now = self.clock()
        asks = Asks(self.store).listed()
        plans = listed_plans(self.store)
        views = []
        for ask in (a for a in asks if a.state != "unreadable"):  # with what became of earlier approvals
            earlier = in_doubt(self.store, ask.run).get(ask.terms.call_digest, [])
            views.append(ask_view(ask, directory, now, earlier))
        doubts = [
            DoubtLine(ask.ref, f"{ask.terms.server}.{ask.terms.tool}", what)
            for ask, what in stalled_approvals(self.store, now)
        ]
        return self._render(
            request,
            "asks.html",
            asks=views,
            plans=[plan_line(plan, now) for plan in plans if plan.state != "unreadable"],
            doubts=doubts,
            unreadable_asks=[unreadable_line(ask) for ask in asks if ask.state == "unreadable"],
            unreadable_plans=[unreadable_line(plan) for plan in plans if plan.state == "unreadable"],
        )

    async def _ask(self, request: Request) -> Response:
        session = self._session(request)
        directory = self._directory()
        ref = _ref(request)
        ask = Asks(self.store).find(ref)
        self._withdraw_overdue(directory)
        ask = Asks(self.store).find(ref)
        if ask.state == "unreadable":
            raise OwnBodyUnreadable(ask.entry, ask.marker())
        view = ask_view(ask, directory, self.clock())
        may = directory.person(session.person) is not None and session.person in directory.holders(
            view.approver
        )
        return self._render(
            request,
            "ask.html",
            ask=view,
            state=ask.state,
            may_decide=may,
            csrf=session.csrf,
            form=session.new_form(),
            digest=ask.terms.call_digest,
        )

    async def _decide_ask(self, request: Request) -> Response:
        session, fields = await self._form(request)
        ref = _ref(request)
        asks = Asks(self.store)
        ask = asks.find(ref)
        if ask.state == "unreadable":
            raise OwnBodyUnreadable(ask.entry, ask.marker())
        if _one(fields, "digest") != ask.terms.call_digest:
            raise WebRefusal(WebCode.FORM_STALE, "this form names another call: reload the page")
        decision = _decision(fields)
        key = self._key(session.person)
        self.signin.use_form(session, _one(fields, "form"))
        directory = self._directory()
        outcome = asks.decide(
            ref, decision, person=session.person, key=key, directory=directory, now=self.clock()
        )
        if not outcome.counted:
            now_ask = asks.find(ref)
            if now_ask.state == "withdrawn":
                closed = clock_time(now_ask.decide_by)
                message = (
                    f"This closed at {closed} because of the deadline; "
                    f"your {decision} was recorded but not counted."
                )
                return self._message(request, WebCode.LATE_DECISION, message)
            return self._message(
                request, WebCode.NOT_COUNTED, outcome.message, see=("See the ask as decided", f"/asks/{ref}")
            )
        told = f"Your {decision} of {ref} is recorded and signed."
        if decision == "approve" and is_remedy(ask):
            async with AsyncExitStack() as stack:
                servers = UndoServers(self.config, self.store, stack)
                entry = await perform_remedy(self.store, asks.find(ref), servers)
            ran = read_own(CallBody, entry).outcome
            told += f" The remedy ran: {ran.status if ran is not None else 'failed'}."
        elif decision == "approve":
            told += " The agent's call goes through when it asks again."
        return self._render(request, "decided.html", message=told, ref=ref)

    async def _runs(self, request: Request) -> Response:
        self._session(request)
        return self._render(request, "runs.html", runs=self.store.runs())

    async def _review(self, request: Request) -> Response:
        session = self._session(request)
        run = self.store.run(request.path_params["run"])
        if run.closed_at is not None:
            record_seen(self.store, run.id, session.person, self.clock())  # somebody has looked (§12)
        windows, others = review(self.store.entries(run.id), self.clock())
        return self._render(
            request,
            "review.html",
            run=run,
            windows=windows,
            others=others,
            csrf=session.csrf,
            form=session.new_form(),
        )

    async def _timeline(self, request: Request) -> Response:
        session = self._session(request)
        run = self.store.run(request.path_params["run"])
        steps = timeline(self.store.entries(run.id), self.clock())
        return self._render(
            request, "timeline.html", run=run, steps=steps, csrf=session.csrf, form=session.new_form()
        )


def sign_in_link(
    config: RecorderConfig, person: str, *, now: datetime, valid_for: timedelta | None = None
) -> str:
    """A signed, expiring, one-time sign-in link for ``person``, under the configured secret."""
    minutes = timedelta(minutes=config.web.link_minutes)
    token = make_link_token(
        load_secret(Path(config.web.secret)), person, now=now, valid_for=valid_for or minutes
    )
    return f"{config.web.base_url.rstrip('/')}/signin?token={quote(token)}"
