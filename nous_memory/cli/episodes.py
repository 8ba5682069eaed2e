"""``nous-memory episodes ...``, ``nous-memory worker`` and ``nous-memory llm usage``.

Episodes are live conversations: ``start`` one, ``append`` messages, ``close`` it (which
only queues its processing; ``--wait`` runs the worker here until it is closed) and
``show`` it with its transcript.  ``worker`` serves the work queue until SIGINT/SIGTERM
(``--once``: one pass, then exit).  ``llm usage`` totals an agent's LLM calls.

Values go to the store as given, so validation and its "field: reason" messages stay in
one place.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from ..episodes.results import TRANSCRIPT_PAGE, AppendResult, Role
from ..errors import InvalidInputError, NousMemoryError
from ..memories.kinds import EpisodeDetail, EpisodeState
from ..memories.messages import TranscriptMessage
from ..memories.params import parse_time
from ..memories.records import Memory
from .conversation import add_conversation_commands
from .output import Output, json_argument, memory_text, shorten, stamp, stop_on_signals

if TYPE_CHECKING:
    from ..llm import UsageRow
    from ..store import MemoryStore


WAIT_TIMEOUT_S = 600.0
WAIT_POLL_S = 0.2
TRANSCRIPT_CONTENT_CHARS = 300


def add_episode_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                         agent: argparse.ArgumentParser,
                         json_flag: argparse.ArgumentParser) -> None:
    """Add ``episodes``, ``worker`` and ``llm``; ``agent`` supplies --agent and --json,
    ``json_flag`` --json alone."""
    episodes = commands.add_parser(
        "episodes", help="live conversations: start, append, close, show",
        description="Episodes are conversations stored verbatim; closing one queues its "
                    "summary (and, with an LLM, its facts and decisions) for the worker.")
    actions = episodes.add_subparsers(dest="episodes_command", required=True, metavar="ACTION")

    start = actions.add_parser("start", parents=[agent], help="start an episode",
                               description="Start an episode in state open; prints its id "
                                           "first.")
    start.add_argument("--title", help="what the conversation is about")
    start.add_argument("--participant", dest="participants", action="append",
                       metavar="NAME", help="someone taking part; repeat for several")
    start.add_argument("--user-id", metavar="ID", help="the user the conversation is with")
    start.add_argument("--started-at", metavar="TIME",
                       help="ISO 8601 time (default: now; UTC if no offset)")
    start.set_defaults(handler=_start, remote=True)

    append = actions.add_parser(
        "append", parents=[agent], help="append messages to an open episode",
        description="Append one message (--content) or several (--messages-json); either "
                    "all are stored or, if any is invalid, none.")
    append.add_argument("episode_id", metavar="EPISODE_ID")
    append.add_argument("--role", choices=[r.value for r in Role],
                        help=f"who wrote --content (default: {Role.USER.value})")
    append.add_argument("--content", metavar="TEXT", help="the message text")
    append.add_argument("--name", help="the speaker's name")
    append.add_argument("--tool-call-id", metavar="ID", help="for a tool message")
    append.add_argument("--created-at", metavar="TIME",
                        help="when it was said, ISO 8601 (default: now)")
    append.add_argument("--metadata-json", metavar="JSON",
                        help="a JSON object stored with the message as given")
    append.add_argument("--messages-json", metavar="JSON",
                        help='a JSON array of messages, e.g. \'[{"role": "user", "content": '
                             '"hi"}]\' (fields: role, content, name, tool_call_id, '
                             'created_at, metadata); instead of --content')
    append.set_defaults(handler=_append, remote=True)

    close = actions.add_parser(
        "close", parents=[agent], help="close an episode",
        description="Mark the episode closing and queue its processing; closing twice "
                    "changes nothing.  --wait processes the queue here until it is closed.")
    close.add_argument("episode_id", metavar="EPISODE_ID")
    close.add_argument("--wait", action="store_true",
                       help="run the worker in this process until the episode is closed, "
                            "then print it")
    close.add_argument("--timeout", type=float, default=WAIT_TIMEOUT_S, metavar="SECONDS",
                       help="with --wait: give up after this long (default %(default)g)")
    close.set_defaults(handler=_close, remote=True)

    show = actions.add_parser("show", parents=[agent], help="show an episode",
                              description="Show an episode; --json prints the episode, or "
                                          "{episode, transcript} with --transcript.")
    show.add_argument("episode_id", metavar="EPISODE_ID")
    show.add_argument("--transcript", action="store_true", help="also print every message")
    show.set_defaults(handler=_show, remote=True)

    add_conversation_commands(actions, agent)

    worker = commands.add_parser(
        "worker", parents=[json_flag], help="process the work queue (episode closes)",
        description="Process the work queue until SIGINT or SIGTERM: close episodes idle "
                    "longer than NOUS_MEMORY_EPISODE_IDLE_CLOSE_S and summarise closed ones. "
                    "Several workers may run at once.")
    worker.add_argument("--once", action="store_true",
                        help="close idle episodes, process every ready item, print how many "
                             "and exit")
    worker.add_argument("--poll", type=float, default=1.0, metavar="SECONDS",
                        help="how often an idle worker looks for work (default %(default)g)")
    worker.set_defaults(handler=_worker)

    llm = commands.add_parser("llm", help="LLM usage records")
    llm_actions = llm.add_subparsers(dest="llm_command", required=True, metavar="ACTION")
    usage = llm_actions.add_parser(
        "usage", parents=[agent], help="an agent's LLM calls, tokens and latency",
        description="Totals per purpose and model of every LLM call (each HTTP attempt, "
                    "failed ones too) made for the agent.")
    usage.add_argument("--since", metavar="TIME",
                       help="only calls at or after this ISO 8601 time (UTC if no offset)")
    usage.set_defaults(handler=_usage)


# ---------------------------------------------------------------------- parsing


def messages_from_args(args: argparse.Namespace) -> list[Any]:
    """The messages to append: --messages-json, or the one message the options describe."""
    single = {"role": args.role, "content": args.content, "name": args.name,
              "tool_call_id": args.tool_call_id,
              "created_at": args.created_at, "metadata_json": args.metadata_json}
    if args.messages_json is not None:
        given = [name for name, value in single.items() if value is not None]
        if given:
            raise InvalidInputError.single(
                "messages_json", "give either --messages-json or --content (with --name, ...), "
                f"not both (also given: {', '.join('--' + g.replace('_', '-') for g in given)})")
        messages = json_argument(args.messages_json, "messages_json")
        if not isinstance(messages, list):
            raise InvalidInputError.single("messages_json", "must be a JSON array of messages")
        return messages
    if args.content is None:
        raise InvalidInputError.single("content", "missing; give --content or --messages-json")
    message: dict[str, Any] = {"role": args.role or Role.USER.value, "content": args.content}
    if args.metadata_json is not None:
        metadata = json_argument(args.metadata_json, "metadata_json")
        if not isinstance(metadata, dict):
            raise InvalidInputError.single("metadata_json", "must be a JSON object")
        message["metadata"] = metadata
    for name in ("name", "tool_call_id"):
        if getattr(args, name) is not None:
            message[name] = getattr(args, name)
    if args.created_at is not None:
        message["created_at"] = parse_time(args.created_at, "created_at")
    return [message]


# ---------------------------------------------------------------------- commands


async def _start(store: MemoryStore, args: argparse.Namespace) -> Output:
    episode = await store.start_episode(
        args.agent, title=args.title, participants=args.participants, user_id=args.user_id,
        started_at=parse_time(args.started_at, "started_at"))
    return Output(episode.model_dump(mode="json"), episode_line(episode))


async def _append(store: MemoryStore, args: argparse.Namespace) -> Output:
    result = await store.append(args.agent, args.episode_id, messages_from_args(args))
    return Output(result.model_dump(mode="json"), append_text(result))


async def _close(store: MemoryStore, args: argparse.Namespace) -> Output:
    episode = await store.close_episode(args.agent, args.episode_id)
    if not args.wait:
        return Output(episode.model_dump(mode="json"), episode_line(episode))
    episode = await wait_closed(store, args.agent, episode, timeout_s=args.timeout)
    return Output(episode.model_dump(mode="json"), memory_text(episode))


async def wait_closed(store: MemoryStore, agent_id: str, episode: Memory, *,
                      timeout_s: float, poll_s: float = WAIT_POLL_S) -> Memory:
    """Work the queue in this process until ``episode`` is closed and its follow-up
    (embeddings, learned facts) done, or ``timeout_s``.

    Items are claimed like any worker claims them, so this also processes whatever else
    is ready; an item another worker holds is left to it and the episode re-read.  Over
    a service (``--url``) the service's worker does the work and this only polls.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    if not hasattr(store, "worker"):
        return await _poll_closed(store, agent_id, episode, deadline, poll_s)
    worker = store.worker(poll_s=poll_s)
    async with worker.presence():  # one presence lock for the whole wait
        while (episode_detail(episode).state is not EpisodeState.CLOSED
               or await store.episodes.processing(agent_id, episode.id)):
            if not await worker.run_once():
                if loop.time() >= deadline:
                    raise NousMemoryError(
                        f"close processing of episode {episode.id} (now "
                        f"{episode_detail(episode).state.value}) is not finished after "
                        f"{timeout_s:g} s; a worker will finish it later")
                await asyncio.sleep(poll_s)
            episode = await store.get_episode(agent_id, episode.id)
    return episode


async def _poll_closed(client: Any, agent_id: str, episode: Memory, deadline: float,
                       poll_s: float) -> Memory:
    loop = asyncio.get_running_loop()
    while episode_detail(episode).state is not EpisodeState.CLOSED:
        if loop.time() >= deadline:
            raise NousMemoryError(f"episode {episode.id} is not closed yet; the service's "
                                  "worker will finish it later")
        await asyncio.sleep(poll_s)
        episode = await client.get_episode(agent_id, episode.id)
    result: Memory = episode
    return result


async def _show(store: MemoryStore, args: argparse.Namespace) -> Output:
    episode = await store.get_episode(args.agent, args.episode_id)
    if not args.transcript:
        return Output(episode.model_dump(mode="json"), memory_text(episode))
    messages = await full_transcript(store, args.agent, episode)
    data = {"episode": episode.model_dump(mode="json"),
            "transcript": [message_json(m) for m in messages]}
    lines = [memory_text(episode), "transcript:"]
    lines += [f"  {message_line(m)}" for m in messages] or ["  (no messages)"]
    return Output(data, "\n".join(lines))


async def full_transcript(store: MemoryStore, agent_id: str,
                          episode: Memory) -> list[TranscriptMessage]:
    messages: list[TranscriptMessage] = []
    from_seq = 0
    while True:
        page = await store.transcript(agent_id, episode.id, from_seq=from_seq,
                                      limit=TRANSCRIPT_PAGE)
        messages += page
        if len(page) < TRANSCRIPT_PAGE:
            return messages
        from_seq = page[-1].seq + 1


async def _worker(store: MemoryStore, args: argparse.Namespace) -> Output:
    worker = store.worker(poll_s=args.poll)
    if args.once:
        closed = await worker.close_idle()
        processed = await worker.drain()
        return Output({"idle_closed": closed, "processed": processed},
                      f"processed {processed} work item(s); closed {closed} idle episode(s)")
    stop = asyncio.Event()
    with stop_on_signals(stop):
        print(f"worker {worker.worker_id} running; Ctrl-C or SIGTERM stops it",
              file=sys.stderr, flush=True)
        await worker.run(stop)
    return Output({"worker_id": worker.worker_id, "stopped": True},
                  f"worker {worker.worker_id} stopped")


async def _usage(store: MemoryStore, args: argparse.Namespace) -> Output:
    rows = await store.llm_usage(args.agent, parse_time(args.since, "since"))
    return Output([usage_json(r) for r in rows], usage_text(rows))


# ---------------------------------------------------------------------- formatting


def episode_line(episode: Memory) -> str:
    detail = episode_detail(episode)
    return f"{episode.id}  {detail.state.value}  {detail.title or episode.summary or '-'}"


def append_text(result: AppendResult) -> str:
    return (f"appended {result.last_seq - result.first_seq + 1} message(s) to "
            f"{result.episode_id}: seq {result.first_seq}-{result.last_seq}, {result.tokens} "
            f"tokens; {result.message_count} message(s) in the episode")


def message_json(message: TranscriptMessage) -> dict[str, Any]:
    return {"seq": message.seq, "role": message.role, "name": message.name,
            "content": message.content, "tokens": message.tokens,
            "created_at": message.created_at.isoformat() if message.created_at else None,
            "metadata": message.metadata}


def message_line(message: TranscriptMessage) -> str:
    return (f"[{message.seq}] {stamp(message.created_at)}  {message.speaker}: "
            f"{shorten(message.content, TRANSCRIPT_CONTENT_CHARS)}")


def usage_json(row: UsageRow) -> dict[str, Any]:
    return {"purpose": row.purpose, "model": row.model, "calls": row.calls,
            "ok_calls": row.ok_calls, "prompt_tokens": row.prompt_tokens,
            "completion_tokens": row.completion_tokens, "total_tokens": row.total_tokens,
            "estimated_calls": row.estimated_calls, "latency_ms": row.latency_ms,
            "avg_latency_ms": round(row.latency_ms / row.calls) if row.calls else 0}


USAGE_COLUMNS = ("purpose", "model", "calls", "ok", "prompt", "completion", "latency_ms",
                 "avg_ms")


def usage_text(rows: list[UsageRow]) -> str:
    if not rows:
        return "no LLM calls"
    table = [USAGE_COLUMNS] + [
        (r.purpose, r.model, str(r.calls), str(r.ok_calls), str(r.prompt_tokens),
         str(r.completion_tokens), str(r.latency_ms),
         str(usage_json(r)["avg_latency_ms"])) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(USAGE_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
             for row in table]
    estimated = sum(r.estimated_calls for r in rows)
    if estimated:
        lines.append(f"({estimated} call(s) with estimated token counts)")
    return "\n".join(lines)


def episode_detail(memory: Memory) -> EpisodeDetail:
    assert isinstance(memory.detail, EpisodeDetail)
    return memory.detail
