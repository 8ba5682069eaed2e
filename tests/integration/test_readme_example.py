"""Every Python example in README.md runs as written (against a test database).

The first block is a whole program; the others are fragments that use ``store``, run
inside ``async with MemoryStore.open() as store:``.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import textwrap
from typing import Any

from nous_memory.testing import ScriptedLLMServer, ScriptStep, TextReply, ToolCallReply
from tests.unit.test_readme import readme_blocks

WRAPPER = """\
import asyncio
from nous_memory import MemoryStore


async def main() -> None:
    async with MemoryStore.open() as store:
{body}


asyncio.run(main())
"""


async def _run(code: str, database_url: str, extra: dict[str, str] | None = None
               ) -> list[str]:
    env = {**os.environ, "NOUS_MEMORY_DATABASE_URL": database_url, "HF_HUB_OFFLINE": "1"}
    env = {k: v for k, v in env.items() if not k.startswith(("NOUS_MEMORY_LLM", "OPENAI_"))}
    env.update(extra or {})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=300)
    assert proc.returncode == 0, err.decode()
    return out.decode().splitlines()


async def test_readme_python_examples_run(database_url: str) -> None:
    program, *fragments = readme_blocks("python")
    lines = await _run(program, database_url)
    assert lines[0] == ("Chose Postgres + pgvector for unified storage [success] "
                        "[85% confidence] — Pattern: Unify to reduce surface area")
    assert lines[1] == "The weekly sync moved to Wednesdays 2"
    assert lines[2] == "['created', 'updated']"
    assert lines[3] == "2 None"
    assert len(fragments) >= 2
    outputs = []
    for fragment in fragments:
        body = textwrap.indent(fragment, " " * 8)
        outputs.append(await _run(WRAPPER.format(body=body), database_url))
    assert outputs[0][0].startswith("superseded [UUID(")
    assert ["archived", "archived 4199"] in outputs  # Maintenance jobs: archive, restore
    assert ["1 0", "0"] in outputs  # History import: imported, then nothing left closing
    assert ["restored active"] in outputs  # Forgetting and undo
    # what is true now: the current city first, the old one marked, left out on request
    moved = next(o for f, o in zip(fragments, outputs, strict=True) if "assistant-3" in f)
    assert re.fullmatch(r"\[fact:[0-9a-f]{8}\] The user moved to Porto last month, still "
                        r"unpacking\. \(current, since 20 May 2024\)", moved[0]), moved
    assert moved[1:] == ["True", "False"]
    # Integrations: the Agents SDK session, the LangChain retriever and LangGraph store
    assert ["3 function_call 21 C, sunny", "c1 2"] in outputs
    assert ["Ana's sister Beatrice lives in Lisbon.", "{'content': 'Window seats.'}",
            "seat"] in outputs
    # context and expand
    context_out = next(o for f, o in zip(fragments, outputs, strict=True)
                       if "assemble_context" in f and "assistant-2" in f)
    # the preference has nothing to do with the migration: it is not pinned in
    assert context_out == ["True ['fact']", "['created']"]


def scripted_assistant(request: dict[str, Any]) -> ScriptStep:
    """A model that expands the first ref of its context, then answers from the result."""
    messages = request["messages"]
    tool_results = [m["content"] for m in messages if m.get("role") == "tool"]
    if not tool_results:
        names = [tool["function"]["name"] for tool in request.get("tools", [])]
        match = re.search(r"\[(procedure:[0-9a-f]{8})\]", messages[0]["content"])
        if "memory_expand" not in names or match is None:
            return TextReply(text="no ref or no tool to expand it with")
        return ToolCallReply(calls=(("memory_expand", {"ref": match.group(1)}),))
    number = re.search(r"TP-\d+", tool_results[-1])
    return TextReply(text=f"Use frequent flyer number {number.group(0) if number else '?'}.")


async def test_readme_tool_loop_runs_against_an_openai_compatible_server(
        database_url: str) -> None:
    (program,) = readme_blocks("py")
    async with ScriptedLLMServer(default=scripted_assistant) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test",
               "ASSISTANT_MODEL": "scripted"}
        lines = await _run(program, database_url, env)
        assert lines == ["Use frequent flyer number TP-884512."]
        first, second = list(server.requests)
        assert len(first["tools"]) == 8  # every tool but the gated memory_restore
        tool_message = second["messages"][-1]
        assert tool_message["role"] == "tool"
        assert tool_message["tool_call_id"] == second["messages"][-2]["tool_calls"][0]["id"]
        assert "frequent flyer number TP-884512" in tool_message["content"]
