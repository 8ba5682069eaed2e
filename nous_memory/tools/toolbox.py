"""Dispatch a model's tool call for one agent, and the OpenAI function-calling face.

A ``ToolBox`` is bound either to one agent (the agent is not an argument at all, so a
model cannot even name another one) or to a set of agents an API key allows (then
``agent_id`` is an argument and anything outside the set is refused).  Every failure
comes back as an error result naming the field and the reason; nothing a model sends
can end the session.  A box may also act for one person (``user``, people/): every
call reads what is theirs or shared and writes for them; that too is the box's, never
an argument, so a model cannot ask as someone else.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..access import may_act_for
from ..errors import (
    ClientError,
    DatabaseUnavailableError,
    FieldProblem,
    InvalidInputError,
    NotFoundError,
    NousMemoryError,
)
from ..memories.kinds import parse_agent_id
from ..people.keys import optional_person
from .arguments import ArgumentChecker, parse_arguments
from .definitions import TOOLS, Tool, ToolPolicy, ToolResult

if TYPE_CHECKING:
    from ..store import MemoryStore

log = logging.getLogger("nous_memory.tools")


class ToolBox:
    """The agent tools over one store, for one agent or for the agents a key allows.

    ``agent_id``: every call acts for this agent (``agent_id`` is not an argument).
    ``allowed_agents``: otherwise calls name their agent, which must be in this set
    (None: any agent, for a trusted caller such as a loopback server without keys).
    ``user``: the person every call acts for (None: the agent's owner, who sees all).
    """

    def __init__(self, store: MemoryStore, *, agent_id: str | None = None,
                 allowed_agents: frozenset[str] | None = None,
                 allow_purge: bool | None = None, allow_restore: bool | None = None,
                 actor: str = "tools", user: str | None = None) -> None:
        self.store = store
        self.agent_id = parse_agent_id(agent_id) if agent_id is not None else None
        self.allowed_agents = allowed_agents
        purge = store.settings.tools_allow_purge if allow_purge is None else allow_purge
        restore = store.settings.tools_allow_restore if allow_restore is None else allow_restore
        self.policy = ToolPolicy(allow_purge=purge, allow_restore=restore, actor=actor,
                                 user=optional_person(user))
        self._offered = tuple(tool for tool in TOOLS if restore or not tool.gated)
        self._tools = {tool.name: tool for tool in self._offered}
        self._checkers = {tool.name: ArgumentChecker(self.input_schema(tool))
                          for tool in self._offered}

    @property
    def user(self) -> str | None:
        """The person this box acts for (a person key; None: the agent's owner)."""
        return self.policy.user

    def acting_for(self, user: str | None) -> ToolBox:
        """This box for another person (a connection's), sharing its tools and checkers:
        cheap enough to make per request."""
        box = copy.copy(self)
        box.policy = dataclasses.replace(self.policy, user=optional_person(user))
        return box

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The tools this box offers (memory_restore only where restores are allowed)."""
        return self._offered

    def _default_agent(self) -> str | None:
        if self.agent_id is not None:
            return self.agent_id
        if self.allowed_agents is not None and len(self.allowed_agents) == 1:
            return next(iter(self.allowed_agents))
        return None

    def input_schema(self, tool: Tool) -> dict[str, Any]:
        if self.agent_id is not None:
            return tool.input_schema()
        choice = sorted(self.allowed_agents) if self.allowed_agents is not None else None
        prop: dict[str, Any] = {
            "type": "string", "minLength": 1, "maxLength": 128,
            "description": "The agent whose memory to use" + (
                f": one of {', '.join(choice)}" if choice and len(choice) <= 20 else "")
            + (" (default: the only one allowed)." if self._default_agent() else ".")}
        return tool.input_schema(prop, agent_required=self._default_agent() is None)

    def openai_tools(self) -> list[dict[str, Any]]:
        """The tools in the OpenAI function-calling format (``tools=`` of a chat call)."""
        return [{"type": "function", "function": {
            "name": tool.name, "description": tool.description,
            "parameters": self.input_schema(tool)}} for tool in self._offered]

    async def call(self, name: str, arguments: str | Mapping[str, Any] | None = None
                   ) -> ToolResult:
        """Run one tool call (``arguments`` as the model sent them: JSON text or a
        mapping); errors come back as a result with ``is_error`` set."""
        try:
            tool = self._tools.get(name)
            if tool is None:
                raise InvalidInputError.single(
                    "name", f"no such tool; the tools are {', '.join(self._tools)}")
            args = parse_arguments(arguments)
            self._checkers[name].check(args)
            agent = self._agent(args)
            return await tool.call(self.store, agent, args, self.policy)
        except ClientError as exc:
            return _client_error(exc)
        except DatabaseUnavailableError:  # an outage: said once in the log already
            return ToolResult(text="Error: the memory store's database is unavailable; "
                                   "try again in a few seconds.",
                              data={"error": {"type": "unavailable",
                                              "message": "database unavailable"}},
                              is_error=True)
        except Exception as exc:  # a tool call never ends the caller's session
            log.exception("tool %s failed", name)
            what = type(exc).__name__ if isinstance(exc, NousMemoryError) else "internal error"
            return ToolResult(text=f"Error: the memory store failed ({what}); try again "
                                   "later.",
                              data={"error": {"type": "server", "message": what}},
                              is_error=True)

    def _agent(self, args: Mapping[str, Any]) -> str:
        if self.agent_id is not None:
            return self.agent_id
        given = args.get("agent_id")
        agent = parse_agent_id(given) if given is not None else self._default_agent()
        if agent is None:
            raise InvalidInputError.single("agent_id", "required: name the agent")
        if not may_act_for(self.allowed_agents, agent):
            raise InvalidInputError.single("agent_id",
                                           "this API key may not act for this agent")
        return agent

    async def tool_message(self, tool_call: Any) -> dict[str, Any]:
        """The ``role: tool`` message answering one OpenAI tool call (an object with
        ``id`` and ``function.name`` / ``function.arguments``, or the same as dicts)."""
        ident, function = _get(tool_call, "id"), _get(tool_call, "function")
        result = await self.call(str(_get(function, "name")), _get(function, "arguments"))
        return {"role": "tool", "tool_call_id": ident, "content": result.text}

    async def tool_messages(self, tool_calls: Sequence[Any]) -> list[dict[str, Any]]:
        """Answers to a turn's tool calls, in order."""
        return [await self.tool_message(call) for call in tool_calls]


def _get(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _client_error(exc: ClientError) -> ToolResult:
    if isinstance(exc, InvalidInputError):
        # the store names a bad id or ref "memory_id"; the tools' argument is "ref"
        problems = [FieldProblem("ref", p.reason) if p.field == "memory_id" else p
                    for p in exc.problems]
        kind = "invalid_input"
    elif isinstance(exc, NotFoundError):
        problems = [FieldProblem("ref", f"no such memory for this agent ({exc.ident})")]
        kind = "not_found"
    else:
        problems = [FieldProblem("request", str(exc))]
        kind = "conflict"
    text = "Error: " + "; ".join(str(p) for p in problems)
    return ToolResult(text=text, is_error=True, data={"error": {
        "type": kind, "problems": [{"field": p.field, "reason": p.reason} for p in problems]}})
