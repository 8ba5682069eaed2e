"""Secrets kept out of memory at write time (memories/guard.py), on every write path: the
default policy redacts them with a typed placeholder, ``refuse`` fails the write naming
the field and the kind, ``keep`` stores them; no fact is ever made of one, and the audit
says what kind was taken out, never the value."""

from __future__ import annotations

import json

import asyncpg
import pytest

from nous_memory import MemoryStore
from nous_memory.errors import InvalidInputError
from nous_memory.facts.learning import LearnAction

CARD = "4111 1111 1111 1111"
SAID = (f"I live in Porto and I love hiking. My card number is {CARD}, exp 09/28, "
        "and the gym locker code is 4471.")


async def _everything(store: MemoryStore) -> str:
    """Every row of every table of the test database, as text."""
    conn = await asyncpg.connect(store.dsn)
    try:
        tables = [r[0] for r in await conn.fetch(
            "SELECT table_name FROM information_schema.columns WHERE table_schema = "
            "'public' AND column_name = 'agent_id'")]
        out = []
        for table in tables:
            rows = await conn.fetch(f'SELECT * FROM "{table}"')
            out += [json.dumps({k: v for k, v in dict(r).items() if k != "embedding"},
                               default=str) for r in rows]  # (a vector's digits: noise)
        return "\n".join(out)
    finally:
        await conn.close()


async def test_every_write_path_redacts_by_default(store: MemoryStore) -> None:
    assert await store.secrets_policy("a") == "redact"
    episode = await store.start_episode("a", user_id="ana")
    await store.append("a", episode.id, [{"role": "user", "content": SAID},
                                         {"role": "assistant", "content": "Noted!"}])
    await store.close_episode("a", episode.id)
    await store.ingest("a", [{"started_at": "2026-01-02T10:00:00Z", "turns": [
        {"role": "user", "content": "The wifi password is Tr0ub4dor&3, keep it safe."},
        {"role": "assistant", "content": "Will do."}]}])
    decision = await store.remember("a", "decision", description=(
        "Pay the plumber with the card " + CARD), reasons=["cheapest"])
    assert "[redacted: card number]" in decision.decision.description
    rejected = await store.learn_fact("a", f"The user's card number is {CARD}.")
    assert rejected.action is LearnAction.REJECTED and "card number" in (rejected.reason or "")
    with pytest.raises(InvalidInputError) as refused:
        await store.remember("a", "fact", content=f"My card number is {CARD}.")
    assert refused.value.problems[0].field == "content"
    await store.worker().drain()
    stored = await _everything(store)
    for secret in ("4111 1111 1111 1111", "4471", "Tr0ub4dor&3"):
        assert secret not in stored, secret
    assert "Porto" in stored and "[redacted: card number]" in stored
    context = await store.assemble_context("a", "what is my card number and locker code?",
                                           user="ana")
    assert "4471" not in context.text and CARD not in context.text
    facts = (await store.list("a", kind="fact")).items
    assert facts and not any("redacted" in f.summary for f in facts)  # no fact of one
    events = await store.history("a", episode.id)
    taken = [e.new_values["redacted"] for e in events
             if e.new_values and "redacted" in e.new_values]
    assert taken == [[{"seq": 0, "kinds": ["card number", "pin"]}]]


async def test_refuse_and_keep_are_the_owners_choices(store: MemoryStore) -> None:
    await store.set_secrets_policy("r", "refuse")
    episode = await store.start_episode("r")
    with pytest.raises(InvalidInputError) as refused:
        await store.append("r", episode.id, [{"role": "user", "content": "hi"},
                                             {"role": "user", "content": SAID}])
    assert refused.value.problems[0].field == "messages[1].content"
    assert "card number" in refused.value.problems[0].reason
    assert (await store.transcript("r", episode.id)) == []  # nothing stored
    await store.set_secrets_policy("k", "keep")
    kept = await store.start_episode("k")
    await store.append("k", kept.id, [{"role": "user", "content": SAID}])
    assert CARD in (await store.transcript("k", kept.id))[0].content
    with pytest.raises(InvalidInputError):
        await store.set_secrets_policy("k", "sometimes")


async def test_the_policy_over_rest_the_client_and_the_cli(store: MemoryStore) -> None:
    from nous_memory.client import AsyncMemoryClient
    from tests.integration.client_helpers import served
    from tests.integration.test_cli import cli_command, run_process
    from tests.integration.test_cli_remote import remote_env

    async with served(store) as url, AsyncMemoryClient(url) as client:
        assert await client.secrets_policy("w") == "redact"
        assert await client.set_secrets_policy("w", "refuse") == "refuse"
        episode = await client.start_episode("w")
        with pytest.raises(InvalidInputError) as refused:
            await client.append("w", episode.id, [{"role": "user", "content": SAID}])
        assert refused.value.problems[0].field == "messages[0].content"
        with pytest.raises(InvalidInputError):
            await client.set_secrets_policy("w", "never")
        base = [*cli_command(), "--url", url]
        shown = await run_process([*base, "secrets-policy", "--agent", "w", "--json"],
                                  remote_env())
        assert shown.json() == {"agent_id": "w", "secrets": "refuse"}, shown.stderr
        changed = await run_process([*base, "secrets-policy", "--agent", "w", "--set",
                                     "redact"], remote_env())
        assert changed.code == 0 and "redacted" in changed.stdout, changed.stderr
        await client.append("w", episode.id, [{"role": "user", "content": SAID}])
        said = await client.transcript("w", episode.id)
        assert CARD not in said[0].content and "[redacted: card number]" in said[0].content


async def test_an_owners_change_keeps_secrets_out_too(store: MemoryStore) -> None:
    decision = await store.remember("c", "decision", description="Use the shared account")
    changed = await store.update("c", decision.id,
                                 description=f"Pay with the card {CARD} from now on")
    assert CARD not in changed.decision.description
    assert "[redacted: card number]" in changed.decision.description
    fact = await store.remember("c", "fact", content="Ana likes green tea.")
    with pytest.raises(InvalidInputError) as refused:
        await store.update("c", fact.id, content=f"Ana's card number is {CARD}.")
    assert refused.value.problems[0].field == "content"
