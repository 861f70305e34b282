"""SentencePiece ``.model`` files -> :class:`PipelineTokenizer` with SentencePiece's semantics.

The file is a protobuf (``proto/tokend/v1/sentencepiece_model.proto``). subtle: core imports
no protobuf at import time; the generated module is imported only when a ``.model`` is read,
so ``import tokend.core`` stays free of it.
"""

from __future__ import annotations

import math
from typing import Any

from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.pipeline.added_tokens import AddedToken
from tokend.core.pipeline.charsmap import CharsMap
from tokend.core.pipeline.sentencepiece import (
    BYTE,
    CONTROL,
    NORMAL,
    SPACE,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    SentencePieceBPE,
    SentencePieceDecoder,
    SentencePieceNormalizer,
    SentencePieceUnigram,
    WordsBeforeSpace,
    splits_words,
)
from tokend.core.pipeline.tokenizer import PipelineTokenizer

UNIGRAM, BPE = 1, 2


def parse_sentencepiece(data: bytes, *, source: str = "tokenizer.model") -> Any:
    """The parsed ``ModelProto`` of a ``.model`` file (CorruptData if it is not one)."""
    # subtle: imported here, not at the top: core must not load protobuf on import.
    from google.protobuf.message import DecodeError  # noqa: PLC0415

    from tokend.v1 import sentencepiece_model_pb2 as spm  # noqa: PLC0415

    proto = spm.ModelProto()
    try:
        proto.ParseFromString(data)
    except DecodeError as exc:
        raise CorruptData(f"{source}: not a SentencePiece model ({exc})") from None
    if not proto.pieces:
        raise CorruptData(f"{source}: not a SentencePiece model (no pieces)")
    return proto


def _check_pieces(
    pieces: list[tuple[str, float, int]], *, byte_fallback: bool, source: str
) -> None:
    """The checks SentencePiece itself makes when it loads a model (ModelInterface)."""
    seen: set[str] = set()
    unknown = 0
    byte_pieces: set[str] = set()
    for i, (piece, score, kind) in enumerate(pieces):
        where = f"{source}: pieces[{i}]"
        if not piece:
            raise CorruptData(f"{where} is empty")
        if piece in seen:
            raise CorruptData(f"{where} {piece!r:.40} is defined twice")
        if math.isnan(score):
            raise CorruptData(f"{where} has a NaN score")
        seen.add(piece)
        unknown += kind == UNKNOWN
        if kind == BYTE:
            if not byte_fallback:
                raise CorruptData(f"{where} is a byte piece, but byte_fallback is off")
            byte_pieces.add(piece)
        elif kind not in (NORMAL, CONTROL, USER_DEFINED, UNUSED, UNKNOWN):
            raise CorruptData(f"{where} has unknown type {kind}")
    if unknown != 1:
        raise CorruptData(f"{source}: {unknown} pieces of type UNKNOWN; exactly one is needed")
    if byte_fallback and byte_pieces != {f"<0x{b:02X}>" for b in range(256)}:
        raise CorruptData(f"{source}: byte_fallback needs the 256 pieces <0x00> .. <0xFF>")


def load_sentencepiece(
    data: bytes, *, name: str, source: str = "tokenizer.model", cache_entries: int | None = None
) -> PipelineTokenizer:
    """Build the tokenizer a ``.model`` file describes; refuse what would change the ids."""
    proto = parse_sentencepiece(data, source=source)
    trainer, norm = proto.trainer_spec, proto.normalizer_spec
    if trainer.treat_whitespace_as_suffix:
        raise InvalidInput(f"{source}: trainer_spec.treat_whitespace_as_suffix is not supported")
    if proto.HasField("denormalizer_spec") and proto.denormalizer_spec.precompiled_charsmap:
        raise InvalidInput(f"{source}: denormalizer_spec (a decoding charsmap) is not supported")
    pieces = [(p.piece, float(p.score), int(p.type)) for p in proto.pieces]
    _check_pieces(pieces, byte_fallback=trainer.byte_fallback, source=source)
    model_type = int(trainer.model_type)
    model: SentencePieceBPE | SentencePieceUnigram
    if model_type == BPE:
        if any(kind == UNUSED for _p, _s, kind in pieces):
            raise InvalidInput(f"{source}: pieces: BPE with UNUSED pieces is not supported")
        model = SentencePieceBPE(pieces, byte_fallback=trainer.byte_fallback)
    elif model_type == UNIGRAM:
        model = SentencePieceUnigram(pieces, byte_fallback=trainer.byte_fallback)
    else:
        raise InvalidInput(
            f"{source}: trainer_spec.model_type {model_type} (WORD/CHAR) is not supported"
        )
    user_defined = [p for p, _s, kind in pieces if kind == USER_DEFINED]
    charsmap = (
        CharsMap(norm.precompiled_charsmap, source=f"{source}: precompiled_charsmap")
        if norm.precompiled_charsmap else None
    )
    normalizer = SentencePieceNormalizer(
        charsmap,
        add_dummy_prefix=norm.add_dummy_prefix,
        remove_extra_whitespaces=norm.remove_extra_whitespaces,
        escape_whitespaces=norm.escape_whitespaces,
        user_defined=user_defined,
    )
    known = [p for p, _s, kind in pieces if kind in (NORMAL, USER_DEFINED, UNUSED)]
    # Cutting into words is exact for BPE (no merge crosses the cut); Unigram's float32 path
    # scores run over the whole text (see SentencePieceUnigram), so it is never cut.
    words_safe = (model_type == BPE and norm.escape_whitespaces and SPACE in known
                  and splits_words(known))
    unk_piece = next(p for p, _s, kind in pieces if kind == UNKNOWN)
    decoder = SentencePieceDecoder(
        {p: kind for p, _s, kind in reversed(pieces)},
        strip_leading_space=norm.add_dummy_prefix or norm.remove_extra_whitespaces,
        remove_extra_whitespaces=norm.remove_extra_whitespaces,
        unk_surface=trainer.unk_surface,
        unk_piece=unk_piece,
    )
    # Control pieces (<s>, [INST]...) never come out of SentencePiece's encoder; tokend serves
    # them as special tokens, matched only where a request allows them.
    specials = [
        AddedToken(i, p, special=True, normalized=False)
        for i, (p, _s, kind) in enumerate(pieces) if kind == CONTROL
    ]
    kwargs: dict[str, Any] = {} if cache_entries is None else {"cache_entries": cache_entries}
    return PipelineTokenizer(
        name,
        model=model,
        normalizer=normalizer,
        pre_tokenizer=WordsBeforeSpace() if words_safe else None,
        decoder=decoder,
        added_tokens=specials,
        **kwargs,
    )


__all__ = ["BYTE", "load_sentencepiece", "parse_sentencepiece"]
