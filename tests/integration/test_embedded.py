"""The embedded default: started on demand, reused with its data, stopped cleanly."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import asyncpg
import pytest

from nous_memory import MemoryStore
from nous_memory.testing import FakeEmbedder

SCRIPT = """
import asyncio, sys
from nous_memory import MemoryStore
from nous_memory.testing import FakeEmbedder

async def main():
    async with MemoryStore.open(embedder=FakeEmbedder()) as store:
        assert store.embedded
        if sys.argv[1] == "write":
            print((await store.remember("a", "fact", content="Survives restarts")).id)
        else:
            print((await store.get("a", sys.argv[2])).summary)

asyncio.run(main())
"""


async def _run(data_dir: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_MEMORY_")}
    env["NOUS_MEMORY_DATA_DIR"] = str(data_dir)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SCRIPT, *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=180)
    assert proc.returncode == 0, err.decode()
    return out.decode().strip()


def _running(data_dir: Path) -> bool:
    return (data_dir / "pgdata" / "postmaster.pid").exists()


async def test_data_survives_restarts_and_server_stops(tmp_path: Path) -> None:
    memory_id = await _run(tmp_path, "write")
    assert not _running(tmp_path), "the last process did not stop its server"
    assert await _run(tmp_path, "read", memory_id) == "Survives restarts"
    assert not _running(tmp_path)


async def test_handles_in_one_process_share_the_server(tmp_path: Path) -> None:
    async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder()) as first:
        made = await first.remember("a", "fact", content="Shared server")
        async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder()) as second:
            assert (await second.get("a", made.id)).summary == "Shared server"
        assert _running(tmp_path)
        assert (await first.get("a", made.id)).summary == "Shared server"
    assert not _running(tmp_path)


async def test_unreachable_database_url_is_a_clear_error(tmp_path: Path) -> None:
    from nous_memory import DatabaseUnavailableError

    url = f"postgresql://nobody:secret@/nodb?host={tmp_path}&port=1"
    with pytest.raises(DatabaseUnavailableError) as info:
        async with MemoryStore.open(database_url=url, embedder=FakeEmbedder(), db_wait_s=0):
            pass
    assert "secret" not in str(info.value) and "nodb" in str(info.value)



async def _settings(store: MemoryStore, *names: str) -> list[str]:
    conn = await asyncpg.connect(store.dsn)
    try:
        return [str(await conn.fetchval(f"SHOW {name}")) for name in names]
    finally:
        await conn.close()


async def test_the_server_is_tuned_from_its_first_start_and_keeps_its_cache(
        tmp_path: Path) -> None:
    async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder(),
                                embedded_shared_buffers="48MB") as store:
        assert await _settings(store, "shared_buffers", "shared_preload_libraries") == [
            "48MB", "pg_prewarm"]
        await store.remember("a", "fact", content="Kept warm")
    pgdata = tmp_path / "pgdata"
    assert not _running(tmp_path)
    assert (pgdata / "autoprewarm.blocks").stat().st_size > 0  # written at shutdown
    async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder(),
                                embedded_shared_buffers="64MB") as store:
        assert await _settings(store, "shared_buffers") == ["64MB"]  # at the next start
    log = (pgdata / "log").read_text()
    assert "autoprewarm successfully prewarmed" in log
    conf = (pgdata / "postgresql.conf").read_text()
    assert conf.count("include_if_exists = 'nous_memory.conf'") == 1
