"""The inspector in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by selenium) against ``nous-memory serve`` on loopback with
API keys configured.  One server and one browser for the module; screenshots of the
main screens go to the test's temporary folder (printed with ``-s``).

Under ``CI=true`` a missing browser fails these tests; elsewhere they skip and say how
to install it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nous_memory import Embedder, MemoryStore
from nous_memory.db import EmbeddedServer
from nous_memory.llm import CallOutcome, LLMCall, PostgresCallRecorder
from tests.conftest import create_database, drop_database
from tests.integration.http_helpers import free_port, start_server, stop_server, wait_healthy

KEY = "browser-test-key-0123456789"
AGENT = "assistant-1"
INSTALL = "sudo apt-get install -y chromium chromium-driver"

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
if CHROMIUM is None or DRIVER is None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and no headless Chromium: {INSTALL}", pytrace=False)
    pytest.skip(f"browser tests need Chromium and its driver: {INSTALL}",
                allow_module_level=True)

from selenium import webdriver  # noqa: E402 - only once the browser is known to exist
from selenium.common.exceptions import (  # noqa: E402
    StaleElementReferenceException,
    WebDriverException,
)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@dataclass
class Site:
    base: str
    ids: dict[str, str]
    screens: Path


@pytest.fixture(scope="module")
async def site(pg_server: EmbeddedServer, template_db: str, embedder: Embedder,
               tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    dsn = await create_database(pg_server, template_db)
    async with MemoryStore.open(database_url=dsn, embedder=embedder,
                                data_dir=Path("/nonexistent-unused")) as store:
        made = await store.remember_many(AGENT, [
            {"kind": "fact", "content": "Ana is vegetarian", "subject": "Ana",
             "category": "preference", "tags": ["food"]},
            {"kind": "fact", "content": "Ana's old phone number is 555-0100"},
            {"kind": "decision", "description": "Chose Postgres + pgvector for storage",
             "outcome": "success", "confidence": 0.85, "pattern": "Unify storage"},
            {"kind": "censor", "trigger_pattern": "drop table", "action": "block",
             "reason": "production data is never dropped by hand"}])
        await store.learn_fact(AGENT, "Tim's manager is Priya")
        await store.learn_fact(AGENT, "Tim's manager is Daniel")
        episode = await store.start_episode(AGENT, title="Planning the Porto trip",
                                            participants=["Ana", "assistant"])
        await store.append(AGENT, episode.id, [
            {"role": "user" if i % 2 == 0 else "assistant", "name": "Ana" if i % 2 == 0
             else None, "content": f"Day {i}: we visit Porto at {i % 12 + 8} am."}
            for i in range(140)])
        closed = await store.start_episode(AGENT, title="A short chat")
        await store.append(AGENT, closed.id, [{"role": "user", "content": "Hello there"}])
        await store.close_episode(AGENT, closed.id)  # a work item waits for the worker
        recorder = PostgresCallRecorder(store._db)
        for outcome in (CallOutcome.OK, CallOutcome.RATE_LIMITED):
            await recorder.record(LLMCall(
                agent_id=AGENT, purpose="episode_close", model="scripted",
                prompt_tokens=1200 if outcome.answered else 0,
                completion_tokens=180 if outcome.answered else 0, tokens_estimated=False,
                latency_ms=900, outcome=outcome, error=None if outcome.answered else "429",
                created_at=datetime.now(UTC)))
        await store.remember("other-agent", "fact", content="The other agent's secret")
    ids = {"vegetarian": str(made[0].id), "phone": str(made[1].id),
           "decision": str(made[2].id), "episode": str(episode.id)}
    port = free_port()
    env = {**os.environ, "NOUS_MEMORY_DATABASE_URL": dsn, "HF_HUB_OFFLINE": "1",
           "NOUS_MEMORY_RUN_WORKER_IN_SERVE": "false",
           "NOUS_MEMORY_API_KEYS": f"{KEY}:{AGENT}"}
    proc = await asyncio.to_thread(start_server, port, env)
    base = f"http://127.0.0.1:{port}"
    try:
        await asyncio.to_thread(wait_healthy, base, proc)
        yield Site(base=base, ids=ids, screens=tmp_path_factory.mktemp("screens"))
    finally:
        await asyncio.to_thread(stop_server, proc)
        await drop_database(pg_server, dsn)


@pytest.fixture(scope="module")
def browser(site: Site) -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,900", "--disable-extensions", "--no-first-run"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER or ""), options=options)
    driver.implicitly_wait(5)
    print(f"\nscreenshots: {site.screens}")
    try:
        yield driver
    finally:
        driver.quit()


def shot(browser: WebDriver, site: Site, name: str) -> None:
    """A full-page screenshot (the window grown to the page's height)."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    width = browser.get_window_size()["width"]
    browser.set_window_size(width, min(max(int(height) + 120, 600), 4000))
    browser.save_screenshot(str(site.screens / f"{name}.png"))
    browser.set_window_size(width, 900)


def text_of(browser: WebDriver) -> str:
    return str(browser.find_element(By.TAG_NAME, "body").text)


def submit(browser: WebDriver, css: str) -> None:
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, css))


def click_and_wait(browser: WebDriver, button: WebElement) -> None:
    """Click a form's button and wait for the page it leads to."""
    old = browser.find_element(By.TAG_NAME, "html")
    button.click()
    WebDriverWait(browser, 10).until(lambda b: not _attached(old))


def _attached(element: WebElement) -> bool:
    try:
        element.is_enabled()
    except StaleElementReferenceException:  # the old page is gone
        return False
    except WebDriverException as exc:  # Chromium, mid-navigation, says it its own way
        if "does not belong to the document" in (exc.msg or ""):
            return False
        raise
    return True


def test_sign_in_search_open_and_edit(browser: WebDriver, site: Site) -> None:
    browser.get(f"{site.base}/ui/agents/{AGENT}/memories")
    assert "/ui/signin" in browser.current_url
    shot(browser, site, "01-signin")
    browser.find_element(By.ID, "key").send_keys(KEY)
    submit(browser, "form[action='/ui/signin'] button")
    assert browser.current_url.endswith(f"/ui/agents/{AGENT}/memories")
    cookie = browser.get_cookie("nous_inspector")
    assert cookie is not None and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    shot(browser, site, "02-memories")

    browser.get(f"{site.base}/ui/")
    page = text_of(browser)
    assert AGENT in page and "other-agent" not in page  # the key sees only its agent
    shot(browser, site, "03-agents")

    browser.get(f"{site.base}/ui/agents/{AGENT}/memories")
    search = browser.find_element(By.NAME, "q")
    search.send_keys("what does Ana eat?")
    submit(browser, "form.filters button")
    results = browser.find_elements(By.CSS_SELECTOR, "ol.results li.card")
    assert results and "Ana is vegetarian" in results[0].text
    assert "cosine 0." in results[0].text
    shot(browser, site, "04-search")

    click_and_wait(browser, results[0].find_element(By.TAG_NAME, "a"))
    assert browser.current_url.endswith(site.ids["vegetarian"])
    shot(browser, site, "05-memory")
    click_and_wait(browser, browser.find_element(By.LINK_TEXT, "Edit"))
    content = browser.find_element(By.ID, "f-content")
    content.clear()
    content.send_keys("Ana is vegan")
    shot(browser, site, "06-edit")
    submit(browser, "form.edit button[type=submit]")
    page = text_of(browser)
    assert "Saved: a new version is in the history" in page
    history = browser.find_element(By.CSS_SELECTOR, "ol.events").text
    assert "updated" in history and "Ana is vegetarian" in history and "Ana is vegan" in history
    updated = browser.find_elements(By.CSS_SELECTOR, "ol.events > li")[-1]
    assert updated.find_element(By.CSS_SELECTOR, "td.old").text == "Ana is vegetarian"
    assert updated.find_element(By.CSS_SELECTOR, "td.new").text == "Ana is vegan"
    shot(browser, site, "07-edited")


def test_a_bad_edit_shows_its_error_next_to_the_field(browser: WebDriver, site: Site) -> None:
    browser.get(f"{site.base}/ui/agents/{AGENT}/memories/{site.ids['decision']}/edit")
    confidence = browser.find_element(By.ID, "f-confidence")
    confidence.clear()
    confidence.send_keys("1.5")
    submit(browser, "form.edit button[type=submit]")
    field = browser.find_element(By.CSS_SELECTOR, "div.field.invalid")
    assert field.find_element(By.TAG_NAME, "label").text == "confidence"
    assert "must be at most 1" in field.find_element(By.CSS_SELECTOR,
                                                            ".field-error").text
    assert browser.find_element(By.ID, "f-confidence").get_attribute("value") == "1.5"
    shot(browser, site, "08-bad-edit")


def test_resolve_a_conflict(browser: WebDriver, site: Site) -> None:
    browser.get(f"{site.base}/ui/agents/{AGENT}/conflicts")
    pair = browser.find_element(By.CSS_SELECTOR, "section.pair")
    assert "Priya" in pair.text and "Daniel" in pair.text
    shot(browser, site, "09-conflicts")
    side = next(s for s in pair.find_elements(By.CSS_SELECTOR, ".side") if "Daniel" in s.text)
    click_and_wait(browser, side.find_element(By.CSS_SELECTOR, "button[value=keep_one]"))
    page = text_of(browser)
    assert "Kept one fact" in page and "Nothing to review" in page
    browser.get(f"{site.base}/ui/agents/{AGENT}/memories?q=Tim%27s+manager&status=superseded")
    assert "Priya" in text_of(browser)


def test_forget_a_memory(browser: WebDriver, site: Site) -> None:
    browser.get(f"{site.base}/ui/agents/{AGENT}/memories/{site.ids['phone']}")
    click_and_wait(browser, browser.find_element(By.LINK_TEXT, "Forget"))
    assert "hides it from recall" in text_of(browser)
    shot(browser, site, "10-forget")
    submit(browser, "form.actions button[type=submit]")
    assert "Forgotten" in text_of(browser)
    assert browser.find_element(By.CSS_SELECTOR, "h1 .status-deleted").text == "deleted"
    browser.get(f"{site.base}/ui/agents/{AGENT}/memories")
    assert "555-0100" not in text_of(browser)
    browser.get(f"{site.base}/ui/agents/{AGENT}/memories/{site.ids['phone']}")
    restore = browser.find_element(By.XPATH, "//div[@class='actions']//button[.='Restore']")
    purge = browser.find_element(By.LINK_TEXT, "Purge")  # the undo sits beside Purge
    assert restore.location["y"] == purge.location["y"]
    click_and_wait(browser, restore)
    assert "Restored: back in recall" in text_of(browser)
    assert browser.find_element(By.CSS_SELECTOR, "h1 .status-active").text == "active"
    browser.get(f"{site.base}/ui/agents/{AGENT}/memories")
    assert "555-0100" in text_of(browser)


@pytest.mark.parametrize(("path", "ready"), [
    ("/docs", ".opblock"),  # Swagger UI: one block per operation
    ("/redoc", "[data-section-id^='operation/']"),  # ReDoc: one section per operation
])
def test_api_docs_render_offline_from_the_package(browser: WebDriver, site: Site,
                                                  path: str, ready: str) -> None:
    browser.get(f"{site.base}{path}")
    WebDriverWait(browser, 30).until(
        lambda b: len(b.find_elements(By.CSS_SELECTOR, ready)) >= 20)
    page = text_of(browser)
    for operation in ("/agents/{agent_id}/memories/{memory_id}/restore",
                      "/agents/{agent_id}/recall"):
        assert operation in page or operation in browser.page_source, operation
    loaded = browser.execute_script("return performance.getEntriesByType('resource')"
                                    ".map(e => [e.name, e.initiatorType, e.transferSize])")
    assert any(name.startswith(f"{site.base}/docs/assets/") for name, _, _ in loaded)
    # ReDoc's bundle names a logo on its maker's CDN: the page's policy refuses it, so
    # it is the one other-origin entry, an image, and nothing was transferred
    others = [(name, kind, size) for name, kind, size in loaded
              if not name.startswith(site.base)]
    assert all(kind == "img" and size == 0 for _, kind, size in others), others
    shot(browser, site, f"16-{path.strip('/')}")


def test_episode_operations_and_a_phone(browser: WebDriver, site: Site) -> None:
    browser.get(f"{site.base}/ui/agents/{AGENT}/episodes/{site.ids['episode']}")
    page = text_of(browser)
    assert "Planning the Porto trip" in page and "140 messages" in page
    assert len(browser.find_elements(By.CSS_SELECTOR, "ol.transcript li")) == 100
    shot(browser, site, "11-episode")
    click_and_wait(browser, browser.find_element(By.LINK_TEXT, "Later messages"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "ol.transcript li")) == 40
    browser.get(f"{site.base}/ui/agents/{AGENT}/operations")
    page = text_of(browser)
    assert "episode_close" in page and "pending" in page and "1200" in page
    shot(browser, site, "12-operations")
    browser.get(f"{site.base}/ui/agents/{AGENT}/data")
    assert "Download the export" in text_of(browser)
    shot(browser, site, "13-data")
    browser.set_window_size(390, 844)  # a phone
    try:
        browser.get(f"{site.base}/ui/agents/{AGENT}/memories/{site.ids['vegetarian']}")
        wide = browser.execute_script(
            "return document.documentElement.scrollWidth > window.innerWidth + 1")
        assert not wide, "the memory page scrolls sideways on a phone"
        browser.save_screenshot(str(site.screens / "14-phone-memory.png"))
        browser.get(f"{site.base}/ui/agents/{AGENT}/conflicts")
        browser.save_screenshot(str(site.screens / "15-phone-conflicts.png"))
    finally:
        browser.set_window_size(1280, 900)


def test_forget_one_message_from_the_episode_page(browser: WebDriver, site: Site) -> None:
    page = f"{site.base}/ui/agents/{AGENT}/episodes/{site.ids['episode']}"
    browser.get(page)
    links = browser.find_elements(By.CSS_SELECTOR, "ol.transcript li a.forget")
    click_and_wait(browser, links[3])
    assert "Day 3: we visit Porto at 11 am." in text_of(browser)
    browser.find_element(By.ID, "redact").send_keys("11 am")
    shot(browser, site, "16-forget-message")
    submit(browser, "button[value=false]")
    shown = text_of(browser)
    assert "Message #3 and every trace of it were forgotten." in shown
    assert "Day 3: we visit Porto at [redacted]." in shown
    click_and_wait(browser, browser.find_elements(By.CSS_SELECTOR, "ol.transcript li a.forget")[5])
    submit(browser, "button[value=true]")
    shown = text_of(browser)
    assert "Day 5: we visit Porto" not in shown and "Day 6: we visit Porto" in shown
