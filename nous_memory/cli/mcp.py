"""``nous-memory mcp``: the agent tools over stdio, for desktop and IDE MCP clients.

The session acts for the one agent named on the command line, and for the one person
``--user`` names (people/; without it, the agent's owner, who sees everything); the
tools take neither as an argument, so the model cannot name another.  Standard output
carries only the protocol (file descriptor 1 points at stderr while serving, and the
store is opened inside that), so nothing the database or the model runtime prints can
corrupt it.  The
transport is ``tools.mcp_stdio``, not the SDK's reader: every line a client sends is
answered, a line that is not a message with a JSON-RPC error and a log line on stderr.
"""

from __future__ import annotations

import argparse
import logging

from ..config import Settings
from ..memories.kinds import parse_agent_id
from ..people.keys import optional_person
from ..store import MemoryStore

DESCRIPTION = """\
Serve the agent tools (memory_search, memory_context, memory_expand, memory_remember,
memory_learn_fact, memory_forget, memory_history, and memory_restore with
--allow-restore) over MCP on stdin/stdout, bound to one agent.  Add it to an MCP
client's configuration as a command, for example:
  {"command": "nous-memory", "args": ["mcp", "--agent", "alice"]}
With --user the session is that person's: it reads only their memories and the shared
ones, and what it learns is theirs."""


def add_mcp_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = commands.add_parser("mcp", help="serve the agent tools over MCP (stdio)",
                              description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    mcp.add_argument("--agent", required=True, metavar="AGENT",
                     help="the agent whose memories this session reads and changes")
    mcp.add_argument("--user", metavar="PERSON",
                     help="the person this session is for (a user id or a name): only "
                          "their memories and shared ones are read, and what is learned "
                          "is theirs (default: the agent's owner, who reads everything)")
    mcp.add_argument("--allow-purge", action="store_true", default=None,
                     help="let the model erase memories for good (default: "
                          "$NOUS_MEMORY_TOOLS_ALLOW_PURGE, false: forget only soft-deletes)")
    mcp.add_argument("--allow-restore", action="store_true", default=None,
                     help="offer memory_restore, so the model can undo a forget (default: "
                          "$NOUS_MEMORY_TOOLS_ALLOW_RESTORE, false: only the owner restores)")


async def serve_mcp(args: argparse.Namespace, settings: Settings) -> None:
    from ..tools import ToolBox
    from ..tools.mcp_server import build_server
    from ..tools.mcp_stdio import stdio_lines

    agent = parse_agent_id(args.agent)  # a bad id fails before the client connects
    user = optional_person(args.user)  # so does a bad person
    logging.basicConfig(format="nous-memory mcp: %(levelname)s %(message)s",
                        level=logging.WARNING)  # stderr: what was refused, and why
    try:
        async with stdio_lines() as (read, write), \
                MemoryStore.open(settings=settings) as store:
            await store.warm_up()
            box = ToolBox(store, agent_id=agent, allow_purge=args.allow_purge,
                          allow_restore=args.allow_restore, actor="mcp", user=user)
            server = build_server(lambda ctx: box)
            await server.run(read, write, server.create_initialization_options())
    except BaseExceptionGroup as group:  # the transport's task group wraps what failed
        raise _alone(group) from None


def _alone(error: BaseException) -> BaseException:
    """The one error inside nested single-error groups (so the CLI reports, e.g., an
    unreachable database in one line); a group of several stays a group."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error
