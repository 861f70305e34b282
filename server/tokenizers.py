"""The per-worker table of served encodings, with hot reload from the registry.

A request names a reference (``mytok``, ``mytok@stable``, ``gpt-4o``); the first request for it
resolves it through the registry and loads the encoding fully (sha256-checked). A poll thread
watches ``Registry.generation()``; when it changes, every reference already served is resolved
again and, if it now points elsewhere, the new encoding is loaded *completely* before the table
entry is swapped. A failed load keeps serving what was served and logs why; a reference whose
target was deleted stops being served (NOT_FOUND), as a fresh lookup would say.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokend.core.engine.cache import DEFAULT_CACHE_ENTRIES
from tokend.core.errors import TokendError, UnknownTokenizer
from tokend.core.registry import Registry, ResolvedRef
from tokend.core.tokenizer import Tokenizer, engine_path
from tokend.server import metrics
from tokend.server.logs import log_event


@dataclass(frozen=True)
class Served:
    """One resolved reference: the canonical ``name@version`` and its loaded encoding."""

    ref: str
    resolved: ResolvedRef
    encoding: Tokenizer


class Tokenizers:
    """Thread-safe ``reference -> Served`` table over one Registry (one per worker process)."""

    def __init__(
        self, registry: Registry, *, cache_entries: int = DEFAULT_CACHE_ENTRIES
    ) -> None:
        self.registry = registry
        self.cache_entries = cache_entries
        self._lock = threading.Lock()
        self._refs: dict[str, Served] = {}  # request reference -> what it is served as
        self._encodings: dict[str, Tokenizer] = {}  # canonical ref -> encoding (shared)
        self._manifests: dict[str, dict[str, Any]] = {}  # canonical ref -> its manifest
        self._load_locks: dict[str, threading.Lock] = {}  # one load at a time per reference
        self._generation = registry.generation()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- serving ---------------------------------------------------------------------------

    def get(self, ref: str) -> Served:
        """What ``ref`` is served as; loads it on first use (UnknownTokenizer, InvalidName...)."""
        served = self._refs.get(ref)
        if served is not None:
            return served
        with self._lock:
            load_lock = self._load_locks.setdefault(ref, threading.Lock())
        try:
            with load_lock:  # subtle: many threads asking for a cold ref load it once
                served = self._refs.get(ref)
                if served is None:
                    served = self._load(ref)
                    with self._lock:
                        self._refs[ref] = served
                return served
        finally:
            # Bogus references must not pile up locks; a served one needs its lock no more.
            with self._lock:
                self._load_locks.pop(ref, None)

    def is_loaded(self, ref: str) -> bool:
        """Whether ``get(ref)`` answers from the table (no registry I/O, no loading)."""
        return ref in self._refs

    def _load(self, ref: str) -> Served:
        resolved = self.registry.resolve(ref)
        canonical = resolved.ref
        with self._lock:
            encoding = self._encodings.get(canonical)
        if encoding is None:
            encoding = self._build(resolved)
            with self._lock:
                encoding = self._encodings.setdefault(canonical, encoding)
            log_event("tokenizer_loaded", ref=canonical, n_vocab=encoding.n_vocab,
                      engine=engine_path(encoding))
        return Served(canonical, resolved, encoding)

    def _build(self, resolved: ResolvedRef) -> Tokenizer:
        """Load fully (verifying hashes) with this server's cache size (built-ins too: an
        instance of our own sharing the parsed rank table)."""
        _, tokenizer = self.registry.load(resolved.ref, cache_entries=self.cache_entries)
        return tokenizer

    def manifest(self, served: Served) -> dict[str, Any]:
        """The manifest of a served registry version, read once: versions never change, and
        on an ``s3://`` registry a read is a LIST and a GET, too dear for every request."""
        with self._lock:
            manifest = self._manifests.get(served.ref)
        if manifest is None:
            manifest = self.registry.manifest(served.ref)
            with self._lock:
                self._manifests[served.ref] = manifest
        return manifest

    def loaded(self) -> dict[str, Tokenizer]:
        """Canonical ref -> encoding of everything loaded (for metrics)."""
        with self._lock:
            return dict(self._encodings)

    # -- hot reload -----------------------------------------------------------------------

    def reload_if_changed(self) -> bool:
        """Re-resolve every served reference if the registry changed; True if it did."""
        generation = self.registry.generation()
        if generation == self._generation:
            return False
        self._generation = generation
        with self._lock:
            refs = dict(self._refs)
        for ref, old in refs.items():
            try:
                resolved = self.registry.resolve(ref)
                if resolved.ref == old.ref:
                    continue
                new = self._load(ref)  # loads completely before anything is swapped
            except UnknownTokenizer:
                with self._lock:
                    self._refs.pop(ref, None)
                log_event("tokenizer_unserved", ref=ref, was=old.ref)
                continue
            except TokendError as exc:
                metrics.RELOADS.labels("failed").inc()
                log_event("reload_failed", ref=ref, kept=old.ref, error=str(exc))
                continue
            with self._lock:
                self._refs[ref] = new
            metrics.RELOADS.labels("ok").inc()
            log_event("tokenizer_reloaded", ref=ref, old=old.ref, new=new.ref)
        self._forget_unreferenced()
        return True

    def _forget_unreferenced(self) -> None:
        with self._lock:
            used = {s.ref for s in self._refs.values()}
            for canonical in [c for c in self._encodings if c not in used]:
                del self._encodings[canonical]
            for canonical in [c for c in self._manifests if c not in used]:
                del self._manifests[canonical]

    def start(self, interval: float, on_tick: Callable[[], None] | None = None) -> None:
        """Poll the registry every ``interval`` seconds on a daemon thread."""

        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    self.reload_if_changed()
                    if on_tick is not None:
                        on_tick()
                except Exception as exc:  # keep polling: a transient disk error must not kill it
                    log_event("reload_loop_error", error=repr(exc))

        self._thread = threading.Thread(target=loop, name="registry-poll", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
