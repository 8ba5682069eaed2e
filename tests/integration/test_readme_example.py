"""Every Python example in README.md and docs/ runs as written (against a test database).

A block that imports asyncio and calls ``asyncio.run`` is a whole program; the others are
fragments that use ``store``, each run as the body of a function given an open
``MemoryStore``, in page order. What each page's blocks print is checked against what the
page says.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import textwrap
from collections.abc import Callable
from typing import Any

from nous_memory.testing import ScriptedLLMServer, ScriptStep, TextReply, ToolCallReply
from tests.unit.test_readme import DOCS, blocks, doc_blocks, pages, readme_blocks

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


MARK = "----- block {} -----"


def is_program(block: str) -> bool:
    return block.startswith("import asyncio") and "asyncio.run(" in block


def fragments_program(fragments: list[str]) -> str:
    """One process for every fragment, each in its own function, in order, with a line
    before each one's output: one model load and store open instead of one a block."""
    parts = ["import asyncio", "from nous_memory import MemoryStore", ""]
    for i, fragment in enumerate(fragments):
        parts += [f"async def block_{i}(store: MemoryStore) -> None:",
                  textwrap.indent(fragment, " " * 4), ""]
    parts += ["async def main() -> None:", "    async with MemoryStore.open() as store:"]
    for i in range(len(fragments)):
        parts += [f"        print({MARK.format(i)!r}, flush=True)",
                  f"        await block_{i}(store)"]
    parts += ["", "asyncio.run(main())", ""]
    return "\n".join(parts)


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
    assert any(re.fullmatch(r"fact:[0-9a-f]{8} memory 0\.\d\d Ana is vegetarian", line)
               for line in recall), recall
    assert re.fullmatch(r"\d+ ms", recall[-1]), recall
    # the preference has nothing to do with the migration: it is not pinned in
    assert context == ["True ['fact']", "['created']"]


def _integrations(outputs: Outputs) -> None:
    # the Agents SDK session, the LangChain retriever and LangGraph store, Pydantic AI
    assert outputs == [["3 function_call 21 C, sunny", "c1 2"],
                       ["Ana's sister Beatrice lives in Lisbon.", "{'content': 'Window seats.'}",
                        "seat"],
                       ["genmaicha", "2"]]  # Pydantic AI: the context reached the model


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
    # Ben's city and the group's landlord, nothing of Ana's; Ana's own city, not Ben's
    "guide/people.md": lambda o: _equal(o, [["True True", "False", "True False"]]),
    # the locker code and the card number redacted, the rest kept; the policy changed
    # then one string of a message redacted, and a whole message forgotten
    "guide/secrets.md": lambda o: _equal(o, [[
        "I live in Porto. The gym locker code is [redacted: pin] and my card number is "
        "[redacted: card number].", "refuse"], [
        "redacted My sister Marta's new number is [redacted].", "deleted 1"]]),
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


async def test_doc_examples_run(database_url: str) -> None:
    """Every python block of docs/: the programs each in a process, the fragments all in
    one; then each page's check on what its blocks printed."""
    blocks_of = {page: doc_blocks(page, "python") for page in sorted(CHECKS)}
    assert all(blocks_of.values()), blocks_of
    outputs: dict[str, Outputs] = {page: [] for page in blocks_of}
    fragments = [(page, block) for page, found in blocks_of.items() for block in found
                 if not is_program(block)]
    for page, found in blocks_of.items():
        for block in found:
            if is_program(block):
                outputs[page].append(await _run(block, database_url))
    lines = await _run(fragments_program([block for _, block in fragments]), database_url)
    printed: list[list[str]] = []
    for line in lines:
        if line == MARK.format(len(printed)):
            printed.append([])
        else:
            printed[-1].append(line)
    assert len(printed) == len(fragments)
    for (page, _), out in zip(fragments, printed, strict=True):
        outputs[page].append(out)
    for page, check in CHECKS.items():
        check(outputs[page])


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

