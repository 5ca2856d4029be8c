"""What the approver's pages share (rendering, the signed-in person, forms) and the plan pages:
reviewing a Reversal Plan, deciding it, following its outcome, resuming it, asking for one.

:class:`~hatp_journal.recorder.web.app.WebApprover` builds the application on it: its routes, the
asks and runs pages, the scheduler.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from hatp_journal.recorder.config import RecorderConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.policy import Policy, load_policy
from hatp_journal.recorder.record import RunStore, UnknownRun
from hatp_journal.recorder.record.entry_bodies import OwnBodyUnreadable
from hatp_journal.recorder.runs.asks import Asks
from hatp_journal.recorder.runs.walk import each_run
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
    refusal,
)
from hatp_journal.recorder.undo.authority import halt_of, halted
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.execute import finished, reversal_of, undo_progress
from hatp_journal.recorder.undo.planner import UndoRequest
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.recorder.undo.side_effects import side_effects_of
from hatp_journal.recorder.web.errors import WebCode, WebRefusal
from hatp_journal.recorder.web.runner import Approval, UndoRunner
from hatp_journal.recorder.web.signin import Session, SignIn
from hatp_journal.recorder.web.views import time_left, undo_steps
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.signing import SigningKey

_log = logging.getLogger(__name__)

COOKIE = "hatp_session"
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


class ApproverPages:
    """The pages' shared steps and the plan pages, over the attributes ``WebApprover`` sets."""

    config: RecorderConfig
    clock: Clock
    store: RunStore
    signin: SignIn
    templates: Environment
    undos: UndoRunner
    shown_outcomes: set[str]

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
