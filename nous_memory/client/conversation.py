"""Working memory over the service: the prompt for an episode's next call, its rolling
summary and chain, the summary policy, and message edits and deletes.

The same names, arguments and records as ``MemoryStore``.  The records come from
``conversation.results``, which loads no database layer; each method imports what it
returns, so a process that never calls one (the CLI's recall) never loads them.  Calls
that only read, or whose repetition changes nothing a caller sees (a prompt, a policy
put), are retried; a fold asked for explicitly and a message change are not.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from .http import Transport, agent_path, parse

if TYPE_CHECKING:
    from ..conversation.policy import Policy
    from ..conversation.results import (
        ConversationSummary,
        MessageChange,
        Prompt,
        SummarizeResult,
        SummaryRecord,
    )
    from ..episodes.results import MessageErasure

class ConversationCalls:
    """Working memory's methods of ``AsyncMemoryClient``."""

    _t: Transport

    async def build_prompt(self, agent_id: str, episode_id: UUID | str, /, system: str,
                           budget_tokens: int, *, query: str | None = None,
                           context_tokens: int | None = None, summarize: bool = True,
                           policy: Mapping[str, Any] | None = None) -> Prompt:
        """Retried: a fold it runs is the one the policy says is due, repeated or not."""
        from ..conversation.results import Prompt

        body = {"system": system, "budget_tokens": budget_tokens, "query": query,
                "context_tokens": context_tokens, "summarize": summarize,
                "policy": None if policy is None else dict(policy)}
        return parse(Prompt, await self._t.json(
            "POST", agent_path(agent_id, "episodes", episode_id, "prompt"), idempotent=True,
            body={k: v for k, v in body.items() if v is not None}))

    async def summarize_conversation(self, agent_id: str, episode_id: UUID | str, /, *,
                                     force: bool = False,
                                     policy: Mapping[str, Any] | None = None
                                     ) -> SummarizeResult:
        from ..conversation.results import SummarizeResult

        body: dict[str, Any] = {"force": force}
        if policy is not None:
            body["policy"] = dict(policy)
        data = await self._t.json(
            "POST", agent_path(agent_id, "episodes", episode_id, "summary"),
            idempotent=False, body=body)
        return parse(SummarizeResult, data["result"])

    async def conversation_summary(self, agent_id: str, episode_id: UUID | str, /
                                   ) -> ConversationSummary:
        from ..conversation.results import ConversationSummary

        return parse(ConversationSummary, await self._t.json(
            "GET", agent_path(agent_id, "episodes", episode_id, "summary"), idempotent=True))

    async def summary_history(self, agent_id: str, episode_id: UUID | str, /, *,
                              limit: int = 100, offset: int = 0
                              ) -> builtins.list[SummaryRecord]:
        from ..conversation.results import SummaryRecord

        data = await self._t.json(
            "GET", agent_path(agent_id, "episodes", episode_id, "summary", "history"),
            idempotent=True, params={"limit": limit, "offset": offset})
        return parse(builtins.list[SummaryRecord], data["records"])

    async def conversation_policy(self, agent_id: str, /) -> Policy:
        from ..conversation.policy import Policy

        return parse(Policy, await self._t.json(
            "GET", agent_path(agent_id, "conversation-policy"), idempotent=True))

    async def set_conversation_policy(self, agent_id: str, /, **knobs: Any) -> Policy:
        """Knobs to store (``None`` removes one); the effective policy comes back."""
        from ..conversation.policy import Policy

        return parse(Policy, await self._t.json(
            "PUT", agent_path(agent_id, "conversation-policy"), idempotent=True, body=knobs))

    async def edit_message(self, agent_id: str, episode_id: UUID | str, seq: int, /,
                           content: str) -> MessageChange:
        """Not retried: every edit keeps one more version of the message."""
        from ..conversation.results import MessageChange

        return parse(MessageChange, await self._t.json(
            "PATCH", agent_path(agent_id, "episodes", episode_id, "messages", seq),
            idempotent=False, body={"content": content}))

    async def delete_message(self, agent_id: str, episode_id: UUID | str, seq: int, /
                             ) -> MessageChange:
        from ..conversation.results import MessageChange

        return parse(MessageChange, await self._t.json(
            "DELETE", agent_path(agent_id, "episodes", episode_id, "messages", seq),
            idempotent=False))

    async def forget_message(self, agent_id: str, episode_id: UUID | str, seq: int, /, *,
                             redact: Sequence[str] | None = None, actor: str = "python"
                             ) -> MessageErasure:
        """``actor`` is not sent (the service names the key).  Not retried: a second try
        would find nothing left to forget (404 or 422)."""
        from ..episodes.results import MessageErasure

        body = {} if redact is None else {"redact": list(redact)}
        return parse(MessageErasure, await self._t.json(
            "POST", agent_path(agent_id, "episodes", episode_id, "messages", seq, "forget"),
            idempotent=False, body=body))
