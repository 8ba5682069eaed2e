"""The inspector pages over HTTP (in-process): sign-in, the signed session, CSRF on every
form that changes data, agent scoping, and errors shown as pages next to their fields."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from html import unescape

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.api import create_app
from nous_memory.api.inspector import agents
from nous_memory.api.inspector.session import COOKIE

KEY_ALL = "inspector-key-every-agent-0001"
KEY_A = "inspector-key-agent-a-only-0002"
KEYS = f"{KEY_ALL},{KEY_A}:agent-a"
A = "agent-a"
B = "agent-b"


def client_for(app: object, host: str = "127.0.0.1") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=(host, 50000)),  # type: ignore[arg-type]
                             base_url="http://127.0.0.1", follow_redirects=False)


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', html)
    assert match, "the page has no CSRF field"
    return match.group(1)


async def sign_in(http: httpx.AsyncClient, key: str) -> httpx.Response:
    page = await http.get("/ui/signin")
    assert page.status_code == 200
    return await http.post("/ui/signin", data={"csrf": csrf_of(page.text), "key": key,
                                               "next": "/ui/"})


@pytest.fixture
async def keyed(store: MemoryStore) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(store, settings=store.settings.with_changes(api_keys=KEYS))
    async with client_for(app) as http:
        yield http


@pytest.fixture
async def open_ui(store: MemoryStore) -> AsyncIterator[httpx.AsyncClient]:
    """No keys configured: loopback access without sign-in."""
    async with client_for(create_app(store)) as http:
        yield http


async def test_sign_in_gives_a_signed_httponly_strict_cookie(keyed: httpx.AsyncClient,
                                                             store: MemoryStore) -> None:
    await store.remember(A, "fact", content="Ana is vegetarian")
    first = await keyed.get("/ui/agents/agent-a/memories")
    assert first.status_code == 303
    assert first.headers["location"].startswith("/ui/signin?next=")

    wrong = await sign_in(keyed, "not-a-configured-key-at-all")
    assert wrong.status_code == 401 and "Unknown API key" in wrong.text

    done = await sign_in(keyed, KEY_ALL)
    assert done.status_code == 303 and done.headers["location"] == "/ui/"
    cookie = done.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert "secure" not in cookie.lower()  # plain HTTP on loopback: a Secure cookie is lost
    assert KEY_ALL not in cookie
    page = await keyed.get("/ui/agents/agent-a/memories")
    assert page.status_code == 200 and "Ana is vegetarian" in page.text

    # a forged or altered cookie is no session
    value = keyed.cookies[COOKIE]
    body, _, signature = value.partition(".")
    keyed.cookies.set(COOKIE, f"{body}.{'0' * len(signature)}", domain="127.0.0.1",
                      path="/ui")
    assert (await keyed.get("/ui/agents/agent-a/memories")).status_code == 303


async def test_sign_in_without_the_form_token_is_refused(keyed: httpx.AsyncClient) -> None:
    await keyed.get("/ui/signin")
    refused = await keyed.post("/ui/signin", data={"key": KEY_ALL})
    assert refused.status_code == 403 and "Form expired" in refused.text
    forged = await keyed.post("/ui/signin", data={"key": KEY_ALL, "csrf": "guessed"})
    assert forged.status_code == 403
    assert (await keyed.get("/ui/")).status_code == 303  # still signed out


async def test_the_cookie_is_secure_off_loopback(store: MemoryStore) -> None:
    app = create_app(store, settings=store.settings.with_changes(api_keys=KEYS))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="https://memory.example") as http:
        page = await http.get("/ui/signin")
        assert "secure" in page.headers["set-cookie"].lower()
        done = await http.post("/ui/signin", data={"csrf": csrf_of(page.text), "key": KEY_A})
        assert done.status_code == 303
        cookie = done.headers["set-cookie"].lower()
        assert "secure" in cookie and "httponly" in cookie and "path=/ui" in cookie


async def test_a_key_sees_only_its_agents(keyed: httpx.AsyncClient, store: MemoryStore) -> None:
    # the owner keeps secrets here (memories/guard.py): a code is the private marker
    await store.set_secrets_policy(B, "keep")
    secret = await store.remember(B, "fact", content="Agent B's door code is 4711")
    await store.remember(A, "fact", content="Agent A likes tea")
    assert (await sign_in(keyed, KEY_A)).status_code == 303
    agents = await keyed.get("/ui/")
    assert "agent-a" in agents.text and "agent-b" not in agents.text
    for url in ("/ui/agents/agent-b/memories", f"/ui/agents/agent-b/memories/{secret.id}",
                "/ui/agents/agent-b/conflicts", "/ui/agents/agent-b/operations",
                f"/ui/agents/agent-b/memories/{secret.id}/edit"):
        response = await keyed.get(url)
        assert response.status_code == 403, url
        assert "4711" not in response.text
    # another agent's id under the key's own agent is not found, not shown
    crossed = await keyed.get(f"/ui/agents/agent-a/memories/{secret.id}")
    assert crossed.status_code == 404 and "4711" not in crossed.text
    page = await keyed.get("/ui/agents/agent-a/memories")
    posted = await keyed.post(f"/ui/agents/agent-b/memories/{secret.id}/forget",
                              data={"csrf": csrf_of(page.text), "purge": "true"})
    assert posted.status_code == 403
    assert (await store.get(B, secret.id)).summary == "Agent B's door code is 4711"


async def test_without_keys_only_loopback_is_served(store: MemoryStore) -> None:
    await store.remember(A, "fact", content="Ana is vegetarian")
    app = create_app(store)
    async with client_for(app, host="203.0.113.9") as remote:
        response = await remote.get("/ui/agents/agent-a/memories")
        assert response.status_code == 403 and "vegetarian" not in response.text
    async with client_for(app) as local:
        response = await local.get("/ui/")
        assert response.status_code == 200 and "agent-a" in response.text
        assert "samesite=strict" in response.headers["set-cookie"].lower()
        # a page of another name that resolves to 127.0.0.1 (DNS rebinding) reads nothing
        rebound = await local.get("/ui/agents/agent-a/memories",
                                  headers={"host": "attacker.example"})
        assert rebound.status_code == 403 and "vegetarian" not in rebound.text
        assert (await local.get("/ui/", headers={"host": "localhost:8765"})).status_code == 200


async def test_forms_without_or_with_a_wrong_token_change_nothing(
        open_ui: httpx.AsyncClient, store: MemoryStore) -> None:
    fact = await store.remember(A, "fact", content="The sync is on Tuesdays")
    url = f"/ui/agents/agent-a/memories/{fact.id}"
    page = await open_ui.get(f"{url}/edit")
    token = csrf_of(page.text)
    for data in ({"content": "Changed"}, {"content": "Changed", "csrf": "forged-token"},
                 {"content": "Changed", "csrf": token + "x"}):
        refused = await open_ui.post(f"{url}/edit", data=data)
        assert refused.status_code == 403, data
    for path, data in ((f"{url}/forget", {"purge": "true"}), (f"{url}/restore", {}),
                       ("/ui/agents/agent-a/conflicts/resolve",
                        {"keep": str(fact.id), "other": str(fact.id),
                         "resolution": "keep_both"})):
        assert (await open_ui.post(path, data=data)).status_code == 403, path
    # a token from another browser's session is no good either
    async with client_for(create_app(store)) as other:
        other_token = csrf_of((await other.get(f"{url}/edit")).text)
    assert other_token != token
    assert (await open_ui.post(f"{url}/edit", data={"content": "Changed",
                                                    "csrf": other_token})).status_code == 403
    unchanged = await store.get(A, fact.id)
    assert unchanged.version == 1 and unchanged.summary == "The sync is on Tuesdays"
    full = await open_ui.get(f"{url}?full=1")
    assert full.status_code == 200 and "Full record" in full.text

    saved = await open_ui.post(f"{url}/edit", data={"content": "The sync moved to Wednesdays",
                                                    "csrf": token})
    assert saved.status_code == 303
    assert (await store.get(A, fact.id)).version == 2
    shown = await open_ui.get(saved.headers["location"])
    assert "Saved" in shown.text and "The sync moved to Wednesdays" in shown.text
    assert "The sync is on Tuesdays" in shown.text  # the old value, in the history


async def test_a_bad_edit_shows_the_stores_error_next_to_the_field(
        open_ui: httpx.AsyncClient, store: MemoryStore) -> None:
    decision = await store.remember(A, "decision", description="Use Postgres",
                                    confidence=0.5)
    url = f"/ui/agents/agent-a/memories/{decision.id}/edit"
    token = csrf_of((await open_ui.get(url)).text)
    bad = await open_ui.post(url, data={"csrf": token, "confidence": "1.5",
                                        "description": "   ", "importance": "lots"})
    assert bad.status_code == 422
    html = bad.text
    for field, reason in (("confidence", "must be at most 1"),
                          ("description", "must not be empty"),
                          ("importance", "valid number")):
        block = re.search(rf'<div class="field invalid">\s*<label for="f-{field}">.*?</div>',
                          html, re.S)
        assert block, f"{field} is not marked invalid"
        assert reason in unescape(block.group(0)), (field, block.group(0))
    assert 'value="1.5"' in html  # what was typed stays in the form
    assert (await store.get(A, decision.id)).version == 1


async def test_forget_and_purge_say_what_they_erase(open_ui: httpx.AsyncClient,
                                                    store: MemoryStore) -> None:
    fact = await store.remember(A, "fact", content="Ana's old phone number is 555-0100")
    url = f"/ui/agents/agent-a/memories/{fact.id}"
    confirm = await open_ui.get(f"{url}/forget")
    assert "hides it from recall" in confirm.text
    gone = await open_ui.post(f"{url}/forget", data={"csrf": csrf_of(confirm.text),
                                                     "purge": "false"})
    assert gone.status_code == 303
    assert (await store.get(A, fact.id, include_deleted=True)).status.value == "deleted"
    listing = await open_ui.get("/ui/agents/agent-a/memories")
    assert "555-0100" not in listing.text

    page = await open_ui.get(url)  # the undo of a forget sits beside Purge
    assert f'action="{url}/restore"' in page.text and ">Restore</button>" in page.text
    back = await open_ui.post(f"{url}/restore", data={"csrf": csrf_of(page.text)})
    assert back.status_code == 303 and "undeleted-restored" in back.headers["location"]
    shown = await open_ui.get(back.headers["location"])
    assert "Restored: back in recall" in shown.text and ">Restore</button>" not in shown.text
    assert (await store.get(A, fact.id)).status.value == "active"
    assert (await store.history(A, fact.id))[-1].actor == "inspector"
    assert "555-0100" in (await open_ui.get("/ui/agents/agent-a/memories")).text

    purge = await open_ui.get(f"{url}/forget?purge=true")
    assert "erases for good" in purge.text and "history keeps only" in purge.text
    done = await open_ui.post(f"{url}/forget", data={"csrf": csrf_of(purge.text),
                                                     "purge": "true"})
    assert done.status_code == 200 and "Purged" in done.text
    assert (await open_ui.get(url)).status_code == 404


async def test_errors_are_pages(open_ui: httpx.AsyncClient) -> None:
    missing = await open_ui.get("/ui/agents/agent-a/memories/6f1c1f2e-0000-4000-8000-000000000000")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    bad_id = await open_ui.get("/ui/agents/agent-a/memories/not-an-id")
    assert bad_id.status_code == 422 and "memory_id" in bad_id.text
    bad_cursor = await open_ui.get("/ui/agents/agent-a/memories?cursor=forged")
    assert bad_cursor.status_code == 422 and "cursor" in bad_cursor.text
    bad_seq = await open_ui.get(
        "/ui/agents/agent-a/episodes/6f1c1f2e-0000-4000-8000-000000000000?from_seq=x")
    assert bad_seq.status_code == 422 and "from_seq" in bad_seq.text
    not_a_form = await open_ui.post("/ui/agents/agent-a/conflicts/resolve", json={"a": 1})
    assert not_a_form.status_code == 415
    page = await open_ui.get("/ui/")
    assert "script" not in page.text.lower()
    assert "default-src 'none'" in page.headers["content-security-policy"]
    css = await open_ui.get("/ui/static/inspector.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert "http" not in css.text  # nothing fetched from elsewhere


async def test_filters_search_and_paging(open_ui: httpx.AsyncClient, store: MemoryStore) -> None:
    await store.remember_many(A, [
        {"kind": "fact", "content": f"Reading list item {i}", "tags": ["books"] if i % 2 else []}
        for i in range(60)] + [{"kind": "decision", "description": "Chose Postgres"}])
    first = await open_ui.get("/ui/agents/agent-a/memories?kind=fact")
    assert first.text.count('class="card"') == 50 and "Chose Postgres" not in first.text
    following = re.search(r'rel="next" href="([^"]+)"', first.text)
    assert following
    second = await open_ui.get("/ui/agents/agent-a/memories" + unescape(following.group(1)))
    assert second.text.count('class="card"') == 10
    tagged = await open_ui.get("/ui/agents/agent-a/memories?tag=books")
    assert tagged.text.count('class="card"') == 30
    bad_tag = await open_ui.get("/ui/agents/agent-a/memories?tag=" + "x" * 65)
    assert bad_tag.status_code == 422 and "tag" in bad_tag.text
    found = await open_ui.get("/ui/agents/agent-a/memories?q=which+database+did+we+choose")
    assert found.status_code == 200
    assert re.search(r"cosine 0\.\d{3}", found.text)
    assert found.text.index("Chose Postgres") < found.text.index("Reading list item")


async def test_conflict_queue_resolves_through_the_page(open_ui: httpx.AsyncClient,
                                                        store: MemoryStore) -> None:
    await store.learn_fact(A, "Tim's manager is Priya")
    flagged = await store.learn_fact(A, "Tim's manager is Daniel")
    assert flagged.related, "the value rule should keep both and flag them"
    page = await open_ui.get("/ui/agents/agent-a/conflicts")
    assert "Tim&#39;s manager is Priya" in page.text and "Daniel" in page.text
    assert flagged.fact is not None
    cards = (await open_ui.get("/ui/agents/agent-a/memories?kind=fact")).text
    assert cards.count('class="chip conflict"') == 2  # both list cards say so
    done = await open_ui.post("/ui/agents/agent-a/conflicts/resolve", data={
        "csrf": csrf_of(page.text), "keep": str(flagged.fact.id),
        "other": str(flagged.related[0]), "resolution": "keep_one"})
    assert done.status_code == 303
    assert (await store.get(A, flagged.related[0])).status.value == "superseded"
    after = await open_ui.get(done.headers["location"])
    assert "Kept one fact" in after.text and "Nothing to review" in after.text
    cards = (await open_ui.get("/ui/agents/agent-a/memories?kind=fact")).text
    assert 'class="chip conflict"' not in cards


async def test_episode_and_operations_pages(open_ui: httpx.AsyncClient,
                                            store: MemoryStore) -> None:
    episode = await store.start_episode(A, title="Trip planning")
    await store.append(A, episode.id, [
        {"role": "user", "name": "Ana", "content": f"Message number {i}"} for i in range(130)])
    learned = await store.learn_fact(A, "Ana wants to see Porto in spring",
                                     source_episode_id=episode.id, source_kind="extracted")
    assert learned.fact is not None
    first = await open_ui.get(f"/ui/agents/agent-a/episodes/{episode.id}")
    assert first.status_code == 200
    learned_part = first.text.split("Learned from it", 1)[1].split("Transcript", 1)[0]
    assert "Ana wants to see Porto in spring" in learned_part
    fact_page = await open_ui.get(f"/ui/agents/agent-a/memories/{learned.fact.id}?full=1")
    assert "Source episode" in fact_page.text and "Transcript excerpt" in fact_page.text
    assert "Message number 0" in first.text and "Message number 99<" in first.text
    assert "Message number 100" not in first.text
    later = await open_ui.get(f"/ui/agents/agent-a/episodes/{episode.id}?from_seq=100")
    assert "Message number 129" in later.text and "Message number 99<" not in later.text
    listing = await open_ui.get("/ui/agents/agent-a/episodes")
    assert "Trip planning" in listing.text
    chat = await store.start_episode(A, title="Lunch")
    await store.append(A, chat.id, [{"role": "user", "name": "Ana",
                                     "content": "I moved to Lisbon last year."}])
    await store.close_episode(A, chat.id)
    ops = await open_ui.get("/ui/agents/agent-a/operations")
    assert ops.status_code == 200 and "Work queue" in ops.text
    assert "Maintenance job runs" in ops.text
    counts = ops.text.split('<table class="queue-counts">', 1)[1].split("</table>", 1)[0]
    assert "<td>episode_close</td><td>pending</td>" in counts  # a table, not a chip of JSON
    await store.worker().drain()  # no LLM: the rule extractor learns what Ana said
    closed = await open_ui.get(f"/ui/agents/agent-a/episodes/{chat.id}")
    assert "facts by rules (no LLM)" in closed.text and "not_extracted" not in closed.text
    assert "Ana moved to Lisbon" in closed.text.split("Learned from it", 1)[1]


async def test_export_import_and_forget_an_agent_from_the_page(
        open_ui: httpx.AsyncClient, store: MemoryStore) -> None:
    await store.remember_many(A, [{"kind": "fact", "content": "Ana is vegetarian"},
                                  {"kind": "decision", "description": "Chose Postgres"}])
    await store.remember(B, "fact", content="B keeps this")
    page = await open_ui.get("/ui/agents/agent-a/data")
    token = csrf_of(page.text)
    exported = await open_ui.get("/ui/agents/agent-a/export")
    assert exported.status_code == 200
    assert "attachment" in exported.headers["content-disposition"]
    data = exported.content
    assert b"Ana is vegetarian" in data
    assert (await open_ui.get("/ui/agents/nobody/export")).status_code == 404

    upload = {"file": ("agent-a.jsonl", data, "application/x-ndjson")}
    refused = await open_ui.post("/ui/agents/agent-c/import", files=upload)
    assert refused.status_code == 403
    assert (await store.list("agent-c")).items == []
    done = await open_ui.post("/ui/agents/agent-c/import", files=upload,
                              data={"csrf": token})
    assert done.status_code == 200, done.text
    assert "into <strong>agent-c</strong>" in done.text
    assert sorted(m.summary for m in (await store.list("agent-c")).items) == [
        "Ana is vegetarian", "Chose Postgres"]
    again = await open_ui.post("/ui/agents/agent-c/import", files=upload,
                               data={"csrf": token})
    assert "nothing changed" in again.text
    damaged = data[: len(data) // 2]
    broken = await open_ui.post("/ui/agents/agent-d/import", data={"csrf": token},
                                files={"file": ("a.jsonl", damaged, "application/x-ndjson")})
    assert broken.status_code == 422 and "line" in broken.text
    assert (await store.list("agent-d")).items == []

    wrong = await open_ui.post("/ui/agents/agent-a/forget-agent",
                               data={"csrf": token, "confirm": "agent-x"})
    assert wrong.status_code == 422 and "confirm" in wrong.text
    assert (await open_ui.post("/ui/agents/agent-a/forget-agent",
                               data={"confirm": A})).status_code == 403
    assert len((await store.list(A)).items) == 2
    erased = await open_ui.post("/ui/agents/agent-a/forget-agent",
                                data={"csrf": token, "confirm": A})
    assert erased.status_code == 200 and "Agent forgotten" in erased.text
    assert (await store.list(A)).items == []
    assert [m.summary for m in (await store.list(B)).items] == ["B keeps this"]
    agents = await open_ui.get("/ui/")
    assert "agent-a<" not in agents.text and "agent-b" in agents.text


async def test_cold_storage_shown_restored_and_guarded(open_ui: httpx.AsyncClient,
                                                       store: MemoryStore) -> None:
    ended = datetime.now(UTC) - timedelta(days=120)
    episode = await store.remember(A, "episode", title="Kitchen renovation",
                                   detail="We compared three quotes for the kitchen. " * 80,
                                   started_at=(ended - timedelta(hours=2)).isoformat(),
                                   ended_at=ended.isoformat())
    await store.archive_episodes(A, ended_before=ended + timedelta(seconds=1))
    url = f"/ui/agents/agent-a/memories/{episode.id}"
    full = await open_ui.get(f"{url}?full=1")
    assert "In cold storage" in full.text and "put back together from cold storage" in full.text
    assert full.text.count("We compared three quotes") >= 80  # the whole detail, restored
    edit = await open_ui.get(f"{url}/edit")
    refused = await open_ui.post(f"{url}/edit", data={"csrf": csrf_of(edit.text),
                                                      "detail": "Rewritten"})
    assert refused.status_code == 409 and "restore it before editing" in refused.text
    restored = await open_ui.post(f"{url}/restore", data={"csrf": csrf_of(full.text)})
    assert restored.status_code == 303
    page = await open_ui.get(restored.headers["location"])
    assert "Restored from cold storage" in page.text
    assert (await store.get(A, episode.id)).episode.storage.value == "restored"


async def test_agents_are_paged(open_ui: httpx.AsyncClient, store: MemoryStore,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ag-1", "ag-2", "ag-3"):
        await store.remember(name, "fact", content=f"{name} holds a fact")
    assert await store.agents(limit=2) == ["ag-1", "ag-2"]
    assert await store.agents(after="ag-2") == ["ag-3"]
    monkeypatch.setattr(agents, "AGENTS_PAGE", 2)
    first = await open_ui.get("/ui/")
    assert ">ag-1<" in first.text and ">ag-2<" in first.text and ">ag-3<" not in first.text
    following = re.search(r'rel="next" href="([^"]+)"', first.text)
    assert following
    second = await open_ui.get(unescape(following.group(1)))
    assert ">ag-3<" in second.text and ">ag-1<" not in second.text


async def test_a_session_ends_with_its_key(store: MemoryStore) -> None:
    await store.remember(A, "fact", content="Ana is vegetarian")
    before = create_app(store, settings=store.settings.with_changes(api_keys=KEYS))
    after = create_app(store, settings=store.settings.with_changes(api_keys=KEY_ALL))
    async with client_for(before) as first:
        assert (await sign_in(first, KEY_A)).status_code == 303
        assert (await first.get("/ui/agents/agent-a/memories")).status_code == 200
        cookies = first.cookies
    async with client_for(after) as second:
        second.cookies = cookies  # the same browser, after KEY_A left the configuration
        assert (await second.get("/ui/agents/agent-a/memories")).status_code == 303


async def test_an_import_over_the_limit_is_refused(store: MemoryStore) -> None:
    app = create_app(store, settings=store.settings.with_changes(api_import_max_bytes=2000))
    async with client_for(app) as http:
        token = csrf_of((await http.get("/ui/agents/agent-a/data")).text)
        big = await http.post("/ui/agents/agent-a/import", data={"csrf": token},
                              files={"file": ("a.jsonl", b"x" * 5000, "application/x-ndjson")})
        assert big.status_code == 413
        small = await http.post("/ui/agents/agent-a/import", data={"csrf": token},
                                files={"file": ("a.jsonl", b"{}\n", "application/x-ndjson")})
        assert small.status_code == 422 and "line 1" in small.text


async def test_the_owner_sees_by_person(open_ui: httpx.AsyncClient, store: MemoryStore) -> None:
    await store.learn_fact(A, "I am allergic to penicillin.", user="ana")
    await store.learn_fact(A, "I play the cello on Sundays.", user="ben")
    await store.learn_fact(A, "Our wifi network is called Otter.")
    everyone = await open_ui.get("/ui/agents/agent-a/memories")
    assert all(w in everyone.text for w in ("penicillin", "cello", "Otter"))
    assert '<option value="ana">' in everyone.text and '<option value="ben">' in everyone.text
    ana = await open_ui.get("/ui/agents/agent-a/memories?person=ana")
    assert "penicillin" in ana.text and "Otter" in ana.text and "cello" not in ana.text
    assert '<option value="ana" selected>' in ana.text
    found = await open_ui.get("/ui/agents/agent-a/memories?person=ben&q=allergic+penicillin")
    assert "penicillin" not in found.text.split("<ol", 1)[-1]
    bad = await open_ui.get("/ui/agents/agent-a/memories?person=%01")
    assert bad.status_code == 422 and "user" in bad.text


async def test_forget_a_message_from_the_episode_page(open_ui: httpx.AsyncClient,
                                                     store: MemoryStore) -> None:
    episode = await store.start_episode(A)
    await store.append(A, episode.id, [{"role": "user", "content": "The alarm code is 9921."},
                                       {"role": "user", "content": "Zanzibar is my cat."}])
    await store.set_secrets_policy(A, "keep")
    await store.edit_message(A, episode.id, 0, "The old alarm code was Ocelot-7.")
    url = f"/ui/agents/agent-a/episodes/{episode.id}/messages/0/forget"
    confirm = await open_ui.get(url)
    assert "Ocelot-7" in confirm.text and "erases for good" in confirm.text
    empty = await open_ui.post(url, data={"csrf": csrf_of(confirm.text), "whole": "false",
                                          "redact": " "})
    assert empty.status_code == 422 and "Nothing to redact" in empty.text
    missing = await open_ui.post(url, data={"csrf": csrf_of(confirm.text), "whole": "false",
                                            "redact": "Lynx"})
    assert missing.status_code == 422 and "not in the message" in missing.text
    forged = await open_ui.post(url, data={"csrf": "nope", "whole": "true"})
    assert forged.status_code == 403
    done = await open_ui.post(url, data={"csrf": csrf_of(confirm.text), "whole": "false",
                                         "redact": "Ocelot-7"})
    assert done.status_code == 303 and done.headers["location"].endswith("?forgot=0")
    shown = await open_ui.get(done.headers["location"])
    assert "Message #0 and every trace of it were forgotten" in shown.text
    said = await store.transcript(A, episode.id)
    assert said[0].content == "The old alarm code was [redacted]."
    assert (await store.history(A, episode.id))[-1].actor == "inspector"
    assert (await open_ui.get(url.replace("/0/", "/7/"))).status_code == 404
