"""Links: what each call relied on, with where that knowledge came from (protocol.md §8).

- ``declared``: the tool server named the resources in ``effect.uses``;
- ``host``: the agent's host said so (``_meta["hatp/host"]["uses"]`` on the call);
- ``inferred``: an argument matches what an earlier call wrote — recorded and shown, but on its
  own it never replaces the safe default;
- ``confirmed``: a reviewer confirmed an inferred link (a ``link`` entry, ``confirm-link``);
- ``default``: depends on everything earlier in the run. A call without a verified journal object
  (an unaware server, a failed intake) gets it unless a host or a reviewer says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, StrictStr

from hatp_journal.recorder.changes.host_undo import host_resource
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.record.entry_bodies import LinkBody, read_as
from hatp_journal.recorder.record.unreadable import BodyModel, OrAbsent

LinkSource = Literal["declared", "host", "inferred", "confirmed", "default"]
_MIN_INFERRED = 4
"""Shorter values ("Won", "USD", "1") match too much to suggest anything."""


@dataclass(frozen=True)
class Link:
    """``entry`` (the later call) relied on ``on`` (an earlier one)."""

    entry: str
    on: str
    source: LinkSource
    via: str = ""

    def wire(self) -> dict[str, str]:
        """The link as recorded: ``{"on": "e2", "source": "declared", "via": "crm://…"}``."""
        return {"on": self.on, "source": self.source, **({"via": self.via} if self.via else {})}


class _View(BodyModel):
    """A part of a call's body as links read it: a member that does not fit reads as absent."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class _Written(_View):
    resource: StrictStr
    fields: Any = None


class _Used(_View):
    resource: Any


class _Effect(_View):
    resource: Annotated[StrictStr | None, OrAbsent] = None
    fields: Any = None
    also: Annotated[list[Annotated[_Written | None, OrAbsent]] | None, OrAbsent] = None
    uses: Annotated[list[Annotated[_Used | None, OrAbsent]] | None, OrAbsent] = None

    def written(self) -> list[tuple[str, Any]]:
        """Each resource the effect names as written, with the field values it left there."""
        if self.resource is None:
            return []
        return [(self.resource, self.fields)] + [(w.resource, w.fields) for w in self.also or [] if w]


class _Journal(_View):
    effect: Annotated[_Effect | None, OrAbsent] = None


class _Status(_View):
    status: Any = None
    kind: Any = None


class _Host(_View):
    uses: Annotated[list[Any] | None, OrAbsent] = None


class _Recorded(_View):
    on: Any
    source: Any = None
    via: Any = ""


class LinkedCall(_View):
    """A ``call`` body as links read it (one being journaled, or one recorded)."""

    intake: Annotated[_Status | None, OrAbsent] = None
    journal: Annotated[_Journal | None, OrAbsent] = None
    outcome: Annotated[_Status | None, OrAbsent] = None
    arguments: Any = None
    host: Annotated[_Host | None, OrAbsent] = None
    host_undo: Any = None
    links: Annotated[list[Annotated[_Recorded | None, OrAbsent]] | None, OrAbsent] = None

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> LinkedCall:
        """The view of ``body`` (which every member that does not fit leaves out: never a failure)."""
        return cls.model_validate(body)

    def verified(self) -> bool:
        return self.intake is not None and self.intake.status == "verified"

    def host_written(self) -> str | None:
        ok = self.outcome is not None and self.outcome.status == "ok"
        return host_resource(self.host_undo, succeeded=ok)

    def effect(self) -> _Effect | None:
        return self.journal.effect if self.journal is not None else None


class LinkIndex:
    """What the calls of one run wrote so far, to link each new call as it is journaled.

    The gateway keeps one per run in memory (O(1) per call); the planner rebuilds one by
    replaying entries that were journaled without links.
    """

    def __init__(self) -> None:
        self._writers: dict[str, str] = {}  # resource URI → latest call that wrote it
        self._values: dict[str, str] = {}  # id-like value → the call that wrote it
        self._last: str | None = None

    def links(self, call: LinkedCall) -> list[dict[str, str]]:
        """The links of a call about to be journaled (read with :meth:`LinkedCall.of`)."""
        found: list[dict[str, str]] = []
        verified = call.verified()
        effect = call.effect()
        if verified and call.journal is not None:
            for used in (effect.uses or []) if effect is not None else []:
                resource = str(used.resource) if used is not None else None
                if resource is not None and resource in self._writers:
                    found.append(Link("", self._writers[resource], "declared", resource).wire())
        written = call.host_written()  # the host registry declares what the call touches
        if written is not None and written in self._writers:
            found.append(Link("", self._writers[written], "declared", written).wire())
        verified = verified or written is not None
        hosted = [u for u in (call.host.uses or []) if isinstance(u, str)] if call.host is not None else []
        found += [Link("", on, "host").wire() for on in hosted]
        for value in sorted(set(_strings(call.arguments))):
            writer = self._values.get(value)
            if writer is not None and not any(link["on"] == writer for link in found):
                found.append(Link("", writer, "inferred", value).wire())
        if not verified and not hosted and self._last is not None:
            found.append({"on": self._last, "source": "default", "via": "everything earlier"})
        return found

    def add(self, entry_id: str, call: LinkedCall) -> None:
        """Remember what the call journaled as ``entry_id`` wrote."""
        self._last = entry_id
        host = call.host_written()
        effect = _Effect(resource=host) if host is not None else call.effect()
        for resource, fields in effect.written() if effect is not None else []:
            self._writers[resource] = entry_id
            for value in (resource, resource.rstrip("/").rsplit("/", 1)[-1], *_strings(fields)):
                self._values[value] = entry_id


def dependencies(entries: Iterable[Entry]) -> dict[str, set[str]]:
    """For each call entry, the earlier call entries it depends on (inferred links left out).

    Confirmed links (``link`` entries) are added; a default link means every earlier call,
    unless a host or confirmed link narrows it. A verified compensable write also depends on the
    run's previous write of the same resource (of each, for a call that wrote several): the run's
    own writes to one resource (create, edit, delete) are one chain, undone newest first, whether
    or not the server declared the use.
    """
    index = LinkIndex()
    calls: list[str] = []
    position: dict[str, int] = {}
    recorded: dict[str, list[_Recorded]] = {}
    confirmed: dict[str, set[str]] = {}
    writer: dict[str, str] = {}  # resource → the latest call of the run that wrote it
    previous_write: dict[str, set[str]] = {}  # call → the run's writes of its resources just before it
    for entry in entries:
        if entry.kind == "link":
            link = read_as(LinkBody, entry)
            if isinstance(link, LinkBody) and link.source == "confirmed":
                confirmed.setdefault(str(link.entry), set()).add(str(link.on))
        if entry.kind != "call":
            continue
        linked = LinkedCall.of(entry.body)
        kept = (
            linked.links
            if linked.links is not None
            else [_Recorded.model_validate(n) for n in index.links(linked)]
        )
        recorded[entry.id] = [link for link in kept if link is not None]
        index.add(entry.id, linked)
        for written in _written(linked):
            if written in writer:
                previous_write.setdefault(entry.id, set()).add(writer[written])
            writer[written] = entry.id
        position[entry.id] = len(calls)
        calls.append(entry.id)
    depends: dict[str, set[str]] = {}
    for at, call in enumerate(calls):
        links = recorded[call]
        chosen = {str(link.on) for link in links if link.source in ("declared", "host")}
        chosen |= confirmed.get(call, set())
        chosen |= previous_write.get(call, set())
        if any(link.source == "default" for link in links) and not (
            confirmed.get(call) or any(link.source == "host" for link in links)
        ):
            chosen |= set(calls[:at])
        depends[call] = {on for on in chosen if position.get(on, at) < at}
    return depends


def dependents(entries: Iterable[Entry]) -> dict[str, set[str]]:
    """For each call entry, the later call entries that depend on it (the inverse of :func:`dependencies`)."""
    found: dict[str, set[str]] = {}
    for call, ons in dependencies(entries).items():
        found.setdefault(call, set())
        for on in ons:
            found.setdefault(on, set()).add(call)
    return found


def kept_for(
    entry: str, relied_on_by: Mapping[str, set[str]], staying: AbstractSet[str], undone: AbstractSet[str]
) -> list[str]:
    """The staying calls (not undone by this undo) that rely on ``entry``, in run order: directly, or
    through calls already undone by an earlier undo. An undone call left its resource as it found it,
    so a call that followed it on that resource follows ``entry``: while it stays, ``entry`` can't be
    undone either (the resource is not as ``entry`` left it)."""
    found: set[str] = set()
    seen: set[str] = set()
    frontier = list(relied_on_by.get(entry, ()))
    while frontier:
        later = frontier.pop()
        if later in seen:
            continue
        seen.add(later)
        if later in staying:
            found.add(later)
        elif later in undone:
            frontier.extend(relied_on_by.get(later, ()))
    return sorted(found, key=lambda e: int(e[1:]))


def inferred(entries: Iterable[Entry]) -> list[Link]:
    """Every inferred link recorded in the run (shown to reviewers, who may confirm them)."""
    found: list[Link] = []
    for entry in entries:
        recorded = LinkedCall.of(entry.body).links if entry.kind == "call" else None
        found += [
            Link(entry.id, str(link.on), "inferred", str(link.via))
            for link in recorded or []
            if link is not None and link.source == "inferred"
        ]
    return found


def _written(call: LinkedCall) -> list[str]:
    """The resources a verified compensable call (or one the host undoes) wrote: ``effect.resource``
    and, for a call that wrote several, each of ``effect.also``."""
    host = call.host_written()
    if host is not None:
        return [host]
    if call.intake is None or call.intake.status != "verified" or call.intake.kind != "compensate":
        return []
    if call.outcome is not None and call.outcome.status in ("error", "failed"):
        return []  # refused or failed: it wrote nothing a later write could follow on
    effect = call.effect()
    return [resource for resource, _ in effect.written()] if effect is not None else []


def _strings(value: Any) -> Iterable[str]:
    """Id-like strings anywhere in ``value`` (long enough to mean something when they match)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and len(item) >= _MIN_INFERRED:
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
