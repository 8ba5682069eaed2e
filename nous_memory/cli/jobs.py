"""``nous-memory scheduler``, ``nous-memory jobs list|run|history`` and
``nous-memory memories restore``: the maintenance jobs and restores on the command line.

``nous_memory.cli.build_parser`` adds these commands; the handlers follow its
convention (``(store, args) -> Output``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from jobs.registry import JOBS
from jobs.runner import JobRunner, utc_now
from jobs.scheduler import JobScheduler, cron_trigger

from ..errors import JobFailedError
from ..maintenance.runs import JobRun
from ..memories.kinds import Status
from ..store import MemoryStore
from .output import Output, stamp, stop_on_signals


def add_job_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                     agent: argparse.ArgumentParser, json_flag: argparse.ArgumentParser
                     ) -> None:
    scheduler = commands.add_parser(
        "scheduler", parents=[json_flag], help="run the maintenance jobs on their schedules",
        description="Run the maintenance jobs on their cron schedules (NOUS_MEMORY_JOB_"
                    "<NAME>_CRON) until SIGINT/SIGTERM.  Several schedulers may run against "
                    "one database: each job runs once per scheduled slot.  At start, a job "
                    "whose last slot was missed runs once.")
    scheduler.add_argument("--no-catch-up", action="store_true",
                           help="do not run missed jobs at start")
    scheduler.set_defaults(handler=_scheduler)

    jobs = commands.add_parser("jobs", help="list, run and inspect maintenance jobs")
    actions = jobs.add_subparsers(dest="jobs_command", required=True, metavar="ACTION")
    actions.add_parser("list", parents=[json_flag], help="jobs, schedules and last runs"
                       ).set_defaults(handler=_list)
    run = actions.add_parser("run", parents=[json_flag], help="run one job now",
                             description="Run one job now (waits for it; a job another "
                                         "runner holds is skipped and says so).")
    run.add_argument("name", choices=list(JOBS), metavar="NAME",
                     help="one of: %(choices)s")
    run.add_argument("--dry-run", action="store_true",
                     help="report what the job would change, change nothing")
    run.set_defaults(handler=_run)
    history = actions.add_parser("history", parents=[json_flag], help="recent runs, newest "
                                 "first")
    history.add_argument("--job", choices=list(JOBS), metavar="NAME")
    history.add_argument("--limit", type=int, default=20, metavar="N")
    history.set_defaults(handler=_history)

    memories = commands.add_parser("memories", help="restore deleted or archived memories")
    memory_actions = memories.add_subparsers(dest="memories_command", required=True,
                                             metavar="ACTION")
    restore = memory_actions.add_parser(
        "restore", parents=[agent], help="bring a deleted memory, or an episode's archived "
                                         "detail, back",
        description="Bring a soft-deleted memory back with the status it had (a fact goes "
                    "through the value rule: a newer version of it stays current).  For a "
                    "memory that is not deleted: bring a trimmed or archived episode's detail "
                    "and transcript back from cold storage, verified byte for byte; the jobs "
                    "leave it hot after.")
    restore.add_argument("id", metavar="ID")
    restore.add_argument("--actor", help="who restored it (recorded in the history)")
    restore.set_defaults(handler=_restore)


async def _scheduler(store: MemoryStore, args: argparse.Namespace) -> Output:
    scheduler = JobScheduler(store, catch_up=not args.no_catch_up)
    stop = asyncio.Event()
    with stop_on_signals(stop):
        await scheduler.start()
        for name, when in sorted(scheduler.next_runs().items()):
            print(f"{name}: next run {stamp(when)}", file=sys.stderr, flush=True)
        print(f"scheduler {scheduler.runner.runner_id} running; Ctrl-C or SIGTERM stops it",
              file=sys.stderr, flush=True)
        try:
            await stop.wait()
        finally:
            await scheduler.stop()
    return Output({"runner": scheduler.runner.runner_id, "stopped": True},
                  f"scheduler {scheduler.runner.runner_id} stopped")


async def _list(store: MemoryStore, args: argparse.Namespace) -> Output:
    now = utc_now()
    data: list[dict[str, Any]] = []
    for name, job in JOBS.items():
        cron = job.cron(store.settings)
        nxt = None
        if cron is not None:
            nxt = cron_trigger(name, cron, store.settings.jobs_timezone).get_next_fire_time(
                None, now)
        last = await store.job_runs.history(job=name, limit=1)
        data.append({"name": name, "schedule": cron or "off",
                     "next_run": nxt.isoformat() if nxt else None,
                     "last_run": last[0].model_dump(mode="json") if last else None,
                     "description": job.description})
    width = max(len(d["name"]) for d in data)
    lines = []
    for d in data:
        last = d["last_run"]
        state = f"last {last['status']} {last['started_at'][:19]}" if last else "never run"
        lines.append(f"{d['name']:<{width}}  {d['schedule']:<12}  {state}\n"
                     f"{'':<{width}}  {d['description']}")
    return Output(data, "\n".join(lines))


async def _run(store: MemoryStore, args: argparse.Namespace) -> Output:
    run = await JobRunner(store).run(args.name, dry_run=args.dry_run)
    if run.status == "failed":
        raise JobFailedError(f"job {run.job} failed (run {run.id}): {run.error}")
    return Output(run.model_dump(mode="json"), run_text(run))


async def _history(store: MemoryStore, args: argparse.Namespace) -> Output:
    runs = await store.job_runs.history(job=args.job, limit=max(1, min(args.limit, 1000)))
    return Output([r.model_dump(mode="json") for r in runs],
                  "\n".join(run_line(r) for r in runs) or "no runs")


async def _restore(store: MemoryStore, args: argparse.Namespace) -> Output:
    memory = await store.get(args.agent, args.id, include_deleted=True)
    if memory.status is Status.DELETED:
        back = await store.restore_deleted(args.agent, args.id, actor=args.actor)
        related = ", ".join(str(r) for r in back.related)
        how = {"restored": "", "confirmed": f"; it confirms {related}, kept as its older version",
               "superseded": f"; kept as an older version of {related}",
               "replaced": f"; it is newer, so it supersedes {related}",
               "flagged": f"; flagged as a possible conflict with {related}"}
        return Output({"id": str(back.memory.id), "restored_from": "deleted",
                       "status": back.memory.status.value, "action": back.action.value,
                       "previous_status": back.previous_status.value,
                       "related": [str(r) for r in back.related]},
                      f"restored {back.memory.id} from deletion: "
                      f"{back.memory.status.value}{how[back.action.value]}")
    result = await store.restore(args.agent, args.id, actor=args.actor)
    data = {"id": str(result.id), "previous_storage": result.previous_storage,
            "detail_chars": result.detail_chars, "messages": result.messages}
    parts = [f"{result.detail_chars} characters of detail"] if result.detail_chars else []
    if result.messages:
        parts.append(f"{result.messages} transcript message(s)")
    return Output(data, f"restored {result.id} (was {result.previous_storage}): "
                        f"{' and '.join(parts) or 'nothing'}")


def run_line(run: JobRun) -> str:
    dry = " (dry run)" if run.dry_run else ""
    counts = ", ".join(f"{k}={v}" for k, v in run.counts.items()) or "-"
    tail = f"  [{run.note or run.error}]" if (run.note or run.error) else ""
    return (f"{run.id:>6}  {stamp(run.started_at)}  {run.job:<12}  {run.status:<8}{dry}  "
            f"{run.trigger:<8}  {counts}{tail}")


def run_text(run: JobRun) -> str:
    verb = "would change" if run.dry_run else "changed"
    lines = [f"{run.job}: {run.status}{' (dry run)' if run.dry_run else ''}"]
    if run.counts:
        lines.append(f"{verb}:")
        lines += [f"  {k}: {v}" for k, v in run.counts.items()]
    if run.note:
        lines.append(f"note: {run.note}")
    return "\n".join(lines)
