#!/usr/bin/env python3
"""Regenerate docs/inspector.png: the inspector page of a fresh ``tokend serve``, in chromium.

    .venv/bin/python scripts/screenshot_inspector.py [--out docs/inspector.png]

Starts ``tokend serve --http-port`` on free loopback ports with an empty registry (built-ins
only), opens the page comparing o200k_base with gpt2 on a fixed text, hovers a piece and saves
a full-page screenshot. Needs Debian's ``/usr/bin/chromium`` (``scripts/setup-test-tools.sh``;
Playwright's own browser download is never used). CJK and emoji glyphs need fonts such as
``fonts-wqy-microhei`` and ``fonts-noto-color-emoji`` (apt), or they show as boxes.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
TEXT = ("Tokenizers split text into pieces: \"unbelievably\" → ?\n"
        "Größe, 東京, emoji 🙂 and  two  spaces.<|endoftext|>")


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
    query = urlencode({"a": "o200k_base", "b": "gpt2", "text": TEXT})
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
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
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
