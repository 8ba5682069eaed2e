"""The embedded default: started on demand, reused with its data, stopped cleanly."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import asyncpg
import pytest

from nous_memory import MemoryStore
from nous_memory.errors import ConfigurationError
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


async def test_the_server_is_tuned_at_its_next_start_and_keeps_its_cache(
        tmp_path: Path) -> None:
    async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder(),
                                embedded_shared_buffers="48MB") as store:
        assert await _settings(store, "shared_buffers") == ["128MB"]  # initdb's, for now
        await store.remember("a", "fact", content="Kept warm")
    pgdata = tmp_path / "pgdata"
    assert "shared_buffers = '48MB'" in (pgdata / "nous_memory.conf").read_text()
    async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder(),
                                embedded_shared_buffers="48MB") as store:
        assert await _settings(store, "shared_buffers", "shared_preload_libraries") == [
            "48MB", "pg_prewarm"]
    assert not _running(tmp_path)
    assert (pgdata / "autoprewarm.blocks").stat().st_size > 0  # written at shutdown
    async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder(),
                                embedded_shared_buffers="64MB") as store:
        assert await _settings(store, "shared_buffers") == ["64MB"]
        assert (await store.get("a", (await store.list("a")).items[0].id)).summary
    assert "autoprewarm successfully prewarmed" in (pgdata / "log").read_text()
    conf = (pgdata / "postgresql.conf").read_text()
    assert conf.count("include_if_exists = 'nous_memory.conf'") == 1
    conf_stat, tuning_stat = (pgdata / "postgresql.conf").stat(), (
        pgdata / "nous_memory.conf").stat()
    assert (tuning_stat.st_uid, tuning_stat.st_mode) == (conf_stat.st_uid, conf_stat.st_mode)


async def test_what_the_owner_set_in_the_server_files_is_kept(tmp_path: Path) -> None:
    async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder()):
        pass
    conf = tmp_path / "pgdata" / "postgresql.conf"
    conf.write_text(conf.read_text() + "shared_preload_libraries = 'pg_stat_statements'\n")
    auto = tmp_path / "pgdata" / "postgresql.auto.conf"
    auto.write_text(auto.read_text() + "shared_buffers = '40MB'\n")  # as ALTER SYSTEM does
    async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder(),
                                embedded_shared_buffers="48MB") as store:
        assert await _settings(store, "shared_buffers", "shared_preload_libraries") == [
            "40MB", "pg_stat_statements"]


async def test_more_shared_buffers_than_the_machine_has_is_refused_before_starting(
        tmp_path: Path) -> None:
    async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder()):
        pass
    with pytest.raises(ConfigurationError, match="more than this machine's memory"):
        async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder(),
                                    embedded_shared_buffers="9999999GB"):
            pass
    assert not _running(tmp_path)
    async with MemoryStore.open(data_dir=tmp_path, embedder=FakeEmbedder()) as store:
        assert store.embedded  # nothing was left broken
