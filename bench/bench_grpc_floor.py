"""The floor under a 1 KB call: what grpcio alone costs per unary call, beside what encoding a
never-seen 1 KB text costs in process, so the service benchmark's 1 KB ratios can be read.

    .venv/bin/python bench/bench_grpc_floor.py            # ~30 s, prints a markdown table

Servers: one process each, a handler returning a constant (no tokenizer), the synchronous
``grpc.server`` (16 threads, as tokend and the baseline) and ``grpc.aio``; load: one asyncio
client process with 16 calls in flight sending 1 KB. Server CPU per call from ``/proc``
(user + system), so another job on the machine changes it much less than calls/s. In process:
CPU time per never-seen 1 KB text (random corpus words, as ``bench_service.py --mode new``)
for tiktoken's encode and tokend's encode and count, o200k_base.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import time
from concurrent import futures
from typing import Any

import grpc
from bench_service import free_port, make_new_texts  # bench/ is the script's directory
from tiktoken_offline import load_tiktoken

from tokend import core

PAYLOAD = b"x" * 1024
METHOD = "/floor.Floor/Call"


def _identity(data: bytes) -> bytes:
    return data


def _handlers(behaviour: Any) -> grpc.GenericRpcHandler:
    call = grpc.unary_unary_rpc_method_handler(behaviour, _identity, _identity)
    return grpc.method_handlers_generic_handler("floor.Floor", {"Call": call})


def _sync_answer(request: bytes, context: Any) -> bytes:
    return b"\x08\x01"


async def _aio_answer(request: bytes, context: Any) -> bytes:
    return b"\x08\x01"


def _serve(kind: str, port: int, ready: Any) -> None:
    if kind == "sync":
        server = grpc.server(futures.ThreadPoolExecutor(16))
        server.add_generic_rpc_handlers((_handlers(_sync_answer),))
        server.add_insecure_port(f"127.0.0.1:{port}")
        server.start()
        ready.set()
        server.wait_for_termination()
        return

    async def main() -> None:
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((_handlers(_aio_answer),))
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        ready.set()
        await server.wait_for_termination()

    asyncio.run(main())


def _load(port: int, seconds: float, inflight: int, out: Any) -> None:
    async def main() -> None:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        call = channel.unary_unary(
            METHOD, request_serializer=_identity, response_deserializer=_identity
        )
        done = 0
        end = time.monotonic() + seconds

        async def caller() -> None:
            nonlocal done
            while time.monotonic() < end:
                await call(PAYLOAD)
                done += 1

        await asyncio.gather(*(caller() for _ in range(inflight)))
        out.put(done)

    asyncio.run(main())


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu_per_call(kind: str, seconds: float, inflight: int) -> tuple[float, float]:
    """(calls/s, server CPU µs per call) of a constant-answer server of ``kind``."""
    port, ready, out = free_port(), mp.Event(), mp.Queue()
    server = mp.Process(target=_serve, args=(kind, port, ready), daemon=True)
    server.start()
    ready.wait()
    try:
        warm = mp.Process(target=_load, args=(port, 1.0, inflight, out))
        warm.start()
        out.get()
        warm.join()
        before = _cpu_seconds(server.pid or 0)
        load = mp.Process(target=_load, args=(port, seconds, inflight, out))
        load.start()
        calls = out.get()
        load.join()
        used = _cpu_seconds(server.pid or 0) - before
    finally:
        server.kill()
        server.join()
    return calls / seconds, used / calls * 1e6


def in_process_us(texts: int) -> dict[str, float]:
    """CPU µs per never-seen 1 KB text: tiktoken encode, tokend encode and count."""
    reference = load_tiktoken("o200k_base")
    ours = core.get_encoding("o200k_base")
    for text in make_new_texts(1024, 2000, 99):  # warm both on other texts
        reference.encode(text)
        ours.encode(text)
    fresh = make_new_texts(1024, 3 * texts, 7)
    runs = {
        "tiktoken encode": (lambda t: reference.encode(t, disallowed_special=()), fresh[:texts]),
        "tokend encode": (
            lambda t: ours.encode(t, disallowed_special=()),
            fresh[texts : 2 * texts],
        ),
        "tokend count": (lambda t: ours.count(t, disallowed_special=()), fresh[2 * texts :]),
    }
    result = {}
    for name, (work, batch) in runs.items():
        start = time.process_time()
        for text in batch:
            work(text)
        result[name] = (time.process_time() - start) / len(batch) * 1e6
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per server")
    parser.add_argument("--inflight", type=int, default=16, help="calls in flight")
    parser.add_argument("--texts", type=int, default=2000, help="texts per in-process row")
    args = parser.parse_args()
    print(f"engine {core.ENGINE}, grpcio {grpc.__version__}, {os.cpu_count()} CPUs\n")
    print("| what | calls/s | CPU µs per call or text |\n|---|---:|---:|")
    for kind in ("sync", "aio"):
        rate, cpu = server_cpu_per_call(kind, args.seconds, args.inflight)
        print(f"| grpcio {kind} server, constant answer | {rate:,.0f} | {cpu:.0f} |")
    for name, cpu in in_process_us(args.texts).items():
        print(f"| {name}, never-seen 1 KB, in process | | {cpu:.1f} |")


if __name__ == "__main__":
    main()
