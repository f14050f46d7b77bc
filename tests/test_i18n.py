"""Chinese readers: the UI catalogs, the language a page is shown in, Chinese results for Chinese queries."""

from __future__ import annotations

import gettext
import re

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from app.checker import check_content
from app.cli import cli
from app.ingest import ingest
from app.settings import ROOT
from app.web.locale import LOCALE_DIR, accepted_lang

PO = LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "messages.po"
POT = LOCALE_DIR / "messages.pot"
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
KV_TITLE_ZH = "测试条目：vLLM KV cache 预算"  # ROLL-901 of the fixture content
KV_TITLE = "Test entry for the vLLM KV-cache budget"
ZH_BROWSER = "zh-CN,zh;q=0.9,en;q=0.8"


def _catalog(path):
    with open(path, "rb") as handle:
        return read_po(handle)


def _ids(catalog) -> set:
    return {message.id for message in catalog if message.id}


def _extracted() -> set:
    """The msgids `make messages` would extract today (same method map as babel.cfg)."""
    method_map = [("app/web/**.py", "python"), ("templates/**.html", "jinja2")]
    options = {"templates/**.html": {"extensions": "jinja2.ext.i18n"}}
    found = set()
    for _file, _line, message, _comments, _context in extract_from_dir(ROOT, method_map, options):
        found.add(message if isinstance(message, str) else tuple(message))
    return found


def test_every_msgid_has_a_chinese_translation():
    untranslated = [
        message.id
        for message in _catalog(PO)
        if message.id
        and (message.fuzzy or not all(message.string if isinstance(message.string, tuple) else [message.string]))
    ]
    assert untranslated == []
    assert len(_ids(_catalog(PO))) > 100


def test_catalogs_and_templates_agree():
    extracted = _extracted()
    assert extracted - _ids(_catalog(POT)) == set(), "new UI strings: run `make messages` and translate them"
    assert _ids(_catalog(POT)) == _ids(_catalog(PO)) == extracted, "the catalogs hold strings no template uses"


def test_compiled_catalog_is_the_po():
    compiled = gettext.translation("messages", LOCALE_DIR, ["zh_CN"])
    for message in _catalog(PO):
        if not message.id:
            continue
        if isinstance(message.id, tuple):
            assert compiled.ngettext(*message.id, 2) == message.string[0]
        else:
            assert compiled.gettext(message.id) == message.string, "the .mo is stale: run `make messages`"


def test_templates_hold_no_chinese_text():
    """Chinese lives in the catalog; the one exception is the language switch naming Chinese in Chinese."""
    for path in sorted((ROOT / "templates").rglob("*.html")):
        text = path.read_text().replace(">中文</a>", "")
        assert not CJK.search(text), f"{path.name}: Chinese text outside the catalog"
        assert "if lang == 'zh' else" not in text, f"{path.name}: an inline language switch"


@pytest.mark.parametrize(
    "header,lang",
    [
        ("zh-CN,zh;q=0.9,en;q=0.8", "zh"),
        ("zh-TW", "zh"),
        ("zh", "zh"),
        ("zh-Hans-CN;q=1", "zh"),
        ("en-US,en;q=0.9,zh-CN;q=0.8", "en"),
        ("fr-FR,zh;q=0.5", "zh"),
        ("fr-FR,de", None),
        ("", None),
        (None, None),
        ("en;q=0.5,zh;q=0.6", "zh"),
        ("zh;q=0,en", "en"),
        ("zh;q=bad,en;q=0.1", "en"),
        ("*", None),
    ],
)
def test_accept_language_picks_the_preferred_supported_language(header, lang):
    assert accepted_lang(header) == lang


def test_first_visit_follows_accept_language(client):
    page = client.get("/", headers={"Accept-Language": ZH_BROWSER})
    assert '<html lang="zh-CN">' in page.text and "粘贴日志" in page.text
    english = client.get("/", headers={"Accept-Language": "en-US,en;q=0.9"})
    assert '<html lang="en">' in english.text and "Paste a log" in english.text
    assert "kb_lang" not in page.headers.get("set-cookie", "")  # a header is no choice: nothing to remember


def test_explicit_choice_sticks_and_wins_over_the_header(client):
    chosen = client.get("/errors/ROLL-901?lang=en", headers={"Accept-Language": ZH_BROWSER})
    assert "kb_lang=en" in chosen.headers["set-cookie"] and "Why it happens" in chosen.text
    later = client.get("/errors", headers={"Accept-Language": ZH_BROWSER})  # the client keeps the cookie
    assert '<html lang="en">' in later.text and "All entries" in later.text
    switched = client.get("/errors?lang=zh", headers={"Accept-Language": "en"})
    assert "全部条目" in switched.text
    assert "全部条目" in client.get("/errors", headers={"Accept-Language": "en"}).text


@pytest.mark.parametrize(
    "path",
    ["/", "/errors", "/errors/ROLL-901", "/errors/ROLL-901.md", "/search?q=memory", "/paste", "/errors/NOPE-001"],
)
def test_pages_that_follow_the_language_say_so_to_caches(client, path):
    response = client.get(path, headers={"Accept-Language": ZH_BROWSER})
    vary = {value.strip().lower() for value in response.headers["vary"].split(",")}
    assert {"accept-language", "cookie"} <= vary


def test_error_page_speaks_the_readers_language(client):
    page = client.get("/errors/NOPE-001", headers={"Accept-Language": ZH_BROWSER})
    assert page.status_code == 404 and "没有这个页面" in page.text


def test_plural_and_placeholders_render_in_both_languages(client):
    english = client.get("/search?q=memory&lang=en").text
    assert re.search(r"\b\d+ results?\b", english)
    chinese = client.get("/search?q=memory&lang=zh").text
    assert re.search(r"\d+ 条结果", chinese)
    reviewed = client.get("/errors/ROLL-901?lang=zh").text
    assert re.search(r"已对照 verl [\d.]+ 源码复核所有修复（[\d-]+，", reviewed)


def test_chinese_query_shows_chinese_titles_in_an_english_ui(client):
    page = client.get("/search?q=显存&lang=en")
    assert KV_TITLE_ZH in page.text and KV_TITLE not in page.text
    assert "Search" in page.text  # the UI itself stays English
    assert KV_TITLE in client.get("/search?q=memory&lang=en").text


def test_live_search_fragment_answers_a_chinese_query_in_chinese(client):
    assert KV_TITLE_ZH in client.get("/search?fragment=1&q=显存", headers={"Accept-Language": "en"}).text


def test_api_search_adds_chinese_fields_without_changing_title(client):
    body = client.get("/api/v1/search", params={"q": "显存"}).json()
    hit = next(hit for hit in body["hits"] if hit["code"] == "ROLL-901")
    assert hit["title"] == KV_TITLE  # `title` follows lang (default en), as before
    assert hit["title_zh"] == KV_TITLE_ZH and CJK.search(hit["summary_zh"])
    assert client.get("/api/v1/search", params={"q": "显存", "lang": "zh"}).json()["hits"][0]["title"] != KV_TITLE


def test_chinese_paste_gets_chinese_suggestions_in_an_english_ui(client):
    page = client.post("/paste?lang=en", data={"text": "rollout 的时候显存不够，cache 块分配失败"})
    assert page.status_code == 200
    assert KV_TITLE_ZH in page.text and "Paste a traceback or log" in page.text


def test_an_english_traceback_with_a_chinese_path_keeps_the_english_ui(client):
    """Only a paste whose words are mostly Chinese switches the titles; a Chinese folder name does not."""
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/home/用户/训练/run.py", line 3, in <module>\n'
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
        "when initializing the engine.\n"
    )
    page = client.post("/paste?lang=en", data={"text": traceback})
    assert page.status_code == 200
    assert KV_TITLE_ZH not in page.text


def test_empty_paste_is_refused_in_the_readers_language(client):
    page = client.post("/paste", data={"text": " "}, headers={"Accept-Language": ZH_BROWSER})
    assert page.status_code == 422 and "请先粘贴" in page.text


def test_kb_search_lists_chinese_titles_for_a_chinese_query(runner, settings):
    ingest(settings)
    env = {
        "KB_DATA_DIR": str(settings.data_dir),
        "KB_CONTENT_DIR": str(settings.content_dir),
        "KB_SECRET_KEY": settings.secret_key,
        "KB_RELEASES_DIR": str(settings.verl_dir),
    }
    chinese = runner.invoke(cli, ["search", "显存"], env=env)
    assert chinese.exit_code == 0, chinese.output
    assert KV_TITLE_ZH in chinese.output and KV_TITLE not in chinese.output
    english = runner.invoke(cli, ["search", "cache blocks"], env=env)
    assert english.exit_code == 0 and KV_TITLE in english.output
    as_json = runner.invoke(cli, ["search", "显存", "--json"], env=env)
    assert '"title_zh"' in as_json.output and KV_TITLE_ZH in as_json.output
    assert runner.invoke(cli, ["search", "zzzqqqxxx"], env=env).exit_code == 1


def _fix_bodies_problems(content_dir, release) -> list[str]:
    _catalog, problems = check_content(content_dir, release)
    return [str(problem) for problem in problems if "fix_bodies" in problem.message]


def test_a_fix_body_without_chinese_fails_the_check(content_dir, release):
    path = content_dir / "DIST-901.zh.md"
    text = path.read_text()
    path.write_text(
        text.replace(
            "在所有 rank 的日志中找到时间最早的报错，它才是根因。", "Find the earliest error across all ranks' logs."
        )
    )
    line = next(n for n, row in enumerate(path.read_text().splitlines(), 1) if "find-the-first-error" in row)
    assert _fix_bodies_problems(content_dir, release) == [
        f"{path}:{line}: fix_bodies.find-the-first-error: no Chinese text; say in Chinese what the fix does"
    ]


def test_a_missing_fix_body_fails_the_check(content_dir, release):
    path = content_dir / "ROLL-901.zh.md"
    lines = [row for row in path.read_text().splitlines() if "restart-the-cluster" not in row]
    path.write_text("\n".join(lines) + "\n")
    assert _fix_bodies_problems(content_dir, release) == [
        f"{path}:2: fix_bodies: no Chinese body for fix 'restart-the-cluster'"
    ]
