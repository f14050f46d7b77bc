"""The web UI in a real Chromium (Debian's, driven by Playwright) against uvicorn on loopback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from app.settings import ROOT

ARTIFACTS = ROOT / "test-artifacts" / "screenshots"
KV = "(WorkerDict pid=48211, ip=10.0.3.7) ValueError: No available memory for the cache blocks."
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB"
WATCHDOG = (
    "[rank0]:[E419 10:42:28.858931807 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout"
)


def _chromium() -> str | None:
    return os.environ.get("KB_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    executable = _chromium()
    if not executable:
        pytest.skip("Debian's chromium is not installed (CI installs it and requires these tests)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-quic",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], f"JavaScript errors: {errors}"


def shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def test_slash_focuses_search_and_typing_shows_results(page):
    page.goto("/")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "site-q"
    page.keyboard.type("watchdog", delay=30)
    hit = page.locator("#live-results .hit").first
    hit.wait_for(timeout=5000)
    assert "DIST-901" in hit.inner_text()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_url("**/errors/DIST-901")
    shot(page, "search-as-you-type-result")


def test_paste_flow_finds_the_root_cause(page):
    page.goto("/paste")
    page.fill("#paste-text", "\n".join([WATCHDOG, f"[rank3]: {OOM}", WATCHDOG.replace("rank0", "rank5")]))
    page.click("form.paste-box button[type=submit]")
    root = page.locator("article.match.root")
    root.wait_for()
    assert "TRAIN-901" in root.inner_text()
    assert "CUDA out of memory" in page.locator("article.match.root pre.context mark").inner_text()
    cascade = page.locator("article#match-DIST-901")
    assert "consequence" in cascade.inner_text().lower()
    shot(page, "paste-diagnosis")


def test_vote_click_updates_counts_in_place(page):
    page.goto("/errors/ROLL-901")
    fix = page.locator("#fix-raise-gpu-memory-utilization")
    assert fix.locator("[data-up]").inner_text() == "0"
    fix.locator("button.yes").click()
    # a locator assertion polls without eval(), which the page's CSP forbids
    expect(fix.locator("[data-up]")).to_have_text("1")
    expect(fix.locator(".vote-status")).to_contain_text("Vote recorded")
    page.reload()
    assert page.locator("#fix-raise-gpu-memory-utilization [data-up]").inner_text() == "1"
    shot(page, "entry-after-vote")


def test_vote_without_javascript_posts_the_form(browser, live_server):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    page.goto("/errors/ROLL-901")
    page.locator("#fix-raise-gpu-memory-utilization button.no").click()
    page.wait_for_url("**/errors/ROLL-901?voted=raise-gpu-memory-utilization#fix-raise-gpu-memory-utilization")
    assert page.locator("#fix-raise-gpu-memory-utilization [data-down]").inner_text() == "1"
    context.close()


def test_language_toggle_switches_text_and_is_remembered(page):
    page.goto("/errors/ROLL-901")
    assert "Why it happens" in page.inner_text("main")
    page.click("a[data-lang-toggle]")
    page.wait_for_url("**lang=zh")
    assert "为什么会这样" in page.inner_text("main")
    page.goto("/errors/TRAIN-901")
    assert "为什么会这样" in page.inner_text("main")  # the choice stays in a cookie
    shot(page, "entry-zh")


@pytest.mark.parametrize(
    "path,name",
    [("/", "home"), ("/errors", "browse"), ("/search?q=memory", "search"), ("/errors/NOPE-001", "not-found")],
)
def test_pages_render_in_light_and_dark(browser, live_server, path, name):
    for scheme in ("light", "dark"):
        context = browser.new_context(
            base_url=live_server.url, color_scheme=scheme, viewport={"width": 390, "height": 844}
        )
        page = context.new_page()
        response = page.goto(path)
        assert response.status == (404 if name == "not-found" else 200)
        shot(page, f"{name}-{scheme}-phone")
        context.close()


def test_this_is_not_my_error_is_one_click_on_the_paste_page(page):
    page.goto("/paste")
    page.fill("#paste-text", KV)
    page.click("form.paste-box button[type=submit]")
    page.locator("article.match.root").wait_for()
    page.click("article#match-ROLL-901 form.not-mine button")
    expect(page.locator("p[role=status]")).to_contain_text("ROLL-901 was not your error")
    shot(page, "not-my-error-recorded")


DROP_OR_PASTE = """([data, how]) => {
  const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
  const files = new DataTransfer();
  files.items.add(new File([bytes], "screenshot.png", { type: "image/png" }));
  const box = document.querySelector("#paste-text");
  const event = how === "paste"
    ? new ClipboardEvent("paste", { clipboardData: files, bubbles: true, cancelable: true })
    : new DragEvent("drop", { dataTransfer: files, bubbles: true, cancelable: true });
  box.dispatchEvent(event);
}"""


@pytest.mark.parametrize("how", ["paste", "drop"])
def test_screenshot_pasted_or_dropped_gets_the_entry_of_its_text(page, how):
    import base64

    from tests.test_ocr import KV_MESSAGE, screenshot

    image = base64.b64encode(screenshot("dark-14")).decode()
    page.goto("/paste")
    with page.expect_navigation(timeout=120_000):
        page.evaluate(DROP_OR_PASTE, [image, how])
    expect(page.locator("article.match").first).to_have_attribute("data-code", "ROLL-901")
    expect(page.locator(".ocr-note")).to_be_visible()
    assert KV_MESSAGE in page.locator("#paste-text").input_value()
    shot(page, f"paste-screenshot-{how}")
    # the text read stays editable: diagnosing it again as text gives the same entry
    page.get_by_role("button", name="Diagnose").click()
    expect(page.locator("article.match").first).to_have_attribute("data-code", "ROLL-901")
    expect(page.locator(".ocr-note")).to_have_count(0)


KV_TITLE_ZH = "测试条目：vLLM KV cache 预算"


def test_first_visit_follows_the_browsers_chinese(browser, live_server):
    context = browser.new_context(base_url=live_server.url, locale="zh-CN")  # sends Accept-Language: zh-CN
    page = context.new_page()
    page.goto("/")
    assert page.get_attribute("html", "lang") == "zh-CN"
    assert "粘贴日志" in page.inner_text("header.site nav")
    page.goto("/errors/ROLL-901")
    assert "为什么会这样" in page.inner_text("main")
    shot(page, "first-visit-zh")
    context.close()


def test_language_switch_sticks_over_the_browsers_language(browser, live_server):
    context = browser.new_context(base_url=live_server.url, locale="zh-CN")
    page = context.new_page()
    page.goto("/errors")
    assert "全部条目" in page.inner_text("main")
    page.click("header.site a[data-lang-toggle]")
    page.wait_for_url("**lang=en")
    assert "All entries" in page.inner_text("main")
    page.goto("/errors/ROLL-901")  # the header still asks for Chinese; the choice wins
    assert page.get_attribute("html", "lang") == "en" and "Why it happens" in page.inner_text("main")
    other = context.new_page()
    other.goto("/")
    assert "Paste a log" in other.inner_text("header.site nav")
    context.close()


def test_chinese_query_shows_chinese_titles_in_an_english_ui(page):
    page.goto("/")
    page.fill("#site-q", "")
    page.click("#site-q")
    page.keyboard.type("显存", delay=30)
    hit = page.locator("#live-results .hit").first
    hit.wait_for(timeout=5000)
    assert KV_TITLE_ZH in page.inner_text("#live-results")
    page.keyboard.press("Enter")
    page.wait_for_url("**/search?q=*")
    assert KV_TITLE_ZH in page.inner_text("main ol.hits")
    assert page.get_attribute("html", "lang") == "en" and "Search" in page.inner_text("main h1")
    shot(page, "search-chinese-query")
