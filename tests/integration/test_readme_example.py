"""Every Python example in README.md and docs/ runs as written (against a test database).

A block that imports asyncio and calls ``asyncio.run`` is a whole program; the others are
fragments that use ``store``, run inside ``async with MemoryStore.open() as store:``. Each
page's blocks run in order, and what they print is checked against what the page says.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from nous_memory.testing import ScriptedLLMServer, ScriptStep, TextReply, ToolCallReply
from tests.unit.test_readme import DOCS, blocks, doc_blocks, pages, readme_blocks

WRAPPER = """\
import asyncio
from nous_memory import MemoryStore


async def main() -> None:
    async with MemoryStore.open() as store:
{body}


asyncio.run(main())
"""

Outputs = list[list[str]]


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


def program(block: str) -> str:
    if block.startswith("import asyncio") and "asyncio.run(" in block:
        return block
    return WRAPPER.format(body=textwrap.indent(block, " " * 8))


async def test_the_readme_example_runs(database_url: str) -> None:
    (block,) = readme_blocks("python")
    lines = await _run(block, database_url)
    assert lines == ["superseded", "Ana is vegetarian", "True", "True", "True"]


def _python_surface(outputs: Outputs) -> None:
    (lines,) = outputs
    assert lines[0] == ("Chose Postgres + pgvector for unified storage [success] "
                        "[85% confidence] — Pattern: Unify to reduce surface area")
    assert lines[1] == "The weekly sync moved to Wednesdays 2"
    assert lines[2] == "['created', 'updated']"
    assert lines[3] == "2 None"


def _write_path(outputs: Outputs) -> None:
    consolidation, undo = outputs
    assert consolidation[0].startswith("superseded [UUID(")
    assert undo == ["restored active"]


def _current_truth(outputs: Outputs) -> None:
    # the current city first, the old one marked, left out on request
    (moved,) = outputs
    assert re.fullmatch(r"\[fact:[0-9a-f]{8}\] The user moved to Porto last month, still "
                        r"unpacking\. \(current, since 20 May 2024\)", moved[0]), moved
    assert moved[1:] == ["True", "False"]


def _read_path(outputs: Outputs) -> None:
    recall, context = outputs
    assert re.fullmatch(r"fact:[0-9a-f]{8} memory 0\.\d\d Ana is vegetarian", recall[0]), recall
    assert re.fullmatch(r"\d+ ms", recall[-1]), recall
    # the preference has nothing to do with the migration: it is not pinned in
    assert context == ["True ['fact']", "['created']"]


def _integrations(outputs: Outputs) -> None:
    # the Agents SDK session, the LangChain retriever and LangGraph store
    assert outputs == [["3 function_call 21 C, sunny", "c1 2"],
                       ["Ana's sister Beatrice lives in Lisbon.", "{'content': 'Window seats.'}",
                        "seat"]]


def _episodes(outputs: Outputs) -> None:
    assert outputs == [[]]  # it prints nothing; it ran (close and learn drained)


def _working_memory(outputs: Outputs) -> None:
    (lines,) = outputs
    assert lines[0].startswith("True ") and lines[0].split()[1] != "0", lines
    assert lines[1].endswith(" True"), lines


CHECKS: dict[str, Callable[[Outputs], None]] = {
    "surfaces/python.md": _python_surface,
    "guide/write-path.md": _write_path,
    "guide/current-truth.md": _current_truth,
    "guide/read-path.md": _read_path,
    "guide/episodes.md": _episodes,
    "guide/working-memory.md": _working_memory,
    "guide/history-import.md": lambda o: (
        # imported, then nothing left closing
        _equal(o, [["1 0", "0"]])),
    "guide/jobs.md": lambda o: _equal(o, [["archived", "archived 4199"]]),  # archive, restore
    "surfaces/integrations.md": _integrations,
}


def _equal(found: Outputs, wanted: Outputs) -> None:
    assert found == wanted


def test_every_page_with_python_has_its_check() -> None:
    with_python = {str(p.relative_to(DOCS)) for p in pages()
                   if p.is_relative_to(DOCS) and blocks(p, "python")}
    assert with_python == set(CHECKS)


@pytest.mark.parametrize("page", sorted(CHECKS))
async def test_doc_examples_run(page: str, database_url: str) -> None:
    found = doc_blocks(page, "python")
    assert found, f"docs/{page} has no python block"
    outputs = [await _run(program(block), database_url) for block in found]
    CHECKS[page](outputs)


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


async def test_the_tool_loop_runs_against_an_openai_compatible_server(
        database_url: str) -> None:
    (block,) = doc_blocks("surfaces/mcp.md", "py")
    assert not [p for p in pages() if p != DOCS / "surfaces/mcp.md" and blocks(p, "py")]
    async with ScriptedLLMServer(default=scripted_assistant) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test",
               "ASSISTANT_MODEL": "scripted"}
        lines = await _run(block, database_url, env)
        assert lines == ["Use frequent flyer number TP-884512."]
        first, second = list(server.requests)
        assert len(first["tools"]) == 8  # every tool but the gated memory_restore
        tool_message = second["messages"][-1]
        assert tool_message["role"] == "tool"
        assert tool_message["tool_call_id"] == second["messages"][-2]["tool_calls"][0]["id"]
        assert "frequent flyer number TP-884512" in tool_message["content"]

