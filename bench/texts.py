"""Benchmark texts shared by the bench scripts: shakespeare and a mixed multilingual text."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "corpora"


def load_shakespeare() -> str:
    """The shakespeare corpus from ../shared (or the gzipped test fixture as a fallback)."""
    path = SHARED / "shakespeare.txt"
    if path.exists():
        return path.read_text(encoding="utf-8")
    return gzip.decompress(
        (REPO / "tests/fixtures/corpora/shakespeare.txt.gz").read_bytes()
    ).decode()


def build_mixed(target_bytes: int, seed: int = 1) -> str:
    """Code, multilingual prose, numbers and whitespace runs, shuffled in blocks."""
    rng = random.Random(seed)
    code = [p.read_text(encoding="utf-8") for p in sorted((REPO / "core").glob("*.py"))]
    fixtures = REPO / "tests" / "fixtures" / "corpora"
    prose = [
        (fixtures / name).read_text(encoding="utf-8").replace("<|endoftext|>", "")
        for name in ("german.txt", "address.txt", "tinystories_sample.txt")
    ]
    multilingual = [
        "日本語のテキストとカタカナ、ひらがな。東京都の天気は晴れです。",
        "中文文本测试，包括标点符号。北京是中国的首都。",
        "한국어 텍스트입니다. 서울은 한국의 수도입니다.",
        "العربية نص تجريبي مع أرقام ١٢٣ وعلامات الترقيم.",
        "हिन्दी पाठ का परीक्षण है। भारत की राजधानी नई दिल्ली है।",
        "Ελληνικά κείμενα και Русский текст, ЗАГЛАВНЫЕ буквы и цифры 2024.",
        "Grüße aus München! Straße, Fußgänger, Ärger, Öl, Übel — «quotes» … ok",
        "emoji 👨‍👩‍👧‍👦 family 🏳️‍🌈 flag 👍🏽 thumbs 🇯🇵 jp 😀😃😄 done",
    ]
    blocks: list[str] = []
    size = 0
    while size < target_bytes:
        kind = rng.random()
        if kind < 0.35:
            src = rng.choice(code)
            start = rng.randrange(max(1, len(src) - 3000))
            block = src[start : start + rng.randint(500, 3000)]
        elif kind < 0.55:
            block = rng.choice(prose)
        elif kind < 0.8:
            block = " ".join(rng.choice(multilingual) for _ in range(rng.randint(1, 6)))
        elif kind < 0.92:
            block = " ".join(
                rng.choice(
                    [
                        str(rng.randint(0, 10**9)),
                        f"{rng.random():.6f}",
                        f"{rng.randint(1, 31):02d}/{rng.randint(1, 12):02d}/2024",
                        f"0x{rng.getrandbits(32):08x}",
                    ]
                )
                for _ in range(rng.randint(5, 40))
            )
        else:
            block = "".join(
                rng.choice(["    ", "\t", "\n", "\n\n", "  ", " \n", "\r\n", "        x = 1\n"])
                for _ in range(rng.randint(5, 60))
            )
        blocks.append(block + rng.choice(["\n", " ", "\n\n", ""]))
        size += len(block.encode())
    # the sources mention special tokens; keep them ordinary text for every library
    return "".join(blocks).replace("<|", "< |")
