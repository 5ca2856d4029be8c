"""What a call changed in a state read, and what an undo must leave, element by element.

The host undo reads a resource before a call (the snapshot) and after it. From the two it knows
what the call added (array elements, members) and what it removed, and nothing else: a colleague's
later change is what differs between the state after the call and the state found at undo time.
Arrays are compared as collections of elements (an element put back may come back at the end).
Paths are RFC 6901 JSON Pointers (``/entities/0/observations/2``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hatp_journal._shared.canonical import canonical_bytes

SHOWN_CHARS = 120
"""How much of a changed value a change shows (the rest is cut, marked with …)."""


def _key(value: Any) -> bytes:
    try:
        return canonical_bytes(value)
    except (TypeError, ValueError):  # not JSON (a float NaN, say): compared by its text
        return repr(value).encode()


def only_in(new: Any, old: Any) -> Any:
    """``new`` keeping only what ``old`` has not: in arrays, the elements not in ``old``'s array at
    the same place (as many times as they are missing), in objects every member so filtered; a
    scalar is kept as it is."""
    if isinstance(new, dict):
        base = old if isinstance(old, dict) else {}
        return {name: only_in(value, base.get(name)) for name, value in new.items()}
    if isinstance(new, list):
        left = Counter(_key(item) for item in old) if isinstance(old, list) else Counter[bytes]()
        kept = []
        for item in new:
            key = _key(item)
            if left[key]:
                left[key] -= 1
            else:
                kept.append(item)
        return kept
    return new


def undone(now: Any, before: Any, after: Any) -> Any:
    """``now`` with the call's own change (``before`` → ``after``) taken back and everything else
    kept: array elements the call added are removed, those it removed come back, a member or
    value the call set goes back to what it was unless someone changed it since."""
    if isinstance(now, dict) and isinstance(before, dict) and isinstance(after, dict):
        result = dict(now)
        for name in before.keys() | after.keys():
            if name in before and name in after:
                if name in now:
                    result[name] = undone(now[name], before[name], after[name])
            elif name in after:  # the call added the member
                if name in now and _key(now[name]) == _key(after[name]):
                    del result[name]
            elif name not in now:  # the call removed the member
                result[name] = before[name]
        return result
    if isinstance(now, list) and isinstance(before, list) and isinstance(after, list):
        added = Counter(_key(item) for item in only_in(after, before))
        kept = []
        for item in now:
            key = _key(item)
            if added[key]:
                added[key] -= 1
            else:
                kept.append(item)
        return kept + only_in(before, after)
    if _key(now) == _key(after):
        return before
    return now


def same(one: Any, other: Any) -> bool:
    """Equal, arrays compared as collections of elements."""
    return _key(_sorted(one)) == _key(_sorted(other))


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {name: _sorted(item) for name, item in value.items()}
    if isinstance(value, list):
        return sorted((_sorted(item) for item in value), key=_key)
    return value


def pointer(parts: tuple[str | int, ...]) -> str:
    """An RFC 6901 JSON Pointer (``""`` is the whole value)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


ABSENT = "(absent)"


def changes(before: Any, now: Any, at: tuple[str | int, ...] = ()) -> list[dict[str, Any]]:
    """Each path (a JSON Pointer) whose value differs between two read results, with both values:
    objects member by member, arrays element by element (an element one of them lacks is
    ``(absent)``)."""
    if isinstance(before, dict) and isinstance(now, dict):
        found: list[dict[str, Any]] = []
        for name in sorted(before.keys() | now.keys()):
            found += changes(before.get(name, ABSENT), now.get(name, ABSENT), (*at, name))
        return found
    if isinstance(before, list) and isinstance(now, list):
        return _element_changes(before, now, at)
    if _key(before) == _key(now):
        return []
    return [_change(at, before, now)]


def _element_changes(before: list[Any], now: list[Any], at: tuple[str | int, ...]) -> list[dict[str, Any]]:
    """Arrays as collections: an element found in both (anywhere) is unchanged; the others are
    paired in order and compared inside (at the index the element has now), and what is left over
    was removed (at its old index) or added (at its new one)."""
    unmatched = Counter(_key(item) for item in now)
    gone: list[int] = []
    for index, item in enumerate(before):
        key = _key(item)
        if unmatched[key]:
            unmatched[key] -= 1
        else:
            gone.append(index)
    still = Counter(_key(item) for item in before)
    new: list[int] = []
    for index, item in enumerate(now):
        key = _key(item)
        if still[key]:
            still[key] -= 1
        else:
            new.append(index)
    found: list[dict[str, Any]] = []
    for old_index, new_index in zip(gone, new, strict=False):
        found += changes(before[old_index], now[new_index], (*at, new_index))
    found += [_change((*at, i), before[i], ABSENT) for i in gone[len(new) :]]
    found += [_change((*at, i), ABSENT, now[i]) for i in new[len(gone) :]]
    return found


def _change(at: tuple[str | int, ...], before: Any, now: Any) -> dict[str, Any]:
    return {"field": pointer(at), "expected": shown(before), "now": shown(now)}


def shown(value: Any) -> Any:
    """A value as a change shows it (a long text cut)."""
    if isinstance(value, str) and len(value) > SHOWN_CHARS:
        return value[:SHOWN_CHARS] + "…"
    return value


def listed(found: list[dict[str, Any]], limit: int = 5) -> str:
    """Changes in words: ``/a/0: "x" → "y"; …`` (at most ``limit``, then how many more)."""
    words = [
        f"{c['field'] or '(the whole value)'}: {_word(c['expected'])} → {_word(c['now'])}"
        for c in found[:limit]
    ]
    if len(found) > limit:
        words.append(f"{len(found) - limit} more")
    return "; ".join(words)


def _word(value: Any) -> str:
    if value == ABSENT:
        return ABSENT
    try:
        text = canonical_bytes(value).decode()
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"
