"""``nous-memory export``, ``import`` and ``forget-agent`` as real subprocesses."""

from __future__ import annotations

import json
import os
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
