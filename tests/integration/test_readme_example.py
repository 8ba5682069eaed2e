"""The README's Python example runs as written (against a test database)."""

from __future__ import annotations

import asyncio
import os
import sys

from tests.unit.test_readme import readme_blocks


async def test_readme_python_example_runs(database_url: str) -> None:
    (example,) = readme_blocks("python")
    env = {**os.environ, "NOUS_MEMORY_DATABASE_URL": database_url, "HF_HUB_OFFLINE": "1"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", example, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=300)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0] == ("Chose Postgres + pgvector for unified storage [success] "
                        "[85% confidence] — Pattern: Unify to reduce surface area")
    assert lines[1] == "The weekly sync moved to Wednesdays 2"
    assert lines[2] == "['created', 'updated']"
    assert lines[3] == "2 None"
