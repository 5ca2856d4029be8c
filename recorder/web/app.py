"""The web approver: the Human Gateway's pages (protocol.md §9, §11, §12), the same gateway as the CLI.

Every page reads the Run Record when it is requested; every decision goes through the same code
as ``hatp-recorder approve`` (signed with the person's key), and an approved plan is run with the
same ``UndoServers`` the command line uses. Pages are rendered on the server with Jinja2 and
autoescaping on, so whatever a tool server or agent wrote is shown as text, never as markup.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import anyio
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.asks import Asks, in_doubt
from hatp_journal.recorder.config import RecorderConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.policy import Policy, load_policy
from hatp_journal.recorder.record import RunStore, UnknownRun
from hatp_journal.recorder.record.entry_bodies import CallBody, OwnBodyUnreadable, read_own
from hatp_journal.recorder.reminders import record_seen, tick
from hatp_journal.recorder.run_walk import each_run
from hatp_journal.recorder.runs import stalled_approvals
from hatp_journal.recorder.undo.actions import (
    ask_for_plan,
    display_name,
    load_directory,
)
from hatp_journal.recorder.undo.approval import (
    PlanAsk,
    check_overrides,
    decide_plan,
    find_plan,
    last_refusal,
    listed_plans,
    refusal,
)
from hatp_journal.recorder.undo.authority import halt_of, halted
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.execute import finished, reversal_of, undo_progress
from hatp_journal.recorder.undo.plan import recorded_undo
from hatp_journal.recorder.undo.planner import UndoRequest
from hatp_journal.recorder.undo.remedy import is_remedy, perform_remedy
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.recorder.web.errors import WebCode, WebRefusal
from hatp_journal.recorder.web.hosts import ServedHostOnly, served_hosts
from hatp_journal.recorder.web.runner import Approval, UndoRunner
from hatp_journal.recorder.web.signin import Session, SignIn, load_secret, make_link_token
from hatp_journal.recorder.web.views import (
    DoubtLine,
    ask_view,
    clock_time,
    day_time,
    plan_line,
    request_words,
    review,
    side_effects_of,
    status_words,
    time_left,
    timeline,
    undo_steps,
    unreadable_line,
)
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.signing import SigningKey

_log = logging.getLogger(__name__)

COOKIE = "hatp_session"
TICK_FAILED = "TICK_FAILED"
"""Printed by the scheduler for a tick that failed as a whole (the store away); the next one runs."""
TEMPLATES = Path(__file__).parent / "templates"
# No scripts at all, forms only to ourselves, never framed: defence in depth behind autoescaping.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

Clock = Callable[[], datetime]
Handler = Callable[[Request], Awaitable[Response]]


class WebApprover:
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

    def _page(self, handler: Handler) -> Handler:
        async def page(request: Request) -> Response:
            try:
                return await handler(request)
            except WebRefusal as refusal:
                return self._message(request, refusal.code, refusal.message, status=refusal.status)
            except UndoError as error:
                # NOTHING_TO_UNDO: no plan was filed, nobody is asked; each step kept is listed with why.
                kept = error.details if error.code is UndoCode.NOTHING_TO_UNDO else None
                return self._message(request, str(error.code), error.message, status=409, kept=kept)
            except OwnBodyUnreadable as unreadable:  # an edited or hostile store: named, never guessed at
                return self._message(request, str(unreadable.code), str(unreadable), status=409)
            except (KeyError, UnknownRun):
                return self._message(request, WebCode.NOT_FOUND, "there is no such page", status=404)

        return page

    def _served_hosts(self) -> frozenset[str]:
        return served_hosts(self.config.web.base_url, self.listening)  # read each time: tests move it

    def _host_not_served(self, scope: Scope, host: str) -> Response:
        shown = host if len(host) <= 100 else f"{host[:100]}…"
        said = f"this approver answers only {self.config.web.base_url}, not the host {shown!r}"
        code = WebCode.HOST_NOT_SERVED
        return self._message(Request(scope), code, said, status=WebRefusal(code, said).status)

    def _render(self, request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        session = self._maybe_session(request)
        html = self.templates.get_template(name).render(person=session.person if session else None, **context)
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def _message(
        self,
        request: Request,
        code: str,
        message: str,
        *,
        status: int = 200,
        see: tuple[str, str] | None = None,
        kept: dict[str, Any] | None = None,
    ) -> HTMLResponse:
        """A refusal page; ``see`` is (words, path) of the page that shows what did count; ``kept`` the
        steps an undo left as they are, by section, each with its reason."""
        return self._render(
            request, "message.html", status=status, code=code, message=message, see=see, kept=kept
        )

    def _maybe_session(self, request: Request) -> Session | None:
        try:
            return self.signin.session(request.cookies.get(COOKIE), self.clock())
        except WebRefusal:
            return None

    def _session(self, request: Request) -> Session:
        return self.signin.session(request.cookies.get(COOKIE), self.clock())

    async def _form(self, request: Request) -> tuple[Session, dict[str, list[str]]]:
        """A POSTed form from our own page: same origin, signed in, with this session's CSRF token."""
        origin = request.headers.get("origin")
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin is not None and origin != own:
            raise WebRefusal(WebCode.CROSS_SITE, f"a form from {origin} may not decide anything here")
        session = self._session(request)
        form = await request.form()
        fields: dict[str, list[str]] = {}
        for name, value in form.multi_items():
            fields.setdefault(name, []).append(str(value))
        self.signin.check_csrf(session, _one(fields, "csrf"))
        return session, fields

    def _key(self, person: str) -> SigningKey:
        path = Path(self.config.web.keys) / f"{person.rstrip('/').rsplit('/', 1)[-1]}.key"
        try:
            return SigningKey.from_file(path)
        except KeyFileError:
            raise WebRefusal(WebCode.NO_KEY, f"the approver holds no signing key for {person}") from None

    def _policy(self) -> Policy:
        return load_policy(Path(self.config.recorder.policy), directory=self.config.recorder.directory)

    def _directory(self) -> Directory:
        return load_directory(self.config)

    def _withdraw_overdue(self, directory: Directory) -> None:
        asks = Asks(self.store)
        now = self.clock()
        overdue = lambda run: asks.withdraw_overdue(run.id, now, directory)  # noqa: E731
        withdrawing = each_run(self.store, overdue, logger=_log, doing="withdrawing overdue asks")
        for _ in withdrawing:
            pass

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

    async def _plan(self, request: Request) -> Response:
        session = self._session(request)
        ask = find_plan(self.store, _ref(request))
        directory = self._directory()
        policy = self._policy()
        may = policy.undo_authority is not None and session.person in directory.holders(policy.undo_authority)
        plan = ask.plan
        decide_by = ask.decide_by
        calls = {entry.id: entry for entry in self.store.entries(ask.run)}
        return self._render(
            request,
            "plan.html",
            ref=ask.ref,
            plan=plan,
            side_effects={step.entry: side_effects_of(step, calls) for step in plan.steps},
            state=ask.state,
            principal=display_name(directory, plan.principal),
            requested_by=display_name(directory, plan.requested_by),
            decide_by=decide_by,
            left=time_left(decide_by, self.clock()),
            may_decide=may,
            csrf=session.csrf,
            form=session.new_form(),
            digest=ask.digest,
        )

    async def _decide_plan(self, request: Request) -> Response:
        session, fields = await self._form(request)
        ref = _ref(request)
        ask = find_plan(self.store, ref)
        if _one(fields, "digest") != ask.digest:
            raise WebRefusal(WebCode.FORM_STALE, "this form shows another plan: reload the page")
        decision = _decision(fields)
        overrides = fields.get("override", []) if decision == "approve" else []
        confirmed = set(fields.get("confirm", []))
        unconfirmed = [step for step in overrides if step not in confirmed]
        if unconfirmed:
            raise WebRefusal(
                WebCode.OVERRIDE_NOT_CONFIRMED,
                f"overwriting the newer change in {unconfirmed[0]} needs its own confirmation: go back and "
                "tick the confirmation, or leave that step out",
            )
        key = self._key(session.person)
        self.signin.use_form(session, _one(fields, "form"))
        check_overrides(ask.plan, decision, overrides)
        policy, directory, now = self._policy(), self._directory(), self.clock()
        person = session.person
        if decision == "approve" and refusal(ask, person, key, directory, policy.undo_authority, now) is None:
            # An approval counts only if the plan built again now is the one shown, which asks the
            # tool servers: that check, then the undo, run in the background; the page answers now.
            approval = Approval(person, key, tuple(overrides), policy, directory, now)
            self.undos.start(ref, approval)
            return RedirectResponse(f"/plans/{ref}/outcome", status_code=303, headers=SECURITY_HEADERS)
        # A denial, or an approval refused whatever the plan says now: recorded at once, no server asked.
        outcome = decide_plan(
            self.store,
            ref,
            decision,
            person=person,
            key=key,
            directory=directory,
            undo_authority=policy.undo_authority,
            fresh=None,
            overrides=overrides,
            now=now,
        )
        if not outcome.counted:
            return self._message(
                request, WebCode.NOT_COUNTED, outcome.message, see=_what_counted(find_plan(self.store, ref))
            )
        return self._render(request, "decided.html", message=f"You denied {ref}.", ref=ref)

    async def _outcome(self, request: Request) -> Response:
        session = self._session(request)
        ask = find_plan(self.store, _ref(request))
        entries = self.store.entries(ask.run)
        reversal = reversal_of(entries, ask.entry.id)
        running = self.undos.running(ask.ref)
        # A halt is read from the record, so the page says why even after a restart or a CLI resume.
        halt = halt_of(entries, ask.entry.id)
        # A record with steps to retry is shown with Resume, unless a resume runs (or was halted).
        if reversal is not None and (finished(reversal) or (not running and halt is None)):
            self.shown_outcomes.add(ask.ref)
            retry = not finished(reversal)
            return self._render(
                request,
                "outcome.html",
                ref=ask.ref,
                reversal=reversal,
                plan=ask.plan,
                retry=retry,
                csrf=session.csrf,
                form=session.new_form() if retry else None,
            )
        checking = ask.state == "pending" and running
        if ask.state == "pending" and not running:
            # This process's check of an approval failed (a server it could not ask), or the
            # record says why the latest decision did not count.
            why = self.undos.stopped(ask.ref) or last_refusal(entries, ask.entry.id)
            if why is not None:
                return self._message(
                    request, WebCode.NOT_COUNTED, f"not counted: {why}", see=_what_counted(ask)
                )
        if ask.state != "approved" and not checking:
            raise WebRefusal(WebCode.NOT_FOUND, f"{ask.ref} has not been run (it is {ask.state})")
        return self._render(
            request,
            "undoing.html",
            ref=ask.ref,
            steps=undo_steps(ask.plan, *undo_progress(entries, ask.entry.id)),
            checking=checking,
            running=running,
            stopped=self.undos.stopped(ask.ref),
            halted=None if halt is None or running else halted(ask, halt),
            csrf=session.csrf,
            form=None if running else session.new_form(),
        )

    async def _resume(self, request: Request) -> Response:
        session, fields = await self._form(request)
        ask = find_plan(self.store, _ref(request))
        entries = self.store.entries(ask.run)
        done = reversal_of(entries, ask.entry.id)
        if ask.state != "approved" or (done is not None and finished(done)):
            raise WebRefusal(WebCode.NOT_RESUMABLE, f"{ask.ref} is {ask.state} and has nothing left to run")
        halt = halt_of(entries, ask.entry.id)
        if halt is not None:
            raise WebRefusal(WebCode.NOT_RESUMABLE, halted(ask, halt).message)
        self.signin.use_form(session, _one(fields, "form"))
        self.undos.start(ask.ref)
        return RedirectResponse(f"/plans/{ask.ref}/outcome", status_code=303, headers=SECURITY_HEADERS)

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

    async def _ask_for_plan(self, request: Request) -> Response:
        session, fields = await self._form(request)
        run = request.path_params["run"]
        try:
            from_step = int(_one(fields, "from"))
        except ValueError:
            raise WebRefusal(WebCode.FORM_STALE, "pick a step to undo from") from None
        self.signin.use_form(session, _one(fields, "form"))
        async with AsyncExitStack() as stack:
            servers = UndoServers(self.config, self.store, stack)
            ask = await ask_for_plan(
                self.store,
                self._policy(),
                self._directory(),
                servers,
                run,
                UndoRequest(from_step=from_step),
                by=session.person,
                now=self.clock(),
            )
        return RedirectResponse(f"/plans/{ask.ref}", status_code=303, headers=SECURITY_HEADERS)


def sign_in_link(
    config: RecorderConfig, person: str, *, now: datetime, valid_for: timedelta | None = None
) -> str:
    """A signed, expiring, one-time sign-in link for ``person``, under the configured secret."""
    minutes = timedelta(minutes=config.web.link_minutes)
    token = make_link_token(
        load_secret(Path(config.web.secret)), person, now=now, valid_for=valid_for or minutes
    )
    return f"{config.web.base_url.rstrip('/')}/signin?token={quote(token)}"


def _what_counted(ask: PlanAsk) -> tuple[str, str]:
    """Where a decision that did not count sends the person: the outcome of the approval that
    counted, or the plan as it stands (denied, withdrawn, or still waiting)."""
    if ask.state == "approved":
        return ("See the outcome of the approval that counted", f"/plans/{ask.ref}/outcome")
    return (f"See the plan (it is {ask.state})", f"/plans/{ask.ref}")


def _ref(request: Request) -> str:
    return f"{request.path_params['run']}/{request.path_params['entry']}"


def _one(fields: dict[str, list[str]], name: str) -> str:
    values = fields.get(name) or [""]
    return values[0]


def _decision(fields: dict[str, list[str]]) -> Literal["approve", "deny"]:
    decision = _one(fields, "decision")
    if decision == "approve":
        return "approve"
    if decision == "deny":
        return "deny"
    raise WebRefusal(WebCode.FORM_STALE, "the form says neither approve nor deny")
