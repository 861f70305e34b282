#!/usr/bin/env python3
"""Regenerate docs/inspector.png: the inspector page of a fresh ``tokend serve``, in chromium.

    .venv/bin/python scripts/screenshot_inspector.py [--out docs/inspector.png]

Publishes two versions of a byte-level BPE trained here on Shakespeare (the bundled
``tests/fixtures/corpora/shakespeare.txt.gz``; vocabulary 500, then 2,000) into an empty
registry with ``stable`` pointing at version 2, starts ``tokend serve --http-port`` on free
loopback ports, opens the page with ``bard@1`` next to ``bard@stable`` (the version picker's
"what changed between v1 and v2"), hovers a piece and saves a full-page screenshot. Needs
Debian's ``/usr/bin/chromium`` and the CJK and emoji fonts ``fonts-wqy-microhei`` and
``fonts-noto-color-emoji`` (all installed by ``scripts/setup-test-tools.sh``; Playwright's own
browser download is never used); without the fonts those glyphs would be boxes, so the script
refuses to run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from playwright.sync_api import sync_playwright

from tokend.core import train_bpe
from tokend.core.registry import Registry

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
TEXT = ("To be, or not to be, that is the question:\n"
        "Whether 'tis nobler in the mind to suffer → 東京, Größe 🙂<|endoftext|>")
CORPUS = ROOT / "tests" / "fixtures" / "corpora" / "shakespeare.txt.gz"
NAME = "bard"
VOCAB_SIZES = (500, 2000)  # version 1, version 2
# fontconfig family names of the fonts the text's CJK and emoji need (setup-test-tools.sh).
FONTS = {"WenQuanYi Micro Hei": "fonts-wqy-microhei", "Noto Color Emoji": "fonts-noto-color-emoji"}


def check_fonts() -> None:
    """Refuse to draw boxes: every font of FONTS must be known to fontconfig."""
    fc_list = shutil.which("fc-list")
    known = subprocess.run([fc_list, ":", "family"], capture_output=True, text=True,
                           check=True).stdout if fc_list else ""
    missing = [package for family, package in FONTS.items() if family not in known]
    if missing:
        raise SystemExit(f"missing fonts {missing} (CJK and emoji would show as boxes): "
                         "run scripts/setup-test-tools.sh (as root) or apt-get install them")


def publish_versions(registry: Path) -> None:
    """``bard@1`` and ``bard@2``, trained on the first 300 KB of Shakespeare; stable -> 2."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        text = f.read(300_000)
    store = Registry(registry)
    for vocab_size in VOCAB_SIZES:
        result = train_bpe(iter([text]), vocab_size, ["<|endoftext|>"])
        store.publish(NAME, ranks=result.mergeable_ranks(), pat_str=result.pattern,
                      special_tokens=result.special_tokens,
                      training={"vocab_size": vocab_size})
    store.set_alias(NAME, "stable", 2)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(registry: Path, http_port: int) -> subprocess.Popen[str]:
    """``tokend serve`` with one worker; returns once it logs ``serving``."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tokend.cli", "serve", "--port", "0", "--workers", "1",
         "--registry", str(registry), "--metrics-port", "0", "--http-port", str(http_port)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    assert process.stderr is not None
    deadline = time.monotonic() + 90
    for line in process.stderr:
        try:
            if json.loads(line).get("event") == "serving":
                return process
        except ValueError:
            pass
        if time.monotonic() > deadline:
            break
    process.kill()
    raise SystemExit(f"tokend serve did not start (exit status {process.wait()})")


def screenshot(base: str, out: Path) -> None:
    query = urlencode({"a": f"{NAME}@1", "b": f"{NAME}@stable", "text": TEXT})
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 760})
        page.goto(f"{base}/?{query}")
        page.wait_for_function(
            "text => document.getElementById('panels').dataset.text === text"
            " && document.body.dataset.busy === '0'", arg=TEXT)
        page.locator(".panel").first.locator(".piece").nth(5).hover()
        out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out), full_page=True)
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "inspector.png")
    args = parser.parse_args()
    check_fonts()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        publish_versions(Path(tmp) / "registry")
        server = start_server(Path(tmp) / "registry", port)
        try:
            screenshot(f"http://127.0.0.1:{port}", args.out)
        finally:
            server.terminate()
            server.wait(30)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
