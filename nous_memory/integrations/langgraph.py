"""A LangGraph ``BaseStore`` (long-term memory across threads) over the store.

An item is a fact memory of one agent.  Its namespace is the agent and a path: with
``agent_id=`` every namespace lives in that agent, else the namespace's first element is
the agent.  The path and the key are found again through tags (a short digest per path
prefix and one per key, so any length fits the 64-character tags) and read back from the
fact's ``category`` (the path) and ``subject`` (the key).  ``put`` of a new key creates
the fact, of a known key updates it (its history kept), ``put(..., None)`` and
``delete`` delete it; ``search`` with a query is the store's hybrid recall within the
namespace prefix, without one a listing.  The value comes back exactly: a value that is
one text field (``{"content": ...}`` or ``{"text": ...}``) is stored as that text, any
other as canonical JSON.

People: one element of the namespace names the person the item is for, the last one by
default, so the usual ``("memories", user_id)`` (with ``agent_id=``) or ``(agent,
"memories", user_id)`` is ``user_id``'s; ``user_at=`` picks another position (an index
into the namespace as written, negative from the end), ``user_at=None`` names nobody.
The agent's element is never the person, and a namespace too short for the position
names nobody.  A put in a person's namespace is that person's memory (people/); a get,
a search and a listing in it read for that person through the store (``user=``), so a
search's candidates are only theirs and the shared ones, and ``limit=1`` finds their
best item however many closer ones another person has.  A namespace naming nobody reads
as the owner: everything.  The prefix of a search or a listing is read the same way, so
with ``user_at=-1`` a search across people is a store with ``user_at=None`` (or a
positive ``user_at`` deeper than the shared prefix).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ..memories.records import Memory
from .backend import Backend
from .langchain import run_on

SOURCE_TEXT = "langgraph:text:"  # + the value's one field
SOURCE_JSON = "langgraph:json"
SEP = "\x1f"  # joins the path in ``category``: a character no namespace label uses
PAGE = 200
RECALL_SCAN = 100  # recalled candidates filtered to the namespace, at most


class NousMemoryStore(BaseStore):
    """``StateGraph(...).compile(store=NousMemoryStore(store))``; async methods for async
    graphs, sync ones through ``loop`` (the store's event loop); ``user_at``: the
    namespace element naming the person (see the module)."""

    def __init__(self, store: Backend, *, agent_id: str | None = None,
                 loop: asyncio.AbstractEventLoop | None = None,
                 user_at: int | None = -1) -> None:
        self._store = store
        self._agent = agent_id
        self._loop = loop
        self._user_at = user_at

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return run_on(self._loop, self.abatch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:  # in order: a get after a put in one batch sees the put
            if isinstance(op, GetOp):
                results.append(await self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                await self._put(op.namespace, op.key, op.value)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    # ------------------------------------------------------------------ mapping

    def _split(self, namespace: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
        if self._agent is not None:
            return self._agent, tuple(namespace)
        if not namespace or not namespace[0]:
            raise ValueError("the namespace's first element names the agent; it is empty")
        return namespace[0], tuple(namespace[1:])

    def _namespace(self, agent: str, path: tuple[str, ...]) -> tuple[str, ...]:
        return path if self._agent is not None else (agent, *path)

    def _person(self, namespace: tuple[str, ...]) -> str | None:
        """The person ``namespace`` names (the element at ``user_at``), else None."""
        if self._user_at is None or not -len(namespace) <= self._user_at < len(namespace):
            return None
        at = self._user_at % len(namespace)
        first = 0 if self._agent is not None else 1  # the agent's element is no person
        return namespace[at] if at >= first and namespace[at].strip() else None

    async def _find(self, namespace: tuple[str, ...], key: str) -> Memory | None:
        agent, path = self._split(namespace)
        page = await self._store.list(agent, kind="fact", tag=_key_tag(path, key), limit=1,
                                      user=self._person(namespace))
        return page.items[0] if page.items else None

    def _item(self, memory: Memory, score: float | None = None) -> Item:
        detail = memory.detail
        path = tuple(p for p in (getattr(detail, "category", None) or "").split(SEP) if p)
        namespace = self._namespace(memory.agent_id, path)
        key = getattr(detail, "subject", None) or ""
        value = _value(getattr(detail, "source", None) or "", getattr(detail, "content", ""))
        if score is None:
            return Item(namespace=namespace, key=key, value=value,
                        created_at=memory.created_at, updated_at=memory.updated_at)
        return SearchItem(namespace=namespace, key=key, value=value,
                          created_at=memory.created_at, updated_at=memory.updated_at,
                          score=score)

    # ------------------------------------------------------------------ operations

    async def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        found = await self._find(namespace, key)
        return self._item(found) if found is not None else None

    async def _put(self, namespace: tuple[str, ...], key: str,
                   value: Mapping[str, Any] | None) -> None:
        agent, path = self._split(namespace)
        found = await self._find(namespace, key)
        if value is None:
            if found is not None:
                await self._store.delete(agent, found.id, actor="langgraph")
            return
        source, content = _stored(value)
        if found is not None:
            await self._store.update(agent, found.id, content=content, source=source,
                                     actor="langgraph")
            return
        person = self._person(namespace)
        await self._store.remember(agent, "fact", content=content, subject=key,
                                   category=SEP.join(path) or None, source=source,
                                   tags=[*_path_tags(path), _key_tag(path, key)],
                                   **({} if person is None else {"user": person}))

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        agent, path = self._split(op.namespace_prefix)
        person = self._person(op.namespace_prefix)
        wanted = op.offset + op.limit
        hits: list[SearchItem] = []
        if op.query:  # the person's candidates only: another's never take the places
            found = await self._store.recall(agent, op.query, kinds=["fact"],
                                             k=min(RECALL_SCAN, 2 * wanted + 8), user=person)
            tag = _path_tag(path) if path else None
            memories = await asyncio.gather(*(self._store.get(agent, hit.memory_id)
                                              for hit in found.items))
            for hit, memory in zip(found.items, memories, strict=True):
                if (tag is None or tag in memory.tags) and _is_ours(memory):
                    item = self._item(memory, hit.scores.final)
                    if _matches(item.value, op.filter):
                        hits.append(item)  # type: ignore[arg-type]
                if len(hits) >= wanted:
                    break
        else:
            async for memory in self._listed(agent, path, person):
                item = self._item(memory, None)
                if _matches(item.value, op.filter):
                    hits.append(SearchItem(namespace=item.namespace, key=item.key,
                                           value=item.value, created_at=item.created_at,
                                           updated_at=item.updated_at, score=None))
                if len(hits) >= wanted:
                    break
        return hits[op.offset:wanted]

    async def _listed(self, agent: str, path: tuple[str, ...], person: str | None) -> Any:
        cursor: str | None = None
        while True:
            page = await self._store.list(agent, kind="fact", limit=PAGE, cursor=cursor,
                                          tag=_path_tag(path) if path else None,
                                          user=person)
            for memory in page.items:
                if _is_ours(memory):
                    yield memory
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        if self._agent is None and not op.match_conditions:
            raise ValueError("list_namespaces needs a prefix naming the agent (or agent_id=)")
        prefix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix" and "*" not in condition.path:
                prefix = tuple(condition.path)
        agent, path = self._split(prefix)
        seen: dict[tuple[str, ...], None] = {}
        async for memory in self._listed(agent, path, self._person(prefix)):
            namespace = self._item(memory).namespace
            if all(_condition(namespace, c) for c in op.match_conditions or ()):
                cut = namespace if op.max_depth is None else namespace[:op.max_depth]
                seen.setdefault(cut, None)
        return sorted(seen)[op.offset:op.offset + op.limit]


def _digest(parts: Iterable[str]) -> str:
    return hashlib.sha256(json.dumps(list(parts)).encode()).hexdigest()[:24]


def _path_tag(path: tuple[str, ...]) -> str:
    return f"lg-ns:{_digest(path)}"


def _path_tags(path: tuple[str, ...]) -> list[str]:
    """One tag per prefix of the path (a search names any prefix); at most 30 levels."""
    if len(path) > 30:
        raise ValueError("a namespace is at most 30 levels deep here")
    return [_path_tag(path[:n]) for n in range(1, len(path) + 1)]


def _key_tag(path: tuple[str, ...], key: str) -> str:
    return f"lg-key:{_digest([*path, SEP, key])}"


def _is_ours(memory: Memory) -> bool:
    return (getattr(memory.detail, "source", None) or "").startswith("langgraph:")


def _stored(value: Mapping[str, Any]) -> tuple[str, str]:
    """(source, content): one text field as itself, anything else as canonical JSON."""
    if len(value) == 1:
        (field, text), = value.items()
        if field in ("content", "text") and isinstance(text, str) and text.strip() == text \
                and text:
            return SOURCE_TEXT + field, text
    return SOURCE_JSON, json.dumps(dict(value), sort_keys=True, ensure_ascii=False)


def _value(source: str, content: str) -> dict[str, Any]:
    if source.startswith(SOURCE_TEXT):
        return {source.removeprefix(SOURCE_TEXT): content}
    loaded = json.loads(content) if source == SOURCE_JSON else {"content": content}
    return loaded if isinstance(loaded, dict) else {"value": loaded}


def _matches(value: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    return all(value.get(k) == v for k, v in (wanted or {}).items())


def _condition(namespace: tuple[str, ...], condition: Any) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" else namespace[-len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
