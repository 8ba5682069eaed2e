"""``nous-memory export``, ``import`` and ``forget-agent`` as real subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from pathlib import Path

from nous_memory import MemoryStore
from tests.integration.portability_helpers import table_counts
from tests.integration.test_cli import cli_command, cli_env, run_process


async def test_export_import_forget_on_the_command_line(store: MemoryStore,
                                                        database_url: str,
                                                        tmp_path: Path) -> None:
    env = cli_env(database_url, tmp_path / "unused-data-dir")

    async def cli(*args: str) -> tuple[int, str, str]:
        result = await run_process([*cli_command(), *args], env)
        return result.code, result.stdout, result.stderr

    fact = await store.remember("ana", "fact", content="Ana is vegetarian")
    episode = await store.start_episode("ana", title="dinner")
    await store.append("ana", episode.id, [{"role": "user", "content": "No meat, please."}])
    target = tmp_path / "ana.jsonl"

    code, out, err = await cli("export", "--agent", "ana", "-o", str(target), "--json")
    assert code == 0, err
    written = json.loads(out)
    assert written["file"] == str(target) and written["counts"]["memories"] == 2
    assert target.stat().st_size == written["bytes"]
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".partial")]
    code, out, err = await cli("export", "--agent", "ana")  # to standard output
    assert code == 0, err
    # the same rows (the header's time and so the checksum differ)
    assert out.encode().splitlines()[1:-1] == target.read_bytes().splitlines()[1:-1]
    assert json.loads(out.splitlines()[-1])["end"]["rows"] == written["rows"]
    assert "exported" in err

    code, out, err = await cli("import", str(target), "--agent", "ana-copy", "--dry-run")
    assert code == 0 and out.startswith(f"would import {written['rows']} rows"), err
    assert await store.counts("ana-copy") == {}
    code, out, err = await cli("import", str(target), "--agent", "ana-copy")
    assert code == 0, err
    assert out.startswith(f"imported {written['rows']} rows of ana into ana-copy")
    assert (await store.get("ana-copy", fact.id)).summary == "Ana is vegetarian"
    code, out, err = await cli("--json", "import", str(target), "--agent", "ana-copy")
    assert code == 0 and not any(json.loads(out)["inserted"].values())

    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(b"".join(target.read_bytes().splitlines(keepends=True)[:-1]))
    code, out, err = await cli("import", str(damaged), "--agent", "elsewhere")
    assert code == 2 and "truncated" in err and "line" in err
    code, _, err = await cli("import", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "cannot read" in err

    before = await table_counts(database_url)
    code, _, err = await cli("forget-agent", "--agent", "ana")
    assert code == 2 and "--yes" in err
    assert await table_counts(database_url) == before
    code, out, err = await cli("forget-agent", "--agent", "ana", "--yes")
    assert code == 0, err
    assert out.startswith("forgot ana:") and "memories" in out
    assert await store.counts("ana") == {}
    assert await store.counts("ana-copy")
    code, _, err = await cli("forget-agent", "--agent", "ana", "--yes")
    assert code == 3 and "not found" in err


def readme_commands() -> list[list[str]]:
    """The ``nous-memory`` lines of the docs' export block, without their comments."""
    page = Path(__file__).resolve().parents[2] / "docs" / "operations" / "export-import.md"
    text = page.read_text()
    block = text.split("runs the nous-memory lines of this block -->", 1)[1]
    body = block.split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line.split("#", 1)[0]) for line in body.splitlines()
            if line.startswith("nous-memory ")]


async def test_the_documented_commands_run_as_written(store: MemoryStore, database_url: str,
                                                  tmp_path: Path) -> None:
    commands = readme_commands()
    assert [c[1] for c in commands] == ["export", "import", "import", "forget-agent", "import"]
    fact = await store.remember("assistant-1", "fact", content="Tim prefers Celsius")
    updated = await store.update("assistant-1", fact.id,
                                 content="Tim prefers Celsius, not Fahrenheit")
    before = await store.history("assistant-1", fact.id)
    env = cli_env(database_url, tmp_path / "unused-data-dir")
    for command in commands:
        proc = await asyncio.create_subprocess_exec(
            *cli_command(), *command[1:], env=env, cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, (command, err.decode())
    assert await store.history("assistant-1", fact.id) == before
    assert (await store.get("assistant-2", fact.id)).summary == updated.summary
    assert (await store.get("assistant-1", fact.id)).version == 2
