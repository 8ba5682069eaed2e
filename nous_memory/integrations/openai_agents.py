"""An OpenAI Agents SDK ``Session`` over one episode of the store.

Every item the SDK adds is one message of the episode, the item itself kept in the
message's metadata so it comes back exactly as the SDK shaped it (a tool call and its
result included).  ``get_items()`` hands the model the episode's rolling summary as one
compacted system item, then the newest items that fit ``budget_tokens``: a conversation
of any length fits the window (``get_items(limit=n)`` is the plain newest ``n``, as the
SDK's own sessions do).  ``close()`` closes the episode, which the worker then learns
from like any other.

People: ``user_id`` makes the session that person's.  The episode it starts is theirs,
their items are their turns (an item's ``name``, when the SDK item has one, names the
speaker in a group conversation), so what the worker learns from it is theirs; and a
session for a person continues only an episode that is theirs or shared: another
person's is not found, as the store's reads for that person do not find it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from agents.items import TResponseInputItem
from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings, resolve_session_limit

from ..episodes.results import MAX_METADATA_CHARS, TRANSCRIPT_PAGE
from ..errors import NotFoundError
from ..people import person_key, visible_to
from .backend import Backend

ITEM_KEY = "openai_agents_item"
TEXT_KEY = "openai_agents_text_field"  # the item field the message content holds verbatim
DEFAULT_BUDGET_TOKENS = 8_000
SESSION_POLICY: dict[str, Any] = {"summary_window_share": 0.2}


class NousMemorySession(SessionABC):
    """``Runner.run(agent, text, session=NousMemorySession(store, "agent-1"))``.

    ``session_id`` is the episode's id: pass an existing one to continue it, or leave it
    out and the first ``add_items`` starts an episode (``title``, ``user_id`` go to it).
    ``user_id``: the person the session is for (see the module); None: the owner's.
    ``budget_tokens`` bounds what ``get_items()`` returns (the summary plus the tail);
    ``policy`` overrides working-memory knobs for the prompts it builds.
    """

    def __init__(self, store: Backend, agent_id: str, session_id: str | None = None, *,
                 budget_tokens: int = DEFAULT_BUDGET_TOKENS,
                 policy: Mapping[str, Any] | None = None, title: str | None = None,
                 user_id: str | None = None,
                 session_settings: SessionSettings | None = None) -> None:
        self._store = store
        self.agent_id = agent_id
        self._episode = session_id
        self.session_id = session_id or ""
        self.budget_tokens = budget_tokens
        self.policy = {**SESSION_POLICY, **(policy or {})}
        self._title = title
        self._user_id = user_id
        self._user = None if user_id is None else person_key(user_id, "user_id")
        self._checked = session_id is None or self._user is None
        self.session_settings = session_settings

    async def _episode_id(self) -> str:
        if self._episode is None:
            episode = await self._store.start_episode(self.agent_id, title=self._title,
                                                      user_id=self._user_id)
            self._episode = self.session_id = str(episode.id)
        await self._check()
        return self._episode

    async def _check(self) -> None:
        """A given episode is the person's or shared, else not found (once a session)."""
        if self._checked or self._episode is None:
            return
        episode = await self._store.get_episode(self.agent_id, self._episode)
        if not visible_to(episode.people, self._user):
            raise NotFoundError("episode", self._episode)
        self._checked = True

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        if self._episode is None:
            return []
        await self._check()
        limit = resolve_session_limit(limit, self.session_settings)  # as the SDK's sessions
        if limit is not None:
            if limit <= 0:
                return []
            latest = await self._store.latest_messages(
                self.agent_id, self._episode, limit=min(limit, TRANSCRIPT_PAGE))
            return [to_item(m.metadata, m.content, m.role) for m in latest]
        prompt = await self._store.build_prompt(self.agent_id, self._episode, "",
                                                self.budget_tokens, policy=self.policy)
        items: list[TResponseInputItem] = []
        for part, message in zip(prompt.parts, prompt.messages, strict=True):
            if part.part == "message":
                items.append(to_item(part.metadata, message["content"], message["role"]))
            else:  # the rolling summary (or a context block): one system item
                items.append(cast(TResponseInputItem, {
                    "role": "system", "content": message["content"]}))
        return items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        if not items:
            return
        episode = await self._episode_id()
        await self._store.append(self.agent_id, episode,
                                 [to_message(i, self._user_id) for i in items])

    async def pop_item(self) -> TResponseInputItem | None:
        if self._episode is None:
            return None
        await self._check()
        newest = await self._store.latest_messages(self.agent_id, self._episode, limit=1)
        if not newest:
            return None
        await self._store.delete_message(self.agent_id, self._episode, newest[0].seq)
        return to_item(newest[0].metadata, newest[0].content, newest[0].role)

    async def clear_session(self) -> None:
        """Every item goes (deleted in the episode, so a restart sees none of them)."""
        if self._episode is None:
            return
        await self._check()
        while page := await self._store.transcript(self.agent_id, self._episode,
                                                   limit=TRANSCRIPT_PAGE):
            for message in reversed(page):
                await self._store.delete_message(self.agent_id, self._episode, message.seq)

    async def close(self) -> None:
        """Close the episode: the worker summarises it and learns its facts."""
        if self._episode is not None:
            await self._check()
            await self._store.close_episode(self.agent_id, self._episode)


# ---------------------------------------------------------------------- items <-> messages


def to_message(item: TResponseInputItem, user: str | None = None) -> dict[str, Any]:
    """One SDK item as an episode message: a role and readable text for summaries and
    recall, the item itself in the metadata.  A user's item is ``user``'s turn; its
    ``name`` (a group's speaker) goes with it, naming the person when ``user`` is None."""
    data = cast(dict[str, Any], json.loads(json.dumps(item)))
    kind = data.get("type") or "message"
    role = data.get("role")
    message: dict[str, Any] = {}
    if kind == "function_call":
        message = {"role": "assistant", "content": "", "metadata": {"tool_calls": [{
            "id": data.get("call_id"), "type": "function", "function": {
                "name": data.get("name"), "arguments": data.get("arguments", "")}}]}}
    elif kind == "function_call_output":
        message = {"role": "tool", "content": content_text(data.get("output")),
                   "tool_call_id": data.get("call_id")}
    elif kind == "message" and role in ("user", "assistant", "system", "developer"):
        message = {"role": "system" if role == "developer" else role,
                   "content": content_text(data.get("content"))}
        name = data.get("name")
        if isinstance(name, str) and name.strip():
            message["name"] = name
        if role == "user" and user is not None:
            message["user"] = user
    else:  # reasoning, hosted tool calls and the like: kept, shown by their kind
        message = {"role": "assistant", "content": content_text(data.get("summary")) or f"[{kind}]"}
    field = _verbatim_field(data, message["content"])
    stored = {k: v for k, v in data.items() if k != field}
    metadata = {**message.get("metadata", {}), ITEM_KEY: stored}
    if field:
        metadata[TEXT_KEY] = field
    if len(json.dumps(metadata)) > MAX_METADATA_CHARS:
        # too large for metadata as it is: the readable text stands in for the item
        metadata = {k: v for k, v in metadata.items() if k not in (ITEM_KEY, TEXT_KEY)}
    return {**message, "metadata": metadata}


def to_item(metadata: Mapping[str, Any], content: str, role: str) -> TResponseInputItem:
    """The SDK item a message was stored from, exactly; a message with none (appended by
    another face) becomes a plain message of its role."""
    stored = metadata.get(ITEM_KEY)
    if not isinstance(stored, dict):
        plain_role = role if role in ("user", "assistant", "system") else "user"
        return cast(TResponseInputItem, {"role": plain_role, "content": content})
    item = dict(stored)
    field = metadata.get(TEXT_KEY)
    if isinstance(field, str):
        item[field] = content
    return cast(TResponseInputItem, item)


def _verbatim_field(data: Mapping[str, Any], text: str) -> str | None:
    """The field whose string value the message content already holds, so it is stored
    once (``content`` of a plain message, ``output`` of a tool result)."""
    for field in ("content", "output"):
        if isinstance(data.get(field), str) and data[field] == text:
            return field
    return None


def content_text(value: Any) -> str:
    """The readable text of an item's content (a string or a list of parts)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        pieces = [p.get("text") for p in value if isinstance(p, dict)]
        return "\n".join(p for p in pieces if isinstance(p, str))
    return "" if value is None else json.dumps(value)
