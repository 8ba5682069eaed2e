"""The TypeScript client (clients/typescript): its generated code matches the API, it
typechecks (``tsc``), its tests pass with node's test runner against ``nous-memory
serve`` on loopback with a key, and ``npm pack`` makes a package that loads.

The AI SDK middleware is tested with the SDK's OpenAI-compatible provider talking to
``ScriptedLLMServer``, whose answer repeats the memory block it was sent, so the test
sees what reached the model.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from nous_memory.db import EmbeddedServer
from nous_memory.testing import ScriptedLLMServer
from nous_memory.testing.script import ScriptStep, TextReply, ToolCallReply
from tests.conftest import create_database, drop_database
from tests.integration.http_helpers import free_port, start_server, stop_server, wait_healthy
from tests.integration.node_tools import NODE, TYPESCRIPT, node_env, require

KEY = "typescript-key-0123456789abcdef"
PREFIX = "ts-"
AGENTS = [f"{PREFIX}{name}" for name in ("client", "export", "import", "middleware", "empty",
                                                 "tools", "now", "retry", "providers")]
# test/retry.test.ts: the agent's first, third and fourth memory writes lose as a deadlock's
# victim would (40P01: the service answers 409 with Retry-After, nothing written)
LOSING_WRITES = f"""
    CREATE SEQUENCE ts_losses;
    CREATE FUNCTION ts_lose() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.agent_id = '{PREFIX}retry' THEN
            IF nextval('ts_losses') IN (1, 3, 4) THEN
                RAISE EXCEPTION 'deadlock detected' USING ERRCODE = '40P01';
            END IF;
        END IF;
        RETURN NEW;
    END $$;
    CREATE TRIGGER ts_lose BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION ts_lose();
"""
TSC = TYPESCRIPT / "node_modules" / "typescript" / "bin" / "tsc"
GENERATOR = TYPESCRIPT / "node_modules" / "openapi-typescript" / "bin" / "cli.js"
REGENERATE = "run clients/typescript/generate.sh and commit openapi.json and src/generated"


def answer_from_prompt(request: dict[str, Any]) -> ScriptStep:
    """A model that says which memories it was given (the context block's lines); asked
    the time with a clock tool offered, it calls the tool, then answers with its result."""
    results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    if results:
        return TextReply(text=f"It is {results[-1]}")
    if request.get("tools") and "time" in str(request["messages"][-1]["content"]):
        return ToolCallReply(calls=(("clock", {}),))
    blocks = [m["content"] for m in request["messages"]
              if m["role"] == "system" and "<nous-memory" in str(m["content"])]
    lines = [line.strip() for block in blocks for line in block.splitlines()
             if line.strip() and not line.strip().startswith(("<", "</"))]
    return TextReply(text="I recall: " + (" | ".join(lines) if lines else "nothing"))


def run(argv: list[str], *, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=TYPESCRIPT, env=env or node_env(), text=True,
                          capture_output=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def tools() -> None:
    require(NODE, TSC, GENERATOR)


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(default=answer_from_prompt) as server:
        yield server


@pytest.fixture(scope="module")
async def service(tools: None, pg_server: EmbeddedServer, template_db: str
                  ) -> AsyncIterator[str]:
    dsn = await create_database(pg_server, template_db)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(LOSING_WRITES)
    finally:
        await conn.close()
    port = free_port()
    env = {**os.environ, "NOUS_MEMORY_DATABASE_URL": dsn, "HF_HUB_OFFLINE": "1",
           "NOUS_MEMORY_API_KEYS": f"{KEY}:{'|'.join(AGENTS)}"}
    proc = await asyncio.to_thread(start_server, port, env)
    base = f"http://127.0.0.1:{port}"
    try:
        await asyncio.to_thread(wait_healthy, base, proc)
        yield base
        conn = await asyncpg.connect(dsn)
        try:  # test/retry.test.ts met both losses: the first one sent again
            assert await conn.fetchval("SELECT last_value FROM ts_losses") == 4
        finally:
            await conn.close()
    finally:
        await asyncio.to_thread(stop_server, proc)
        await drop_database(pg_server, dsn)


def test_generated_code_matches_the_api(tools: None, tmp_path: Path) -> None:
    """openapi.json is the service's document now, and the types are generated from it."""
    printed = subprocess.run([sys.executable, str(TYPESCRIPT / "scripts" / "openapi.py")],
                             capture_output=True, text=True, check=True, timeout=120)
    committed = (TYPESCRIPT / "openapi.json").read_text()
    assert printed.stdout == committed, f"the API changed: {REGENERATE}"
    out = tmp_path / "schema.ts"
    made = run([str(NODE), str(GENERATOR), "openapi.json", "--default-non-nullable", "false",
                "--output", str(out)])
    assert made.returncode == 0, made.stderr
    assert out.read_text() == (TYPESCRIPT / "src" / "generated" / "schema.ts").read_text(), \
        f"the generated types differ: {REGENERATE}"


async def test_typescript_package(service: str, llm: ScriptedLLMServer,
                                  tmp_path: Path) -> None:
    """tsc, then node's test runner against the service, then npm pack."""
    built = await asyncio.to_thread(run, [str(NODE), str(TSC), "-p", "tsconfig.json"])
    assert built.returncode == 0, built.stdout + built.stderr
    env = node_env(NOUS_MEMORY_URL=service, NOUS_MEMORY_API_KEY=KEY,
                   NOUS_MEMORY_AGENT_PREFIX=PREFIX, SCRIPTED_LLM_URL=llm.base_url)
    tested = await asyncio.to_thread(
        run, [str(NODE), "--test", "--test-concurrency=1", "dist/test/*.test.js"], env=env)
    report = tested.stdout + tested.stderr
    assert tested.returncode == 0, report
    counts = dict(re.findall(r"^# (tests|pass|fail) (\d+)$", report, re.MULTILINE))
    assert counts["fail"] == "0" and int(counts["pass"]) >= 10, report
    assert llm.requests, "the middleware test never reached the scripted model"

    packed = await asyncio.to_thread(
        run, ["npm", "pack", "--pack-destination", str(tmp_path)], env=node_env())
    assert packed.returncode == 0, packed.stderr
    tarball = tmp_path / packed.stdout.strip().splitlines()[-1]
    await asyncio.to_thread(check_package, tarball, tmp_path / "unpacked")


def check_package(tarball: Path, where: Path) -> None:
    """The package holds the built library and no tests, and it loads in node."""
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
        archive.extractall(where, filter="data")
    assert {"package/dist/src/index.js", "package/dist/src/index.d.ts",
            "package/dist/src/ai-sdk.js", "package/dist/src/generated/schema.d.ts",
            "package/package.json", "package/README.md"} <= names
    assert not [n for n in names if n.startswith(("package/dist/test/", "package/src/"))]
    # the client alone does not load the AI SDK (an optional peer dependency)
    client_files = [where / n for n in names if n.startswith("package/dist/src/")
                    and n.endswith(".js") and "middleware" not in n and "ai-sdk" not in n]
    assert not [f for f in client_files if re.search(r"from ['\"]ai['\"]", f.read_text())]
    # loaded by its package name, as a project that installed it would
    project = where / "project"
    (project / "node_modules").mkdir(parents=True)
    (project / "node_modules" / "nous-memory-client").symlink_to(where / "package")
    (where / "package" / "node_modules").symlink_to(TYPESCRIPT / "node_modules")
    loaded = subprocess.run(
        [str(NODE), "--input-type=module", "-e",
         "const c = await import('nous-memory-client');"
         "const m = await import('nous-memory-client/ai-sdk');"
         "console.log(typeof c.NousMemoryClient, typeof m.withNousMemory)"],
        cwd=project, capture_output=True, text=True, timeout=60, check=False)
    assert loaded.stdout.split() == ["function", "function"], loaded.stderr


def test_the_docs_typescript_example_is_the_typechecked_one() -> None:
    """The docs page and the package's README show examples/chat.ts, which tsc checks."""
    example = (TYPESCRIPT / "examples" / "chat.ts").read_text()
    page = TYPESCRIPT.parents[1] / "docs" / "surfaces" / "typescript.md"
    for readme in (page, TYPESCRIPT / "README.md"):
        assert example in re.findall(r"```ts\n(.*?)```", readme.read_text(), re.S), readme
