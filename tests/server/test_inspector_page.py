"""The inspector page in a real headless browser: Debian's chromium, driven by Playwright.

``scripts/setup-test-tools.sh`` installs chromium (apt); Playwright's own browser download is
never used (``executable_path``). The page must show exactly what the JSON API answers: the
ids and bytes of every piece, the counts and bytes per token, special and byte-fallback
pieces marked, and, with two tokenizers, the pieces the other one does not have. A registry
tokenizer is picked by version or alias too (``vtok@1`` next to ``vtok@2``, published by the
``http_server`` fixture), and a version that does not exist shows the API's refusal. Pieces
carry the lint marks of ``GET /tokenizers/{ref}/lint`` (glitch candidates, partial UTF-8; the
unreachable tokens, which no text produces, are listed beside them), and two versions of one
tokenizer get the version-diff panel of ``GET /diff``.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import versioned
from http_api import HttpServed, call
from playwright.sync_api import Browser, Page, sync_playwright

from tokend.core.patterns import GPT2_PATTERN
from tokend.core.registry import Registry

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
TYPED = "Hello wörld, 東京 <|endoftext|> ☃!"
# Words of vtok's training corpus (tests/fixtures/corpora/corpus.en): v2's extra merges show.
VERSIONED_TEXT = "iron cement protects the ingot against the hot, abrasive steel casting process."
PIECES_JS = """pieces => pieces.map(p => ({id: Number(p.dataset.id), bytes: p.dataset.bytes,
    label: p.textContent, classes: [...p.classList], title: p.title}))"""
# gpt2's known glitch tokens (ranked among its glitch candidates) and partial-UTF-8 pieces.
GLITCHY = " SolidGoldMagikarp and guiActiveUn like 東京"
MARKS = {"unreachable": "lint-unreachable", "glitch-candidate": "lint-glitch",
         "partial-utf8": "lint-partial"}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, http_server: HttpServed) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.goto(http_server.base + "/")
    opened.wait_for_selector("body[data-ready='1']")
    yield opened
    context.close()
    assert errors == []  # no JavaScript error on the page


def shown(page: Page, text: str) -> None:
    """Wait until the page shows the answers for ``text`` (no request in flight)."""
    page.wait_for_function(
        "text => document.getElementById('panels').dataset.text === text"
        " && document.body.dataset.busy === '0'", arg=text)


def api_tokens(base: str, tokenizer: str, text: str, *, add_special: bool = False) -> Any:
    """What the page asks for (special-token text as special tokens, the page's default)."""
    answer = call(base, "POST", "/tokenize", {
        "tokenizer": tokenizer, "texts": [text], "add_special_tokens": add_special,
        "special_tokens": {"allow_all": True}})
    assert answer.status == 200, answer.body
    (result,) = answer.body["results"]
    return result


def label(token: dict[str, Any]) -> str:
    """The page's label of a piece: its text, <0xNN> for byte fallback, \\xNN for a partial."""
    pairs = [token["bytes"][i:i + 2] for i in range(0, len(token["bytes"]), 2)]
    if token["byte_fallback"]:
        return "".join(f"<0x{b.upper()}>" for b in pairs)
    if token["text"] is None:
        return "".join(f"\\x{b}" for b in pairs)
    return str(token["text"])


def spans(tokens: list[dict[str, Any]]) -> list[tuple[int, int] | None]:
    """Byte spans of the ordinary pieces over the text (special pieces: None)."""
    out: list[tuple[int, int] | None] = []
    at = 0
    for token in tokens:
        size = len(token["bytes"]) // 2
        out.append(None if token["special"] else (at, at + size))
        at += 0 if token["special"] else size
    return out


class TestInspectorPage:
    def test_typed_text_shows_the_apis_pieces_and_counts(self, page: Page,
                                                          http_server: HttpServed) -> None:
        """Type into the box: every piece (id, bytes, label), the count and bytes per token
        equal the API's; hovering a piece shows its id."""
        page.select_option("#tok-a", "o200k_base")
        page.select_option("#tok-b", "")
        page.fill("#text", "")
        page.locator("#text").press_sequentially(TYPED)
        shown(page, TYPED)
        expected = api_tokens(http_server.base, "o200k_base", TYPED)
        panel = page.locator(".panel[data-tokenizer='o200k_base']")
        pieces = panel.locator(".piece").evaluate_all(PIECES_JS)
        assert [p["id"] for p in pieces] == expected["ids"]
        assert [p["bytes"] for p in pieces] == [t["bytes"] for t in expected["tokens"]]
        assert [p["label"] for p in pieces] == [label(t) for t in expected["tokens"]]
        assert ["special" in p["classes"] for p in pieces] == \
            [t["special"] for t in expected["tokens"]] and any(t["special"] for t in
                                                              expected["tokens"])
        assert panel.locator(".count").inner_text() == str(expected["count"])
        size = len(TYPED.encode())
        assert panel.locator(".nbytes").inner_text() == str(size)
        assert panel.locator(".bpt").inner_text() == f"{size / expected['count']:.2f}"
        assert page.locator("#diff").is_hidden()
        third = panel.locator(".piece").nth(2)
        third.hover()
        assert f"id {expected['ids'][2]} " in page.locator("#hover").inner_text()

    def test_two_tokenizers_side_by_side(self, page: Page, http_server: HttpServed,
                                         bfbpe: Any) -> None:
        """o200k_base next to a byte-fallback BPE with its <s> </s> framing: both panels are
        the API's, byte-fallback and special pieces are marked, and exactly the pieces whose
        span the other tokenizer lacks are marked as differing."""
        page.select_option("#tok-a", "o200k_base")
        page.select_option("#tok-b", "bfbpe")
        page.check("#add-special")
        page.fill("#text", TYPED)
        shown(page, TYPED)
        answers = {ref: api_tokens(http_server.base, ref, TYPED, add_special=True)
                   for ref in ("o200k_base", "bfbpe")}
        panels = {"o200k_base": "o200k_base", "bfbpe": "bfbpe@1"}
        other = {"o200k_base": "bfbpe", "bfbpe": "o200k_base"}
        for ref, shown_ref in panels.items():
            panel = page.locator(f".panel[data-tokenizer='{shown_ref}']")
            pieces = panel.locator(".piece").evaluate_all(PIECES_JS)
            tokens = answers[ref]["tokens"]
            assert [p["id"] for p in pieces] == answers[ref]["ids"]
            assert [p["label"] for p in pieces] == [label(t) for t in tokens]
            assert [("byte-fallback" in p["classes"], "special" in p["classes"])
                    for p in pieces] == [(t["byte_fallback"], t["special"]) for t in tokens]
            theirs = {s for s in spans(answers[other[ref]]["tokens"]) if s is not None}
            assert ["differs" in p["classes"] for p in pieces] == \
                [s is not None and s not in theirs for s in spans(tokens)]
            assert panel.locator(".count").inner_text() == str(answers[ref]["count"])
        fallback = [label(t) for t in answers["bfbpe"]["tokens"] if t["byte_fallback"]]
        hf_tokens = bfbpe.encode(TYPED).tokens  # 東京 and ☃ are not in its corpus
        assert fallback == [t for t in hf_tokens if t.startswith("<0x")]
        assert len(fallback) >= 9
        diff = page.locator("#diff").inner_text()
        assert f"o200k_base: {answers['o200k_base']['count']} tokens" in diff
        assert f"bfbpe@1: {answers['bfbpe']['count']} tokens" in diff

    def test_two_versions_of_one_tokenizer_side_by_side(self, page: Page,
                                                         http_server: HttpServed) -> None:
        """vtok v1 next to vtok v2, picked in the version menus: each panel is the API's
        answer for that version (ids, labels, count); the menus offer what /tokenizers
        lists; the alias picks the version it points at."""
        listed = next(t for t in call(http_server.base, "GET", "/tokenizers").body["tokenizers"]
                      if t["name"] == versioned.NAME)
        page.select_option("#tok-a", versioned.NAME)
        page.select_option("#tok-b", versioned.NAME)
        offered = page.locator("#ver-a option").evaluate_all("os => os.map(o => o.value)")
        assert offered == ["", *sorted(listed["aliases"]),
                           *[str(v) for v in reversed(listed["versions"])]] == \
            ["", "stable", "2", "1"]
        page.select_option("#ver-a", "1")
        page.select_option("#ver-b", "2")
        page.fill("#text", VERSIONED_TEXT)
        shown(page, VERSIONED_TEXT)
        counts = {}
        for version in (1, 2):
            ref = f"{versioned.NAME}@{version}"
            expected = api_tokens(http_server.base, ref, VERSIONED_TEXT)
            panel = page.locator(f".panel[data-tokenizer='{ref}']")
            pieces = panel.locator(".piece").evaluate_all(PIECES_JS)
            assert [p["id"] for p in pieces] == expected["ids"]
            assert [p["label"] for p in pieces] == [label(t) for t in expected["tokens"]]
            assert panel.locator(".count").inner_text() == str(expected["count"])
            counts[version] = expected["count"]
        assert counts[2] < counts[1]  # v2 has more merges: the two panels really differ
        assert page.locator(".panel .differs").count() > 0
        diff = page.locator("#diff").inner_text()
        assert f"vtok@1: {counts[1]} tokens" in diff and f"vtok@2: {counts[2]} tokens" in diff
        page.select_option("#ver-a", "")  # latest -> version 2
        page.select_option("#ver-b", "stable")  # -> version 1, the alias's target
        shown(page, VERSIONED_TEXT)  # each change marks the page busy until it is shown
        assert page.locator(".panel h2").all_inner_texts() == ["vtok@2", "vtok@1"]

    def test_a_version_from_the_address_and_an_unknown_one(self, browser: Browser,
                                                          http_server: HttpServed) -> None:
        """?a=vtok@stable&b=vtok@2 opens on those; ?a=vtok@9 shows the API's 404 message."""
        context = browser.new_context()
        try:
            opened = context.new_page()
            opened.goto(f"{http_server.base}/?a=vtok@stable&b=vtok@2&text=hot+steel")
            shown(opened, "hot steel")
            assert opened.locator(".panel h2").all_inner_texts() == ["vtok@1", "vtok@2"]
            assert opened.locator("#ver-a").input_value() == "stable"
            opened.goto(f"{http_server.base}/?a=vtok@9&text=hot")
            shown(opened, "hot")
            refused = call(http_server.base, "POST", "/tokenize",
                           {"tokenizer": "vtok@9", "texts": ["hot"]})
            assert refused.status == 404
            assert opened.locator("#error").inner_text() == refused.body["error"]["message"]
            assert "has no version 9; versions: 1, 2" in refused.body["error"]["message"]
        finally:
            context.close()

    def test_a_refused_text_shows_the_apis_error(self, page: Page) -> None:
        """A text over --max-text-bytes shows the API's message naming the limit."""
        page.select_option("#tok-b", "")
        text = "x" * 70_000
        page.fill("#text", text)
        shown(page, text)
        error = page.locator("#error")
        assert error.is_visible()
        assert "--max-text-bytes" in error.inner_text()
        assert page.locator(".panel").count() == 0


@pytest.fixture(scope="module")
def unreachable_tok(http_server: HttpServed) -> str:
    """``lintme``: bytes plus one merged token, ``" I'"``, that GPT-2's pattern always cuts in
    two (so no text encodes to it), published to ``http_server``'s registry and served."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks[b" I'"] = 256
    Registry(http_server.process.registry).publish("lintme", ranks=ranks, pat_str=GPT2_PATTERN,
                                                   special_tokens={})
    deadline = time.monotonic() + 30
    while call(http_server.base, "GET", "/tokenizers/lintme").status != 200:
        assert time.monotonic() < deadline, "lintme was not served within 30 s"
        time.sleep(0.1)
    return "lintme"


def api_lint(base: str, ref: str) -> Any:
    """What the page asks for: the full lint with the partial-UTF-8 tokens listed."""
    answer = call(base, "GET", f"/tokenizers/{ref}/lint?depth=full&list_partial_utf8=true")
    assert answer.status == 200, answer.body
    return answer.body


class TestLintMarks:
    def test_pieces_carry_the_apis_lint_marks(self, page: Page,
                                               http_server: HttpServed) -> None:
        """Every piece has exactly the marks of its id's findings (style and title); gpt2's
        known glitch tokens and the bytes of 東京 are among them; the counts are the API's."""
        page.select_option("#tok-a", "gpt2")
        page.select_option("#tok-b", "")
        page.fill("#text", GLITCHY)
        shown(page, GLITCHY)
        lint = api_lint(http_server.base, "gpt2")
        assert not lint["truncated"]
        kinds: dict[int, list[str]] = {}
        for f in lint["findings"]:
            if f["kind"] in MARKS:
                kinds.setdefault(f["id"], []).append(f["kind"])
        panel = page.locator(".panel[data-tokenizer='gpt2']")
        pieces = panel.locator(".piece").evaluate_all(PIECES_JS)
        assert [p["id"] for p in pieces] == api_tokens(http_server.base, "gpt2", GLITCHY)["ids"]
        for p in pieces:
            marked = {c for c in p["classes"] if c.startswith("lint-")}
            assert marked == {MARKS[k] for k in kinds.get(p["id"], [])}, p
            for kind in kinds.get(p["id"], []):
                assert f"lint {kind}: " in p["title"], p
        glitchy = [p["label"] for p in pieces if "lint-glitch" in p["classes"]]
        assert glitchy == [" SolidGoldMagikarp", " guiActiveUn"]
        assert sum("lint-partial" in p["classes"] for p in pieces) >= 4
        glitch_piece = panel.locator(".piece.lint-glitch").first
        assert glitch_piece.evaluate("p => getComputedStyle(p).boxShadow") != "none"
        counts = panel.locator(".lint-counts").inner_text()
        for kind, n in lint["summary"].items():
            assert (f"{kind} {n}" in counts) == (n > 0), (kind, counts)

    def test_unreachable_tokens_are_listed_beside_the_pieces(
        self, page: Page, http_server: HttpServed, unreachable_tok: str
    ) -> None:
        """No text yields an unreachable token, so the panel lists them (id, text, why);
        a tokenizer over --max-lint-vocab shows the API's refusal in place of the marks."""
        page.reload()
        page.wait_for_selector("body[data-ready='1']")
        page.select_option("#tok-a", unreachable_tok)
        page.select_option("#tok-b", "o200k_base")
        page.fill("#text", "I'm here")
        shown(page, "I'm here")
        lint = api_lint(http_server.base, unreachable_tok)
        expected = [(f["id"], f["token"]["text"]) for f in lint["findings"]
                    if f["kind"] == "unreachable"]
        assert expected == [(256, " I'")]
        chips = page.locator(".panel[data-tokenizer='lintme@1'] .lint-unreachable-list .chip")
        assert chips.evaluate_all("cs => cs.map(c => [Number(c.dataset.id), c.textContent])") \
            == [list(e) for e in expected]
        assert "encodes to" in (chips.first.get_attribute("title") or "")
        refused = page.locator(".panel[data-tokenizer='o200k_base'] .lint-strip").inner_text()
        assert "--max-lint-vocab" in refused


class TestVersionDiff:
    def test_two_versions_show_the_apis_diff(self, page: Page, http_server: HttpServed) -> None:
        """vtok@1 next to vtok@2: the added tokens and the per-language ratios of GET /diff;
        gone again when B is another tokenizer."""
        page.select_option("#tok-a", versioned.NAME)
        page.select_option("#tok-b", versioned.NAME)
        page.select_option("#ver-a", "1")
        page.select_option("#ver-b", "2")
        page.fill("#text", VERSIONED_TEXT)
        shown(page, VERSIONED_TEXT)
        answer = call(http_server.base, "GET", "/diff?a=vtok@1&b=vtok@2")
        assert answer.status == 200, answer.body
        diff = answer.body
        box = page.locator("#version-diff")
        assert box.is_visible()
        assert box.locator("h2").inner_text() == "vtok@1 → vtok@2"
        added = box.locator(".diff-added .chip").evaluate_all(
            "cs => cs.map(c => Number(c.dataset.id))")
        assert added == [row["id"] for row in diff["added"]] and diff["summary"]["added"] > 0
        assert f"added {diff['summary']['added']} " in box.locator(".diff-summary").inner_text()
        rows = box.locator(".diff-languages tbody tr").evaluate_all(
            "rs => rs.map(r => [r.dataset.language, r.cells[3].textContent])")
        assert rows == [[r["language"], f"{r['ratio']:.3f}"] for r in diff["languages"]]
        assert len(rows) == 20
        page.select_option("#tok-b", "gpt2")
        shown(page, VERSIONED_TEXT)
        assert box.is_hidden()


def test_the_screenshot_script_writes_a_png(tmp_path: Path) -> None:
    """scripts/screenshot_inspector.py (which made docs/inspector.png) still works."""
    out = tmp_path / "inspector.png"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "screenshot_inspector.py"),
                    "--out", str(out)], check=True, capture_output=True, timeout=180)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == 1200 and height >= 600
