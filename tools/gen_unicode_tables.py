"""Generate core/engine/_unicode_tables.h: per-code-point class bits for the compiled scanner.

The compiled pretokenizer (core/engine/_pretok.pxi) must split text exactly like the ``regex``
module running ``tokend.core.engine.pretokenize.TIKTOKEN_COMPATIBLE``. So the tables are not
taken from Unicode data files but probed from that very engine, with the very class expressions
those patterns are built from: every code point 0..0x10FFFF but the surrogates (never in valid
UTF-8) is tested against each class. A test regenerates the header and diffs it with the
committed one, so the tables cannot drift from the installed ``regex`` module.

The script also checks the relations between the classes that the scanner's shortcuts rely on
(e.g. "letter" and "punctuation" never overlap) and stops if one fails.

    .venv/bin/python tools/gen_unicode_tables.py [--out core/engine/_unicode_tables.h]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import regex

from tokend.core.engine import pretokenize

HEADER = Path(__file__).resolve().parent.parent / "core" / "engine" / "_unicode_tables.h"
COMMAND = ".venv/bin/python tools/gen_unicode_tables.py"
MAX_CODE_POINT = 0x10FFFF
SURROGATES = range(0xD800, 0xE000)

# bit name -> (value, the class expression probed, what it is in the patterns)
CLASSES: dict[str, tuple[int, str, str]] = {
    "TOK_WS": (1, r"\s", r"\s (White_Space)"),
    "TOK_L": (2, pretokenize._L, r"\p{L} narrowed to tiktoken's Unicode data"),
    "TOK_N": (4, pretokenize._N, r"\p{N} narrowed"),
    "TOK_X": (8, pretokenize._NOT_WS_L_N, r"[^\s\p{L}\p{N}] (narrowed L, N)"),
    "TOK_P": (16, pretokenize._NOT_CRLF_L_N, r"[^\r\n\p{L}\p{N}] (narrowed L, N)"),
    "TOK_UP": (32, pretokenize._UP, r"o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] narrowed"),
    "TOK_LO": (64, pretokenize._LO, r"o200k's [\p{Ll}\p{Lm}\p{Lo}\p{M}] narrowed"),
}
# The letters of the contractions ('s 't 're 've 'm 'll 'd): which code points (?i) matches.
CONTRACTION_LETTERS = "sdmtlvre"


def probe_all() -> tuple[bytearray, dict[int, str]]:
    """Class bits of every code point, and the code points matching each letter under (?i)."""
    code_points = [c for c in range(MAX_CODE_POINT + 1) if c not in SURROGATES]
    text = "".join(map(chr, code_points))
    bits = bytearray(MAX_CODE_POINT + 1)
    for value, expr, _ in CLASSES.values():
        # subtle: every class is one character wide, so the matches of finditer over all code
        # points in one string are exactly the code points in the class (one C-speed pass
        # instead of a million fullmatch calls).
        for m in regex.finditer(expr, text):
            bits[ord(m.group())] |= value
    folds: dict[int, str] = {}
    for m in regex.finditer(f"(?i:[{CONTRACTION_LETTERS}])", text):
        letters = [x for x in CONTRACTION_LETTERS if regex.fullmatch(f"(?i:{x})", m.group())]
        if len(letters) != 1:
            sys.exit(f"U+{ord(m.group()):04X} matches {letters} under (?i), not one letter")
        folds[ord(m.group())] = letters[0]
    return bits, folds


def check_relations(bits: bytearray) -> None:
    """Stop unless the class relations the scanner relies on hold for every code point."""
    v = {name: value for name, (value, _, _) in CLASSES.items()}
    special = (0x0A, 0x0D, 0x20)
    # The rules depend only on a code point's bits and on whether it is CR, LF or space, so
    # one example of each distinct bits value stands for the rest (surrogates left out).
    examples: dict[int, int] = {}
    for lo, hi in ((0, 0x0A), (0x0B, 0x0D), (0x0E, 0x20), (0x21, 0xD800), (0xE000, len(bits))):
        for b in set(bits[lo:hi]):
            examples.setdefault(b, bits.index(b, lo, hi))
    for cp in sorted(examples.values()) + list(special):
        b = bits[cp]

        def has(name: str, b: int = b) -> bool:
            return bool(b & v[name])

        crlf = cp in (0x0A, 0x0D)
        rules = {
            "X is neither \\s nor L nor N": has("TOK_X")
            == (not has("TOK_WS") and not has("TOK_L") and not has("TOK_N")),
            "P is neither CR/LF nor L nor N": has("TOK_P")
            == (not crlf and not has("TOK_L") and not has("TOK_N")),
            "L is UP or LO": not has("TOK_L") or has("TOK_UP") or has("TOK_LO"),
            "\\s is no letter, digit or mark": not has("TOK_WS")
            or not (b & (v["TOK_L"] | v["TOK_N"] | v["TOK_UP"] | v["TOK_LO"])),
            "N is no UP or LO": not has("TOK_N") or not (b & (v["TOK_UP"] | v["TOK_LO"])),
            "a non-letter UP or LO (a mark) is X": has("TOK_L")
            or not (b & (v["TOK_UP"] | v["TOK_LO"]))
            or has("TOK_X"),
            "ASCII space and CR/LF are \\s": cp not in special or has("TOK_WS"),
        }
        broken = [rule for rule, ok in rules.items() if not ok]
        if broken:
            sys.exit(f"U+{cp:04X} breaks the scanner's assumption: {broken[0]}")


def two_stage(bits: bytearray, shift: int) -> tuple[list[int], list[bytes]]:
    """Split the table into blocks of 2**shift code points; return (block index per block
    number, distinct blocks)."""
    size = 1 << shift
    index: dict[bytes, int] = {}
    stage1: list[int] = []
    for start in range(0, len(bits), size):
        block = bytes(bits[start : start + size])
        stage1.append(index.setdefault(block, len(index)))
    return stage1, list(index)


def c_array(ctype: str, name: str, values: list[int] | bytes, per_line: int = 24) -> str:
    """A static const C array, ``per_line`` values a line."""
    items = [str(x) for x in values]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    body = ",\n    ".join(lines)
    return f"static const {ctype} {name}[{len(items)}] = {{\n    {body}\n}};\n"


def render(bits: bytearray, folds: dict[int, str]) -> str:
    """The header text."""
    # Pick the block size that makes both stages smallest.
    best = min(range(5, 11), key=lambda s: _stage_bytes(bits, s))
    stage1, blocks = two_stage(bits, best)
    stage1_type = "unsigned char" if len(blocks) <= 256 else "unsigned short"
    out = [
        # No regex version in the text: a new regex release with the same Unicode data
        # gives the same tables, and the freshness test must fail only when the tables change.
        "/* Generated by tools/gen_unicode_tables.py by probing the regex module; do not edit.\n",
        f"   Regenerate with: {COMMAND} */\n",
        "#ifndef TOKEND_UNICODE_TABLES_H\n#define TOKEND_UNICODE_TABLES_H\n\n",
        "/* Class bits of a code point, each probed with the class expression of\n"
        "   tokend.core.engine.pretokenize.TIKTOKEN_COMPATIBLE named here: */\n",
    ]
    out += [f"#define {name} {value}  /* {doc} */\n" for name, (value, _, doc) in CLASSES.items()]
    out += [
        "\n/* bits of U+0000..U+007F */\n",
        c_array("unsigned char", "tok_ascii_bits", bytes(bits[:128]), 16),
        f"\n/* bits of code point c: tok_stage2[(tok_stage1[c >> {best}] << {best}) "
        f"+ (c & {(1 << best) - 1})] (surrogates: 0) */\n",
        f"#define TOK_SHIFT {best}\n#define TOK_MASK {(1 << best) - 1}\n",
        c_array(stage1_type, "tok_stage1", stage1),
        c_array("unsigned char", "tok_stage2", b"".join(blocks), 32),
        '\n/* The contraction letter (one of "' + CONTRACTION_LETTERS + '") a code point '
        "matches under (?i), or 0 */\n",
        c_array(
            "unsigned char", "tok_fold_ascii", [ord(folds.get(c, "\0")) for c in range(128)], 16
        ),
    ]
    others = sorted(c for c in folds if c >= 128)
    out += [
        f"#define TOK_FOLD_OTHERS {len(others)}\n",
        c_array("unsigned int", "tok_fold_other_cp", others or [0]),
        c_array("unsigned char", "tok_fold_other_letter", [ord(folds[c]) for c in others] or [0]),
        "\n#endif\n",
    ]
    return "".join(out)


def _stage_bytes(bits: bytearray, shift: int) -> int:
    stage1, blocks = two_stage(bits, shift)
    return len(stage1) * (1 if len(blocks) <= 256 else 2) + len(blocks) * (1 << shift)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HEADER, help="header to write")
    args = parser.parse_args(argv)
    bits, folds = probe_all()
    check_relations(bits)
    text = render(bits, folds)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(text, encoding="ascii")
    tmp.replace(args.out)
    print(f"wrote {args.out} ({len(text)} bytes)")


if __name__ == "__main__":
    main()
