"""A careless or unlucky deployment: PostgreSQL restarted fast and stopped hard under
load.  ``bench/outage.py``, bounded to about a minute, must report every goal met: no
500, no acknowledged write lost, no work item processed twice, recovery within 2 s of
the database accepting again, at most two log lines a second of outage."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


async def test_restarts_and_hard_stops_under_load_meet_every_goal() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_MEMORY_")}
    env["HF_HUB_OFFLINE"] = "1"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "bench" / "outage.py"), "--restarts", "6", "--hard", "2",
        "--hard-down-s", "3", "--clients", "3", "--gap-s", "1", cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 240)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    text = out.decode()
    assert proc.returncode == 0, err.decode()[-3000:]
    figures = dict(line.split(": ", 1) for line in text.splitlines()
                   if line and not line.startswith("#"))
    assert figures["http_500"] == "0", text
    assert figures["acked_writes_lost"] == "0", text
    assert figures["items_processed_twice"] == "0", text
    assert float(figures["recovery_s_p95"]) <= 2.0, text
    assert float(figures["log_lines_per_outage_s"]) <= 2.0, text
    assert text.strip().splitlines()[-1] == "outage_checks_failed: 0", text
