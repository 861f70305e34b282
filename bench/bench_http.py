"""HTTP benchmark: server CPU per never-seen 1 KB ``POST /count``, tokend against a bare
Starlette app on uvicorn that parses the same JSON and answers a constant, in one run.

    .venv/bin/python bench/bench_http.py                     # ~1 minute, prints a markdown table
    .venv/bin/python bench/bench_http.py --requests 4000 --repeat 5 --connections 8
    .venv/bin/python bench/bench_http.py --vendors           # the vendor routes vs /count

``--vendors`` measures tokend alone: each vendor count-tokens route (Anthropic's, OpenAI's
Responses, Gemini's) against ``POST /count`` carrying the same 1 KB chat (a system prompt and a
never-seen user message) for the same model, the two runs of each pair back to back, alternating
which goes first; the ratio is of the medians, min-max of the per-pair ratios beside it.

tokend runs as ``tokend serve --workers 1 --http-port P`` (one worker: its HTTP thread and its
handler pool); the baseline is this script itself (``--serve-baseline PORT``), uvicorn with the
same settings tokend gives it (one process, no access log, ``lifespan="off"``), and a route that
reads the body, ``json.loads`` it and answers ``{"total": 0}``: the floor of any JSON API on
this stack. Load: ``--connections`` keep-alive connections from one asyncio process, each
sending its next request as soon as the previous answer arrived (closed loop); requests are
built up front as bytes, so the load costs little CPU beside the servers. Every request
carries a text no earlier request carried (random corpus words, a new seed per run), so
tokend's caches never help. Reported: server CPU (user + system of the server's processes,
from /proc) per request over the measured window, and requests/s; each server runs
``--repeat`` times, alternating which goes first; the table gives the median run of each and
the ratio of the medians, min-max of the per-pair ratios beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ (also when imported)
from bench_service import (
    TOKENIZER,
    free_port,
    make_new_texts,
    process_cpu_seconds,
)

TEXT_BYTES = 1024


# -- the baseline server (run as a subprocess of this script) ----------------------------------


def serve_baseline(port: int) -> None:
    """A bare Starlette app on uvicorn: parse the JSON body, answer a constant."""
    import uvicorn  # noqa: PLC0415
    from starlette.applications import Starlette  # noqa: PLC0415
    from starlette.requests import Request  # noqa: PLC0415
    from starlette.responses import JSONResponse  # noqa: PLC0415
    from starlette.routing import Route  # noqa: PLC0415

    async def count(request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        return JSONResponse({"tokenizer": body.get("tokenizer"), "total": 0})

    app = Starlette(routes=[Route("/count", count, methods=["POST"])])
    uvicorn.run(app, host="127.0.0.1", port=port, lifespan="off", log_config=None,
                access_log=False, server_header=False)


# -- servers --------------------------------------------------------------------------------------


def start_tokend(port: int, registry: Path) -> tuple[subprocess.Popen[bytes], int]:
    tokend = shutil.which("tokend", path=str(Path(sys.executable).parent)) or "tokend"
    http_port = free_port()
    cmd = [
        tokend, "serve", "--host", "127.0.0.1", "--port", str(port), "--metrics-port", "0",
        "--registry", str(registry), "--workers", "1", "--http-port", str(http_port),
    ]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), http_port


def start_baseline(port: int) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, __file__, "--serve-baseline", str(port)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_http(port: int, timeout: float = 60.0) -> None:
    """Until a POST /count succeeds (tokend loads the encoding on the first one)."""
    body = json.dumps({"tokenizer": TOKENIZER, "texts": ["warm up"]}).encode()
    deadline = time.monotonic() + timeout
    while True:
        try:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/count", data=body,
                                             headers={"content-type": "application/json"})
            with urllib.request.urlopen(request, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- the load -------------------------------------------------------------------------------------


def requests_for(texts: Sequence[str], path: str = "/count",
                 body_of: Callable[[str], dict[str, Any]] | None = None) -> list[bytes]:
    """One ``POST path`` per text (its body ``body_of(text)``), as bytes on the wire."""
    out = []
    for text in texts:
        fields = body_of(text) if body_of else {"tokenizer": TOKENIZER, "texts": [text]}
        body = json.dumps(fields).encode()
        head = (f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\n\r\n").encode()
        out.append(head + body)
    return out


# -- the vendor routes against /count ---------------------------------------------------------

SYSTEM = "You are a careful assistant. Answer briefly and cite the passage you rely on."
# name -> (model, path, body of a chat: the system prompt and one user message)
VENDOR_ROUTES: dict[str, tuple[str, str, Callable[[str, str], dict[str, Any]]]] = {
    "anthropic": ("claude-sonnet-4-5", "/v1/messages/count_tokens",
                  lambda system, user: {"model": "claude-sonnet-4-5", "system": system,
                                        "messages": [{"role": "user", "content": user}]}),
    "openai": ("gpt-4o", "/v1/responses/input_tokens",
               lambda system, user: {"model": "gpt-4o", "instructions": system, "input": user}),
    "gemini": ("gemini-2.5-flash", "/v1beta/models/gemini-2.5-flash:countTokens",
               lambda system, user: {"systemInstruction": {"parts": [{"text": system}]},
                                     "contents": [{"role": "user",
                                                   "parts": [{"text": user}]}]}),
}


def count_chat_body(model: str) -> Callable[[str, str], dict[str, Any]]:
    """``POST /count``'s body of the same chat."""
    return lambda system, user: {"model": model, "messages": [
        {"role": "system", "content": system}, {"role": "user", "content": user}]}


def vendor_main(args: argparse.Namespace) -> int:
    """Each vendor route against /count with the same chats, on one tokend."""
    user_bytes = TEXT_BYTES - len(SYSTEM)
    cpu: dict[str, list[float]] = {f"{v} {side}": [] for v in VENDOR_ROUTES
                                   for side in ("route", "count")}
    rps: dict[str, list[float]] = {key: [] for key in cpu}
    with tempfile.TemporaryDirectory(prefix="tokend-bench-http-") as tmp:
        tokend, port = start_tokend(free_port(), Path(tmp) / "registry")
        try:
            wait_http(port)
            for i, (model, path, body) in enumerate(VENDOR_ROUTES.values()):
                warm = make_new_texts(user_bytes, 300, seed=10_000 + i)
                for p, b in ((path, body), ("/count", count_chat_body(model))):
                    run(tokend.pid, port, requests_for(warm, p, lambda t, b=b: b(SYSTEM, t)),
                        args.connections)
            for r in range(args.repeat):
                for v, (model, path, body) in VENDOR_ROUTES.items():
                    sides = [("route", path, body), ("count", "/count", count_chat_body(model))]
                    for side, p, b in sides if r % 2 == 0 else sides[::-1]:
                        seed = 100 * r + 10 * list(VENDOR_ROUTES).index(v) + (side == "count")
                        texts = make_new_texts(user_bytes, args.requests, seed=seed)
                        reqs = requests_for(texts, p, lambda t, b=b: b(SYSTEM, t))
                        us, per_second = run(tokend.pid, port, reqs, args.connections)
                        cpu[f"{v} {side}"].append(us)
                        rps[f"{v} {side}"].append(per_second)
                        print(f"run {r + 1} {v} {side}: {us:,.0f} µs CPU/request, "
                              f"{per_second:,.0f} req/s", file=sys.stderr)
        finally:
            stop(tokend)
    print(f"1 KB chats (system + a never-seen user message), tokend --workers 1, "
          f"{args.connections} keep-alive connections, {args.requests} requests x "
          f"{args.repeat} runs per route, {os.cpu_count()} CPUs")
    print()
    print("| route | model | server CPU µs/request (median) | /count, same chats | "
          "route / /count CPU | req/s route / /count |")
    print("|---|---|---:|---:|---:|---:|")
    for v, (model, path, _) in VENDOR_ROUTES.items():
        mine, base = cpu[f"{v} route"], cpu[f"{v} count"]
        ratios = [a / b for a, b in zip(mine, base, strict=True)]
        print(f"| `POST {path}` | {model} | {statistics.median(mine):,.0f} | "
              f"{statistics.median(base):,.0f} | "
              f"{statistics.median(mine) / statistics.median(base):.2f}x (runs "
              f"{min(ratios):.2f}-{max(ratios):.2f}) | "
              f"{statistics.median(rps[f'{v} route']):,.0f} / "
              f"{statistics.median(rps[f'{v} count']):,.0f} |")
    return 0


async def _connection(port: int, requests: Sequence[bytes]) -> None:
    """Send ``requests`` one after another on one keep-alive connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for data in requests:
            writer.write(data)
            head = await reader.readuntil(b"\r\n\r\n")
            status = head[9:12]
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            if status != b"200":
                raise RuntimeError(f"status {status.decode()} from port {port}")
    finally:
        writer.close()


async def _load(port: int, requests: Sequence[bytes], connections: int) -> None:
    shares = [requests[i::connections] for i in range(connections)]
    await asyncio.gather(*(_connection(port, share) for share in shares))


def run(pid: int, port: int, requests: Sequence[bytes], connections: int) -> tuple[float, float]:
    """(server CPU µs per request, requests/s) over one closed-loop run."""
    before = sum(process_cpu_seconds(pid).values())
    start = time.perf_counter()
    asyncio.run(_load(port, requests, connections))
    seconds = time.perf_counter() - start
    cpu = sum(process_cpu_seconds(pid).values()) - before
    return cpu / len(requests) * 1e6, len(requests) / seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per run")
    parser.add_argument("--repeat", type=int, default=5, help="runs per server")
    parser.add_argument("--connections", type=int, default=8, help="keep-alive connections")
    parser.add_argument("--vendors", action="store_true",
                        help="the vendor count-tokens routes against /count (tokend only)")
    parser.add_argument("--serve-baseline", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_baseline:
        serve_baseline(args.serve_baseline)
        return 0
    if args.vendors:
        return vendor_main(args)
    with tempfile.TemporaryDirectory(prefix="tokend-bench-http-") as tmp:
        tokend, tokend_port = start_tokend(free_port(), Path(tmp) / "registry")
        baseline_port = free_port()
        baseline = start_baseline(baseline_port)
        try:
            wait_http(tokend_port)
            wait_http(baseline_port)
            servers = {"tokend": (tokend.pid, tokend_port),
                       "baseline": (baseline.pid, baseline_port)}
            # warm-up: both servers, texts never used again
            warm = requests_for(make_new_texts(TEXT_BYTES, 300, seed=10_000))
            for pid, port in servers.values():
                run(pid, port, warm, args.connections)
            cpu: dict[str, list[float]] = {"tokend": [], "baseline": []}
            rps: dict[str, list[float]] = {"tokend": [], "baseline": []}
            for r in range(args.repeat):
                order = ["tokend", "baseline"] if r % 2 == 0 else ["baseline", "tokend"]
                for name in order:
                    seed = r * 2 + (name == "tokend")
                    texts = make_new_texts(TEXT_BYTES, args.requests, seed=seed)
                    us, per_second = run(*servers[name], requests_for(texts), args.connections)
                    cpu[name].append(us)
                    rps[name].append(per_second)
                    print(f"run {r + 1} {name}: {us:,.0f} µs CPU/request, {per_second:,.0f} req/s",
                          file=sys.stderr)
        finally:
            stop(tokend)
            stop(baseline)
    ratios = [t / b for t, b in zip(cpu["tokend"], cpu["baseline"], strict=True)]
    median = {name: statistics.median(values) for name, values in cpu.items()}
    print(f"never-seen {TEXT_BYTES // 1024} KB POST /count, {args.connections} keep-alive "
          f"connections, {args.requests} requests x {args.repeat} runs per server, "
          f"{os.cpu_count()} CPUs")
    print()
    print("| server | server CPU µs/request (median) | req/s (median) | tokend / baseline CPU |")
    print("|---|---:|---:|---:|")
    print(f"| tokend, 1 worker | {median['tokend']:,.0f} | {statistics.median(rps['tokend']):,.0f} "
          f"| {median['tokend'] / median['baseline']:.2f}x (runs {min(ratios):.2f}-"
          f"{max(ratios):.2f}) |")
    print(f"| bare Starlette + uvicorn | {median['baseline']:,.0f} | "
          f"{statistics.median(rps['baseline']):,.0f} | 1.00x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
