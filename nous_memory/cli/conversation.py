"""``nous-memory episodes prompt`` and ``episodes summary``: working memory from a shell.

``prompt`` prints the chat messages for an open episode's next model call (system prompt,
rolling summary, newest messages) within ``--budget`` tokens; ``summary`` shows the
rolling summary, ``--run`` folds what is due first and ``--history`` lists the chain.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ..errors import InvalidInputError
from .output import Output, json_argument, shorten

if TYPE_CHECKING:
    from ..store import MemoryStore

CONTENT_CHARS = 400


def add_conversation_commands(actions: argparse._SubParsersAction[argparse.ArgumentParser],
                              agent: argparse.ArgumentParser) -> None:
    """Add ``prompt`` and ``summary`` to the ``episodes`` command group."""
    prompt = actions.add_parser(
        "prompt", parents=[agent], help="the prompt for an episode's next model call",
        description="Build chat messages (system prompt, rolling summary, newest messages) "
                    "within a token budget, folding what the summary policy says is due.")
    prompt.add_argument("episode_id", metavar="EPISODE_ID")
    prompt.add_argument("--system", default="", metavar="TEXT", help="the system prompt")
    prompt.add_argument("--budget", type=int, required=True, metavar="TOKENS",
                        help="the most tokens the messages may take (exact cl100k count)")
    prompt.add_argument("--no-summarize", action="store_true",
                        help="use the summary as it is; fold nothing now")
    prompt.add_argument("--policy-json", metavar="JSON",
                        help='per-call policy knobs, e.g. \'{"mode": "rule"}\'')
    prompt.set_defaults(handler=_prompt, remote=True)

    summary = actions.add_parser(
        "summary", parents=[agent], help="an episode's rolling summary",
        description="Show the rolling summary; --run folds what is due first (--force: "
                    "everything but the protected tail); --history lists the chain.")
    summary.add_argument("episode_id", metavar="EPISODE_ID")
    summary.add_argument("--run", action="store_true", help="summarise now if due")
    summary.add_argument("--force", action="store_true", help="with --run: fold now")
    summary.add_argument("--history", action="store_true", help="list every chain record")
    summary.add_argument("--policy-json", metavar="JSON", help="per-call policy knobs")
    summary.set_defaults(handler=_summary, remote=True)


def _policy(args: argparse.Namespace) -> dict[str, object] | None:
    if args.policy_json is None:
        return None
    knobs = json_argument(args.policy_json, "policy_json")
    if not isinstance(knobs, dict):
        raise InvalidInputError.single("policy_json", "must be a JSON object of knobs")
    return knobs


async def _prompt(store: MemoryStore, args: argparse.Namespace) -> Output:
    prompt = await store.build_prompt(args.agent, args.episode_id, args.system, args.budget,
                                      summarize=not args.no_summarize, policy=_policy(args))
    lines = [f"{prompt.tokens}/{prompt.budget_tokens} tokens: summary {prompt.summary_tokens}, "
             f"{prompt.tail_messages} recent message(s), {prompt.dropped_messages} left out"]
    lines += [f"[{m['role']}] {shorten(m['content'], CONTENT_CHARS)}" for m in prompt.messages]
    return Output(prompt.model_dump(mode="json"), "\n".join(lines))


async def _summary(store: MemoryStore, args: argparse.Namespace) -> Output:
    data: dict[str, object] = {}
    lines: list[str] = []
    if args.force and not args.run:  # else it would be ignored without a word
        raise InvalidInputError.single("force", "only with --run (fold now)")
    if args.run:
        result = await store.summarize_conversation(args.agent, args.episode_id,
                                                    force=args.force, policy=_policy(args))
        data["result"] = result.model_dump(mode="json")
        lines.append(f"folded {result.folded} message(s); watermark {result.watermark_seq}")
        lines += [f"  - {r}" for r in result.reasons]
        lines += [f"  gap at {g.seq}: {g.reason}" for g in result.gaps]
    summary = await store.conversation_summary(args.agent, args.episode_id)
    data["summary"] = summary.model_dump(mode="json")
    lines.append(f"watermark: {summary.watermark_seq}  source: {summary.source or '-'}  "
                 f"tokens: {summary.tokens}")
    if summary.invalidated_reason:
        lines.append(f"invalidated: {summary.invalidated_reason}")
    lines.append(summary.text or "(no summary yet)")
    if summary.facets.entities:
        lines.append("entities: " + ", ".join(summary.facets.entities))
    if args.history:
        records = await store.summary_history(args.agent, args.episode_id, limit=500)
        data["history"] = [r.model_dump(mode="json") for r in records]
        lines.append("history:")
        lines += [f"  #{r.id} parent={r.parent_id} {r.level} {r.op} depth={r.depth} "
                  f"seq {r.first_seq}-{r.last_seq} {r.tokens} tokens {r.source} {r.status}"
                  for r in records]
    return Output(json.loads(json.dumps(data, default=str)), "\n".join(lines))
