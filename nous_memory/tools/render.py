"""Compact text a model reads: every memory under its ref, every body inside a block.

Memory text is wrapped in the store's ``<nous-memory>`` blocks (see ``blocks``) with the
store's own tags neutralised inside, so a remembered sentence can never pass for an
instruction or close its block early, and a tool result that lands in a transcript is
stripped at episode close instead of being learned a second time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .. import blocks
from ..context.expand import Expanded
from ..context.model import Context
from ..context.recall import RecallResult
from ..context.refs import make_ref
from ..context.sections import item_line
from ..context.upcoming import Upcoming
from ..facts.learning import LearnResult
from ..facts.undelete import Undeleted
from ..memories.kinds import Kind
from ..memories.records import Memory, MemoryEvent
from ..tokens import count_tokens, head_tokens

MAX_RESULT_TOKENS = 6_000  # one tool result; a longer one is cut with a note saying so
MAX_VALUE_CHARS = 2_000  # one field, one transcript message, one string of structured data
MAX_EVENT_VALUE_CHARS = 300  # one old/new value in an event line (expand shows it whole)
MAX_EVENTS = 20  # events in a history; the newest are the ones asked about
MAX_ITEMS = 50  # one list of structured data
EXPAND_HINT = "Call memory_expand with a ref for the full record."


def ref(memory: Memory) -> str:
    return make_ref(memory.kind, memory.id)


def _day(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "-"


def _value(value: object, limit: int = MAX_VALUE_CHARS) -> str:
    """A value as a model reads it: no Python reprs (None, dicts, quotes)."""
    if value is None or value == "":
        text = "(none)"
    elif isinstance(value, Mapping):
        text = ", ".join(f"{k}: {_value(v, limit)}" for k, v in value.items()
                         if v not in (None, "", [], {})) or "(none)"
    elif isinstance(value, list):
        text = "; ".join(_value(v, limit) for v in value) or "(none)"
    elif isinstance(value, datetime):
        text = _day(value)
    else:
        text = str(value)
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def block(lines: Sequence[str], kind: str, limit: int = MAX_RESULT_TOKENS) -> str:
    """The lines in one store block of at most about ``limit`` tokens; a cut block is
    followed by a note saying so (the cut never falls outside the block)."""
    inner = "\n".join(lines)
    if count_tokens(inner) <= limit:
        return blocks.wrap(inner, kind)
    cut = head_tokens(inner, limit).rsplit("\n", 1)[0]
    return blocks.wrap(cut, kind) + f"\n(cut at {limit} tokens: expand one ref at a time)"


DATED = frozenset({"episode", "fact", "decision"})  # kinds whose date says something


def search(result: RecallResult) -> str:
    if not result.items:
        return f"No memories match {result.query!r}."
    # in rank order, which the fused scores alone do not give (the final order moves a
    # current value before an old one, a turn before its fact): no score is shown
    lines = [item_line(item.ref, f"({item.kind.value}) {item.text}",
                       item.said_at if item.source == "chunk" or item.kind.value in DATED
                       else None, stale_on=item.stale_since, since=item.current_since,
                       retold_on=item.told_again_on)
             for item in result.items]
    head = f"{len(result.items)} memories for {result.query!r}, best first:"
    return f"{head}\n{block(lines, 'recall')}\n{EXPAND_HINT}"


def upcoming(result: Upcoming) -> str:
    if not result.events:
        return f"No plans in memory before {result.until:%a %-d %b %Y}."
    lines = [item_line(e.ref, e.text, event_at=e.event_at) for e in result.events]
    return (f"{len(result.events)} plans until {result.until:%a %-d %b %Y}, soonest "
            f"first:\n{block(lines, 'upcoming')}\n{EXPAND_HINT}")


def context(result: Context) -> str:
    if not result.text:
        return "Nothing in memory is relevant to this query."
    return (f"{result.text}\n({result.tokens_used} of {result.budget_tokens} tokens; "
            f"{len(result.dropped)} more did not fit.) {EXPAND_HINT}")


def _fields(memory: Memory) -> Iterable[str]:
    detail = memory.detail.model_dump(mode="json", exclude={"kind"})
    for name, value in detail.items():
        if value in (None, [], "") or name == "detail":
            continue
        yield f"{name}: {_value(value)}"
    long_detail = getattr(memory.detail, "detail", None)
    if long_detail:
        yield f"detail: {_value(long_detail)}"


def memory_card(memory: Memory) -> str:
    head = (f"{memory.kind.value}, {memory.status.value}, version {memory.version}, "
            f"created {_day(memory.created_at)}, importance {memory.importance:g}")
    if memory.tags:
        head += f", tags {', '.join(memory.tags)}"
    lines = [head, f"summary: {memory.summary}", *_fields(memory)]
    return item_line(ref(memory), "\n".join(lines))


def _event(event: MemoryEvent) -> str:
    changed = sorted(set(event.old_values or {}) | set(event.new_values or {}))
    parts = []
    for name in changed[:12]:
        old = (event.old_values or {}).get(name)
        new = (event.new_values or {}).get(name)
        parts.append(f"{name}: {_value(old, MAX_EVENT_VALUE_CHARS)} -> "
                     f"{_value(new, MAX_EVENT_VALUE_CHARS)}" if event.old_values
                     else f"{name}: {_value(new, MAX_EVENT_VALUE_CHARS)}")
    who = f" by {event.actor}" if event.actor else ""
    return f"{_day(event.created_at)} {event.event}{who}" + (
        f" ({'; '.join(parts)})" if parts else "")


def expanded(result: Expanded) -> str:
    out = [memory_card(result.memory)]
    if len(result.chain) > 1:
        out.append("versions, oldest first:")
        out += [item_line(ref(m), f"({m.status.value}) {m.summary}") for m in result.chain]
    if result.source_episode is not None:
        out.append("source episode:")
        out.append(item_line(ref(result.source_episode), result.source_episode.summary))
    if result.transcript is not None and result.transcript.messages:
        first, last = result.transcript.messages[0].seq, result.transcript.messages[-1].seq
        out.append(f"transcript, messages {first}-{last} of "
                   f"{result.transcript.total_messages}:")
        out += [item_line(f"#{m.seq} {m.role}", _value(m.content))
                for m in result.transcript.messages]
    if result.archived:
        out.append("in cold storage: " + "; ".join(
            f"{p.part} ({p.reason}, {_day(p.archived_at)}, {p.size})"
            for p in result.archived))
    if result.events:  # newest first: a cut result loses the oldest
        out.append("history, newest first:")
        out += [item_line("event", _event(e)) for e in reversed(result.events[-10:])]
    return block(out, "expand")


def history(memory: Memory, events: Sequence[MemoryEvent], chain: Sequence[Memory]) -> str:
    out = [item_line(ref(memory), f"({memory.kind.value}, {memory.status.value}) "
                                  f"{memory.summary}")]
    if len(chain) > 1:
        out.append("versions, oldest first:")
        out += [item_line(ref(m), f"({m.status.value}, {_day(m.created_at)}) {m.summary}")
                for m in chain]
    shown = events[-MAX_EVENTS:]
    if not events:
        out.append("no events")
    else:  # newest first: the latest changes are the ones asked about, and a cut
        # result loses the oldest
        out.append(f"{len(events)} events, newest first" + (
            f" (the newest {len(shown)}):" if len(shown) < len(events) else ":"))
    out += [item_line("event", _event(e)) for e in reversed(shown)]
    return block(out, "history")


def remembered(memory: Memory) -> str:
    return f"Remembered as [{ref(memory)}]:\n" + block([item_line(ref(memory),
                                                                   memory.summary)], "saved")


def learned(result: LearnResult) -> str:
    """The action outside the block; the reason inside it, since it may quote stored text
    (a censor's reason, a judge's words about the facts)."""
    reason = [item_line("reason", result.reason)] if result.reason else []
    if result.fact is None:
        return "\n".join([f"Not learned ({result.action.value}):\n" + block(
            reason or ["no reason given"], "learn"), *(learned(o) for o in result.also)])
    mine = f"[{ref(result.fact)}]"
    others = ", ".join(f"[{make_ref(Kind.FACT, r)}]" for r in result.related)
    text = {  # the new fact's ref and the old one's never trade places in the wording
        "created": f"New fact {mine}" + (
            f", kept beside {others} and flagged as a possible conflict for the owner to "
            "settle" if others else ""),
        "confirmed": f"Already known: {mine} is confirmed",
        "merged": f"Already known: {mine} now holds the more specific wording",
        "superseded": f"New fact {mine}; it supersedes the old value {others}, which stays "
                      "in its history",
        "reactivated": f"Known before: {mine} is current again" + (
            f"; it supersedes {others}" if others else ""),
    }.get(result.action.value, f"Fact {result.action.value}: {mine}")
    out = text + ":\n" + block([item_line(ref(result.fact), result.fact.summary), *reason],
                                "saved")
    # the text's other statements, each learned on its own
    return "\n".join([out, *(learned(other) for other in result.also)])


_PLACED = {"restored": "", "confirmed": "; a current fact says the same: it is confirmed "
                                        "and this one kept as its older version",
           "superseded": "; a newer version is current: this one is kept as its history",
           "replaced": "; it is newer than the current version, which it now supersedes",
           "flagged": "; flagged as a possible conflict for the owner to settle"}


def restored(back: Undeleted) -> str:
    memory = back.memory
    related = "".join(f" [{make_ref(Kind.FACT, r)}]" for r in back.related)
    return (f"Restored [{ref(memory)}] as {memory.status.value}{_PLACED[back.action.value]}"
            f"{related}:\n" + block([item_line(ref(memory), memory.summary)], "saved"))


def structured(value: Any) -> Any:
    """JSON-ready data for a result's structured content, bounded like the text (long
    strings cut, long lists shortened): clients may hand it to the model as well."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    if isinstance(value, str):
        return _cut(value, MAX_VALUE_CHARS)
    if isinstance(value, Mapping):
        return {str(k): structured(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [structured(v) for v in value[:MAX_ITEMS]]
    return value
