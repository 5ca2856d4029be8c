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
from dataclasses import dataclass
from typing import Any, Literal

from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.undo.host_undo import host_resource

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


class LinkIndex:
    """What the calls of one run wrote so far, to link each new call as it is journaled.

    The gateway keeps one per run in memory (O(1) per call); the planner rebuilds one by
    replaying entries that were journaled without links.
    """

    def __init__(self) -> None:
        self._writers: dict[str, str] = {}  # resource URI → latest call that wrote it
        self._values: dict[str, str] = {}  # id-like value → the call that wrote it
        self._last: str | None = None

    def links(self, body: Mapping[str, Any]) -> list[dict[str, str]]:
        """The links of a call about to be journaled with ``body``."""
        found: list[dict[str, str]] = []
        journal = body.get("journal") if isinstance(body.get("journal"), dict) else None
        verified = isinstance(body.get("intake"), dict) and body["intake"].get("status") == "verified"
        if verified and journal is not None:
            for resource in _uses(journal):
                if resource in self._writers:
                    found.append(Link("", self._writers[resource], "declared", resource).wire())
        written = host_resource(body)  # the host registry declares what the call touches
        if written is not None and written in self._writers:
            found.append(Link("", self._writers[written], "declared", written).wire())
        verified = verified or written is not None
        hosted = _host_uses(body)
        found += [Link("", on, "host").wire() for on in hosted]
        for value in sorted(set(_strings(body.get("arguments")))):
            writer = self._values.get(value)
            if writer is not None and not any(link["on"] == writer for link in found):
                found.append(Link("", writer, "inferred", value).wire())
        if not verified and not hosted and self._last is not None:
            found.append({"on": self._last, "source": "default", "via": "everything earlier"})
        return found

    def add(self, entry_id: str, body: Mapping[str, Any]) -> None:
        """Remember what the call journaled as ``entry_id`` wrote."""
        self._last = entry_id
        journal = body.get("journal")
        effect = journal.get("effect") if isinstance(journal, dict) else None
        if host_resource(body) is not None:
            effect = {"resource": host_resource(body)}
        if not isinstance(effect, dict) or not isinstance(effect.get("resource"), str):
            return
        for resource, fields in _each_written(effect):
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
    recorded: dict[str, list[dict[str, str]]] = {}
    confirmed: dict[str, set[str]] = {}
    writer: dict[str, str] = {}  # resource → the latest call of the run that wrote it
    previous_write: dict[str, set[str]] = {}  # call → the run's writes of its resources just before it
    for entry in entries:
        if entry.kind == "link" and entry.body.get("source") == "confirmed":
            confirmed.setdefault(str(entry.body.get("entry")), set()).add(str(entry.body.get("on")))
        if entry.kind != "call":
            continue
        links = entry.body.get("links")
        recorded[entry.id] = links if isinstance(links, list) else index.links(entry.body)
        index.add(entry.id, entry.body)
        for written in _written(entry.body):
            if written in writer:
                previous_write.setdefault(entry.id, set()).add(writer[written])
            writer[written] = entry.id
        position[entry.id] = len(calls)
        calls.append(entry.id)
    depends: dict[str, set[str]] = {}
    for at, call in enumerate(calls):
        links = [link for link in recorded[call] if isinstance(link, dict)]
        chosen = {str(link["on"]) for link in links if link.get("source") in ("declared", "host")}
        chosen |= confirmed.get(call, set())
        chosen |= previous_write.get(call, set())
        if any(link.get("source") == "default" for link in links) and not (
            confirmed.get(call) or any(link.get("source") == "host" for link in links)
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


def inferred(entries: Iterable[Entry]) -> list[Link]:
    """Every inferred link recorded in the run (shown to reviewers, who may confirm them)."""
    return [
        Link(entry.id, str(link["on"]), "inferred", str(link.get("via", "")))
        for entry in entries
        if entry.kind == "call" and isinstance(entry.body.get("links"), list)
        for link in entry.body["links"]
        if isinstance(link, dict) and link.get("source") == "inferred"
    ]


def _written(body: Mapping[str, Any]) -> list[str]:
    """The resources a verified compensable call (or one the host undoes) wrote: ``effect.resource``
    and, for a call that wrote several, each of ``effect.also``."""
    if host_resource(body) is not None:
        return [str(host_resource(body))]
    intake = body.get("intake")
    if (
        not isinstance(intake, dict)
        or intake.get("status") != "verified"
        or intake.get("kind") != "compensate"
    ):
        return []
    outcome = body.get("outcome")
    if isinstance(outcome, dict) and outcome.get("status") in ("error", "failed"):
        return []  # refused or failed: it wrote nothing a later write could follow on
    journal = body.get("journal")
    effect = journal.get("effect") if isinstance(journal, dict) else None
    if not isinstance(effect, dict) or not isinstance(effect.get("resource"), str):
        return []
    return [resource for resource, _ in _each_written(effect)]


def _each_written(effect: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Each resource an effect names as written, with the field values it left there."""
    found = [(str(effect["resource"]), effect.get("fields"))]
    also = effect.get("also")
    for write in also if isinstance(also, list) else []:
        if isinstance(write, dict) and isinstance(write.get("resource"), str):
            found.append((write["resource"], write.get("fields")))
    return found


def _uses(journal: Mapping[str, Any]) -> list[str]:
    effect = journal.get("effect")
    uses = effect.get("uses") if isinstance(effect, dict) else None
    if not isinstance(uses, list):
        return []  # not the wire format (a record kept before intake checked it): declares nothing
    return [str(u["resource"]) for u in uses if isinstance(u, dict) and "resource" in u]


def _host_uses(body: Mapping[str, Any]) -> list[str]:
    host = body.get("host")
    uses = host.get("uses") if isinstance(host, dict) else None
    return [u for u in uses or [] if isinstance(u, str)]


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
