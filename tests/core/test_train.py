"""Trainer exactness: the published reference result and an obviously-correct naive trainer."""

from __future__ import annotations

import itertools
import multiprocessing
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tokend.core.training.byte_bpe as train_mod
import tokend.core.training.corpus as corpus_io
from tokend.core.engine.pretokenize import R50K_PATTERN, compile_pattern
from tokend.core.errors import Cancelled, InvalidInput, LimitExceeded
from tokend.core.formats import printable_to_token, read_gpt2_merges
from tokend.core.patterns import DEFAULT_TRAIN_PATTERN, NAMED_PATTERNS, resolve_pattern
from tokend.core.training import pretoken_count as train_count
from tokend.core.training.byte_bpe import train_bpe
from tokend.core.training.result import TrainResult

Pair = tuple[bytes, bytes]


# --- an obviously-correct reference: recount every pair every round -----------------------


def split_documents(text: str, specials: list[str]) -> list[str]:
    """Split on special tokens, longest first at the same position (as the trainer does)."""
    if not specials:
        return [text]
    ordered = sorted(specials, key=lambda s: (-len(s), s))
    return regex.split("|".join(regex.escape(s) for s in ordered), text)


def naive_train(
    streams: list[str], vocab_size: int, specials: list[str],
    pattern: str = DEFAULT_TRAIN_PATTERN,
) -> tuple[list[Pair], int]:
    """Return (merges, distinct pretokens) by brute force."""
    pretokenize = compile_pattern(resolve_pattern(pattern))  # the encoder's pretokenizer
    words: Counter[tuple[bytes, ...]] = Counter()
    for text in streams:
        for doc in split_documents(text, specials):
            for piece in pretokenize(doc):
                words[tuple(bytes([b]) for b in piece.encode("utf-8"))] += 1
    distinct = len(words)
    merges: list[Pair] = []
    while 256 + len(merges) + len(specials) < vocab_size:
        pairs: Counter[Pair] = Counter()
        for word, n in words.items():
            for pair in itertools.pairwise(word):
                pairs[pair] += n
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        merged: Counter[tuple[bytes, ...]] = Counter()
        for word, n in words.items():
            out: list[bytes] = []
            i = 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    return merges, distinct


def chunked(text: str, sizes: list[int]) -> Iterator[str]:
    """Cut text into chunks of the given sizes (cycled), to put edges anywhere."""
    pos = 0
    for size in itertools.cycle(sizes):
        if pos >= len(text):
            return
        yield text[pos : pos + size]
        pos += size


def check_result_shape(result: TrainResult, specials: list[str]) -> None:
    n = len(result.merges)
    assert sorted(result.vocab) == list(range(256 + n + len(specials)))
    for i, (left, right) in enumerate(result.merges):
        assert result.vocab[256 + i] == left + right
    assert result.special_tokens == {s: 256 + n + i for i, s in enumerate(specials)}


# --- the published reference ----------------------------------------------------------------


class TestReference:
    def test_corpus_en_matches_reference_merges_and_vocab(self, fixtures_dir: Path) -> None:
        """corpus.en, vocab 500, <|endoftext|>: the reference merges in order, same vocab set."""
        # The reference was trained with GPT-2's pattern (not the default, o200k's).
        result = train_bpe(fixtures_dir / "corpora" / "corpus.en", 500, ["<|endoftext|>"],
                           pattern="gpt2")
        ref_merges = read_gpt2_merges(fixtures_dir / "cs336" / "train-bpe-reference-merges.txt")
        assert result.merges == ref_merges
        import json

        ref_vocab = json.loads(
            (fixtures_dir / "cs336" / "train-bpe-reference-vocab.json").read_text("utf-8")
        )
        ref_set = {
            tok.encode("utf-8") if tok == "<|endoftext|>" else printable_to_token(tok)
            for tok in ref_vocab
        }
        assert set(result.vocab.values()) == ref_set
        assert len(result.vocab) == 500
        check_result_shape(result, ["<|endoftext|>"])
        assert not result.stats.stopped_early

    def test_tinystories_agrees_with_naive(self, fixtures_dir: Path) -> None:
        """A real corpus with special tokens, against the brute-force trainer."""
        path = fixtures_dir / "corpora" / "tinystories_sample.txt"
        result = train_bpe(path, 400, ["<|endoftext|>"])
        merges, distinct = naive_train([path.read_text("utf-8")], 400, ["<|endoftext|>"])
        assert result.merges == merges
        assert result.stats.distinct_pretokens == distinct
        assert result.stats.documents == path.read_text("utf-8").count("<|endoftext|>") + 1


# --- property tests against the naive trainer -------------------------------------------------

SPECIALS = ["<|endoftext|>", "<s>", "ab", "\n\n", "x y"]
tie_text = st.text(alphabet=st.sampled_from(list("ab c\nxy'1!é")), max_size=120)
any_text = st.text(max_size=80)  # arbitrary Unicode (hypothesis leaves out surrogates)


@st.composite
def corpora(draw: st.DrawFn) -> tuple[str, list[str]]:
    specials = draw(st.lists(st.sampled_from(SPECIALS), unique=True, max_size=3))
    parts = draw(st.lists(st.one_of(tie_text, any_text), min_size=1, max_size=5))
    glue = draw(
        st.lists(
            st.sampled_from([*specials, ""]) if specials else st.just(""),
            min_size=len(parts),
            max_size=len(parts),
        )
    )
    text = "".join(p + g for p, g in zip(parts, glue, strict=True))
    return text, specials


class TestAgainstNaive:
    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        data=corpora(),
        extra=st.integers(0, 30),
        sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4),
        target=st.integers(1, 16),
        pattern=st.sampled_from(
            ["gpt2", "cl100k", "o200k", r"\S+|\s+", r"(\p{L}+)|\s+|[^\s\p{L}]"]
        ),
    )
    def test_merges_equal_naive(
        self,
        data: tuple[str, list[str]],
        extra: int,
        sizes: list[int],
        target: int,
        pattern: str,
    ) -> None:
        """Any text, heavy ties, special tokens across chunk edges: same merges as brute force."""
        text, specials = data
        vocab_size = 256 + len(specials) + extra
        expected, distinct = naive_train([text], vocab_size, specials, pattern)
        with mock.patch.object(corpus_io, "TARGET_PIECE_CHARS", target):
            result = train_bpe(chunked(text, sizes), vocab_size, specials, pattern=pattern)
        assert result.merges == expected
        assert result.stats.distinct_pretokens == distinct
        assert result.stats.stopped_early == (len(expected) < extra)
        assert result.stats.bytes_read == len(text.encode("utf-8"))
        check_result_shape(result, specials)

    def test_empty_documents_and_empty_corpus(self) -> None:
        """Only special tokens (or nothing): no pretokens, stops early, still a valid result."""
        for text in ["", "<s><s><s>", "<s>"]:
            result = train_bpe(iter([text]), 300, ["<s>"])
            assert result.merges == []
            assert result.stats.stopped_early
            assert result.stats.documents == 0
            assert result.special_tokens == {"<s>": 256}

    def test_documents_counted(self) -> None:
        result = train_bpe(iter(["a<s>", "<s>b c<s>", "d"]), 260, ["<s>"])
        assert result.stats.documents == 3


class TestSplitter:
    @settings(max_examples=200, deadline=None)
    @given(
        data=st.one_of(
            corpora(),
            st.tuples(st.text(alphabet=" \t\n\r\xa0a.", max_size=60), st.just([])),
        ),
        sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4),
        target=st.integers(1, 16),
        name=st.sampled_from(sorted(NAMED_PATTERNS)),
    )
    # A short special token right after a long one, then a space, cut one character at a time.
    @example(
        data=("1<|endoftext|><s> <|endoftext|>", ["<|endoftext|>", "<s>"]),
        sizes=[1],
        target=1,
        name="gpt2",
    )
    def test_pieces_pretokenize_like_whole_documents(
        self, data: tuple[str, list[str]], sizes: list[int], target: int, name: str
    ) -> None:
        """The safe cuts never change pretokenization, for every named pattern."""
        text, specials = data
        pat = regex.compile(NAMED_PATTERNS[name])
        splitter = corpus_io.Splitter(specials, safe_cuts=True, target_chars=target)
        pieces: list[str] = []
        for chunk in chunked(text, sizes):
            pieces.extend(splitter.feed(chunk))
        pieces.extend(splitter.finish())
        got = [tok for piece in pieces for tok in pat.findall(piece)]
        want = [tok for doc in split_documents(text, specials) for tok in pat.findall(doc)]
        assert got == want

    def test_custom_pattern_is_not_cut_inside_a_document(self) -> None:
        splitter = corpus_io.Splitter(["<s>"], safe_cuts=False, target_chars=2)
        pieces = [p for c in ["ab cd", " ef<", "s>gh"] for p in splitter.feed(c)]
        assert pieces + splitter.finish() == ["ab cd ef", "gh"]


class TestPieceCounter:
    @settings(max_examples=200, deadline=None)
    @given(
        text=st.one_of(
            st.text(alphabet=st.sampled_from(list("aZ 09'\t\n\r.,é\u00a0\x1c中!")), max_size=200),
            any_text,
        ),
        stretch=st.integers(1, 12),
        pattern=st.sampled_from([*sorted(NAMED_PATTERNS), r"\S+|\s+"]),
    )
    def test_findall_equals_regex(self, text: str, stretch: int, pattern: str) -> None:
        """The ASCII fast path and the cutting of mixed pieces change no pretoken."""
        pat_str = resolve_pattern(pattern)
        counter = train_count.PieceCounter(pat_str, compiled=False)
        with mock.patch.object(train_count.PieceCounter, "STRETCH_CHARS", stretch):
            assert counter.findall(text) == compile_pattern(pat_str)(text)


ROUTE_PATTERNS = [*sorted(NAMED_PATTERNS.values()), R50K_PATTERN, r"\S+|\s+"]


class TestCountingRoutes:
    """The compiled scanner's counts and the re/regex route's are the same."""

    @staticmethod
    def both_routes(pat_str: str, pieces: list[str]) -> list[tuple[dict[bytes, int], int]]:
        out = []
        for compiled in (True, False):
            counter = train_count.PieceCounter(pat_str, compiled=compiled)
            seen = counter.count(pieces)
            out.append((counter.byte_counts(), seen))
        return out

    @pytest.mark.parametrize("pat_str", ROUTE_PATTERNS)
    def test_corpora(self, fixtures_dir: Path, pat_str: str) -> None:
        """Every small corpus, as pieces cut by the trainer's splitter: identical counts."""
        texts = [p.read_text("utf-8") for p in sorted((fixtures_dir / "corpora").glob("*.txt"))]
        texts.append((fixtures_dir / "corpora" / "corpus.en").read_text("utf-8"))
        splitter = corpus_io.Splitter(["<|endoftext|>"], safe_cuts=True, target_chars=500)
        pieces = [p for text in texts for p in [*splitter.feed(text), *splitter.finish()]]
        compiled, fallback = self.both_routes(pat_str, pieces)
        assert compiled == fallback
        assert compiled[1] > 10_000

    @settings(max_examples=200, deadline=None)
    @given(
        pieces=st.lists(
            st.one_of(
                st.text(st.sampled_from(list("aZ 09'sS\u017f\t\n\r.,é\u00a0\x1c中!")), max_size=60),
                any_text,
            ),
            max_size=6,
        ),
        pat_str=st.sampled_from(ROUTE_PATTERNS),
    )
    def test_arbitrary_pieces(self, pieces: list[str], pat_str: str) -> None:
        """Arbitrary text: identical counts and pretoken totals."""
        compiled, fallback = self.both_routes(pat_str, pieces)
        assert compiled == fallback

    def test_lone_surrogate_is_refused_alike(self) -> None:
        """A lone surrogate is refused with the same error by both routes."""
        for compiled in (True, False):
            counter = train_count.PieceCounter(resolve_pattern("o200k"), compiled=compiled)
            with pytest.raises(InvalidInput, match="'\\\\udc80' \\(a lone surrogate\\)"):
                counter.count(["ok", "a\udc80b"])
                counter.byte_counts()

    @pytest.mark.parametrize("pattern", sorted(NAMED_PATTERNS))
    def test_training_gives_identical_merges(self, fixtures_dir: Path, pattern: str) -> None:
        """train_bpe with two counting processes: the same merges and stats on both routes."""
        path = fixtures_dir / "corpora" / "corpus.en"
        results = []
        for compiled in (True, False):
            with (
                mock.patch.object(train_count, "COMPILED", compiled),
                mock.patch.object(train_mod, "BATCH_CHARS", 16_384),
            ):
                results.append(train_bpe(path, 700, ["<|endoftext|>"], pattern=pattern, workers=2))
        ours, theirs = results
        assert ours.merges == theirs.merges
        assert ours.stats.pretokens == theirs.stats.pretokens
        assert ours.stats.distinct_pretokens == theirs.stats.distinct_pretokens
        assert ours.stats.workers == 2


# --- determinism, files, workers ----------------------------------------------------------------


class TestDeterminism:
    def test_workers_and_chunkings_agree(self, fixtures_dir: Path) -> None:
        """1 vs 2 workers, many small batches, text chunks vs file: identical results."""
        path = fixtures_dir / "corpora" / "corpus.en"
        text = path.read_text("utf-8")
        base = train_bpe(path, 600, ["<|endoftext|>"], workers=1)
        with (
            mock.patch.object(train_mod, "BATCH_CHARS", 4096),
            mock.patch.object(corpus_io, "TARGET_PIECE_CHARS", 2048),
            mock.patch.object(train_count, "START_METHOD", "spawn"),  # spawn-safe
        ):
            pooled = train_bpe(path, 600, ["<|endoftext|>"], workers=2)
            streamed = train_bpe(chunked(text, [1000, 7, 333]), 600, ["<|endoftext|>"], workers=2)
        assert pooled.stats.workers == 2
        for other in (pooled, streamed):
            assert other.merges == base.merges
            assert other.vocab == base.vocab
            assert other.stats.distinct_pretokens == base.stats.distinct_pretokens
            assert other.stats.pretokens == base.stats.pretokens
            assert other.stats.bytes_read == base.stats.bytes_read
        assert not multiprocessing.active_children()

    @pytest.mark.parametrize("method", ["fork", "spawn"])
    def test_pool_with_special_tokens_at_chunk_edges_agrees_with_naive(
        self, fixtures_dir: Path, method: str
    ) -> None:
        """Many documents split by special tokens, odd chunk sizes, a pool: brute-force merges."""
        stories = (fixtures_dir / "corpora" / "tinystories_sample.txt").read_text("utf-8")
        text = "<|endoftext|>".join([stories] * 12)
        with (
            mock.patch.object(train_mod, "BATCH_CHARS", 3000),
            mock.patch.object(corpus_io, "TARGET_PIECE_CHARS", 1000),
            mock.patch.object(train_count, "START_METHOD", method),
        ):
            result = train_bpe(chunked(text, [997, 13, 5]), 380, ["<|endoftext|>"], workers=3)
        expected, distinct = naive_train([text], 380, ["<|endoftext|>"])
        assert result.stats.workers == 3
        assert result.merges == expected
        assert result.stats.distinct_pretokens == distinct
        assert result.stats.documents == text.count("<|endoftext|>") + 1
        assert not multiprocessing.active_children()

    def test_list_of_files_keeps_documents_apart(self, tmp_path: Path) -> None:
        """Two files are two documents: no pretoken spans the file boundary."""
        (tmp_path / "a.txt").write_text("hello wor", "utf-8")
        (tmp_path / "b.txt").write_text("ld again", "utf-8")
        result = train_bpe([tmp_path / "a.txt", str(tmp_path / "b.txt")], 300)
        expected, _ = naive_train(["hello wor", "ld again"], 300, [])
        assert result.merges == expected
        assert result.stats.documents == 2
        assert result.stats.bytes_read == 17


# --- the trained result as an Encoding ----------------------------------------------------------


def apply_merges(piece: bytes, merges: list[Pair]) -> list[bytes]:
    """Tokenize one pretoken the way training did: apply the merges in learned order."""
    parts = [bytes([b]) for b in piece]
    for left, right in merges:
        i, out = 0, []
        while i < len(parts):
            if i + 1 < len(parts) and parts[i] == left and parts[i + 1] == right:
                out.append(left + right)
                i += 2
            else:
                out.append(parts[i])
                i += 1
        parts = out
    return parts


class TestToEncoding:
    def test_training_corpus_round_trips_and_matches_training_merges(
        self, fixtures_dir: Path
    ) -> None:
        """Encoding the training text decodes back, and each pretoken splits as training did."""
        text = (fixtures_dir / "corpora" / "tinystories_sample.txt").read_text("utf-8")
        result = train_bpe(iter([text]), 420, ["<|endoftext|>"])
        enc = result.to_encoding(name="tiny")
        assert enc.n_vocab == len(result.vocab)
        ids = enc.encode(text, allowed_special="all")
        assert enc.decode(ids) == text
        assert ids.count(result.special_tokens["<|endoftext|>"]) == text.count("<|endoftext|>")
        for token_id, token in result.vocab.items():
            assert enc.decode_single_token_bytes(token_id) == token
        pretokenize = compile_pattern(result.pattern)
        for doc in split_documents(text, ["<|endoftext|>"])[:3]:
            for piece in pretokenize(doc):
                got = [enc.decode_single_token_bytes(t) for t in enc.encode_ordinary(piece)]
                assert got == apply_merges(piece.encode("utf-8"), result.merges)

    def test_mergeable_ranks_are_the_vocab_without_specials(self) -> None:
        result = train_bpe(iter(["hug pug pun bun hugs"]), 270, ["<s>"])
        ranks = result.mergeable_ranks()
        assert ranks == {t: i for i, t in result.vocab.items() if i != result.special_tokens["<s>"]}


# --- progress, cancellation, validation ---------------------------------------------------------


def slow_chunks(text: str) -> Iterator[str]:
    """A stream that takes a moment to arrive, so the count phase lasts a few polls."""
    for i in range(0, len(text), 8192):
        time.sleep(0.004)
        yield text[i : i + 8192]


class TestProgressAndCancel:
    def test_progress_reports_each_phase(self, fixtures_dir: Path) -> None:
        calls: list[tuple[str, int, int]] = []
        path = fixtures_dir / "corpora" / "corpus.en"
        result = train_bpe(path, 400, progress=lambda *a: calls.append(a))
        phases = [c[0] for c in calls]
        assert phases.index("count") < phases.index("index") < phases.index("merge")
        assert ("count", path.stat().st_size, path.stat().st_size) in calls
        assert calls[-1] == ("merge", len(result.merges), 400 - 256)
        assert all(0 <= done <= total or total == 0 for _, done, total in calls)

    @pytest.mark.parametrize("phase", ["count", "merge"])
    def test_should_stop_cancels_quickly_and_leaves_no_workers(
        self, fixtures_dir: Path, phase: str
    ) -> None:
        """The first True from should_stop cancels; no worker process is left behind."""
        seen: list[str] = []
        asked_at: list[str] = []

        def progress(p: str, done: int, total: int) -> None:
            seen.append(p)

        def should_stop() -> bool:
            if phase in seen:
                asked_at.append(phase)
                return True
            return False

        text = (fixtures_dir / "corpora" / "corpus.en").read_text("utf-8")
        with (
            mock.patch.object(train_mod, "BATCH_CHARS", 2048),
            mock.patch.object(corpus_io, "TARGET_PIECE_CHARS", 1024),
            pytest.raises(Cancelled, match=phase),
        ):
            train_bpe(
                slow_chunks(text * 3), 5000, workers=2, progress=progress, should_stop=should_stop
            )
        assert len(asked_at) == 1
        assert not multiprocessing.active_children()


ORPHAN_SCRIPT = """
import multiprocessing, sys
import tokend.core.training.pretoken_count as train_count
from tokend.core.training.byte_bpe import train_bpe

def endless():
    while True:
        yield "some words here and there, again and again " * 8000

if __name__ == "__main__":
    train_count.START_METHOD = sys.argv[1]
    shown = []
    def progress(phase, done, total):
        kids = multiprocessing.active_children()
        if kids and not shown:
            shown.append(1)
            print(" ".join(str(k.pid) for k in kids), flush=True)
    train_bpe(endless(), 1000, workers=2, progress=progress)
"""


def process_gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")  # exited, maybe not reaped


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
class TestNothingLeftBehind:
    @pytest.mark.parametrize("method", ["fork", "spawn"])
    def test_workers_exit_when_the_trainer_is_killed(self, tmp_path: Path, method: str) -> None:
        """SIGKILL of the training process (no chance to clean up): its workers still exit."""
        script = tmp_path / "endless_train.py"
        script.write_text(ORPHAN_SCRIPT, "utf-8")
        proc = subprocess.Popen(
            [sys.executable, str(script), method], stdout=subprocess.PIPE, text=True
        )
        try:
            assert proc.stdout is not None
            pids = [int(p) for p in proc.stdout.readline().split()]
            assert pids
        finally:
            proc.kill()
            proc.wait()
        deadline = time.monotonic() + 10
        while not all(process_gone(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(process_gone(p) for p in pids)


class TestValidation:
    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"vocab_size": 257, "special_tokens": ["<a>", "<b>"]}, "below the minimum 258"),
            ({"vocab_size": 300, "special_tokens": "<a>"}, "list of strings"),
            ({"vocab_size": 300, "special_tokens": ["<a>", "<a>"]}, "listed twice"),
            ({"vocab_size": 300, "special_tokens": [""]}, "non-empty"),
            ({"vocab_size": 300, "pattern": "a*"}, "empty string"),
            ({"vocab_size": 300, "pattern": "(unclosed"}, "does not compile"),
            ({"vocab_size": 300, "workers": 0}, "workers"),
            ({"vocab_size": 300, "workers": 10_000}, "workers is 10000, over the limit of 256"),
            ({"vocab_size": "300"}, "vocab_size must be an int"),
        ],
    )
    def test_bad_arguments(self, kwargs: dict[str, object], message: str) -> None:
        with pytest.raises((InvalidInput, LimitExceeded), match=message):
            train_bpe(iter(["some text"]), **kwargs)  # type: ignore[arg-type]

    def test_missing_file_and_bad_utf8(self, tmp_path: Path) -> None:
        with pytest.raises(InvalidInput, match="does not exist"):
            train_bpe(tmp_path / "nope.txt", 300)
        bad = tmp_path / "bad.txt"
        bad.write_bytes(b"abc\xffdef")
        with pytest.raises(InvalidInput, match="not valid UTF-8 at byte 3"):
            train_bpe(bad, 300)
        with pytest.raises(InvalidInput, match="lone surrogate"):
            train_bpe(iter(["a\ud800b"]), 300)

    @pytest.mark.parametrize(("text", "message"), [
        ("word " * 2000, "cannot be a file"),  # too long for the OS: is_file() raises
        ("a\x00b", "does not exist"),  # is_file() says False
        ("word " * 30, "does not exist"),
    ])
    def test_text_passed_as_a_path_is_named_briefly(self, text: str, message: str) -> None:
        """A list of texts is a list of paths: the error says so and echoes a short prefix."""
        with pytest.raises(InvalidInput, match=message) as caught:
            train_bpe([text], 300)
        assert "iter([text])" in str(caught.value)
        assert len(str(caught.value)) < 300

    def test_custom_pattern_recorded(self) -> None:
        result = train_bpe(iter(["aa bb aa"]), 258, pattern=r"\S+|\s+")
        assert result.pattern == r"\S+|\s+"
        assert result.pattern_name is None
        named = train_bpe(iter(["aa bb aa"]), 258, pattern=NAMED_PATTERNS["cl100k"])
        assert named.pattern_name == "cl100k"
