"""Test helpers: one tokenizer built twice, as a tokend Encoding and as a transformers tokenizer.

GPT-2's published vocab.json + merges.txt (tests/fixtures/encodings) load into HF ``tokenizers``
by its own BPE loader and into tokend from r50k_base's ranks (the same tables), and both get
the same extra special tokens: the framing tokens of the chat templates under test. transformers
then renders a template with ``apply_chat_template`` and encodes it, so a test can compare the
rendered text and the count with tokend's for one and the same tokenizer.
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path
from typing import Any

from tokend.core import Encoding, get_encoding
from tokend.core.formats.oniguruma import to_oniguruma

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ROOT = FIXTURES.parents[1]
TRL_TEMPLATES = ROOT / ".test-data" / "trl-1.16.0" / "chat_templates"
HINT = "run `bash scripts/fetch-test-data.sh` (scripts/test.sh does)"

CHAT_SPECIALS = (
    "<s>", "</s>", "<unk>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_CALLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[IMG]", "[THINK]", "[/THINK]",
    "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
    "<|im_start|>", "<|im_end|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>",
    "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>",
    "<|start|>", "<|message|>", "<|channel|>", "<|call|>", "<|return|>", "<|constrain|>",
)


def template(name: str) -> str:
    """A real model's chat template as trl 1.16.0 ships it (fetched, sha256-checked)."""
    path = TRL_TEMPLATES / f"{name}.jinja"
    assert path.is_file(), f"{path} is missing: {HINT}"
    return path.read_text(encoding="utf-8")


@functools.cache
def chat_encoding() -> Encoding:
    """r50k_base plus CHAT_SPECIALS (ids from 50257 on, <|endoftext|> kept at 50256)."""
    base = get_encoding("r50k_base")
    specials = dict(base.special_tokens)
    for i, token in enumerate(CHAT_SPECIALS):
        specials[token] = 50257 + i
    return Encoding("gpt2-chat", pat_str=base.pat_str, mergeable_ranks=base.mergeable_ranks,
                    special_tokens=specials)


def hf_chat_tokenizer(**special_tokens_map: str) -> Any:
    """transformers' tokenizer of the same vocabulary, built from GPT-2's published files."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    enc_dir = FIXTURES / "encodings"
    vocab = json.loads(gzip.decompress((enc_dir / "gpt2_vocab.json.gz").read_bytes()))
    lines = gzip.decompress((enc_dir / "gpt2_merges.txt.gz").read_bytes()).decode().splitlines()
    merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#")]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=True))
    # GPT-2's regex as a Split (HF's built-in ByteLevel regex differs from it on some
    # whitespace runs, e.g. "\n\n## x"), then bytes to printable characters.
    pattern = to_oniguruma(get_encoding("r50k_base").pat_str)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(CHAT_SPECIALS))
    return PreTrainedTokenizerFast(tokenizer_object=tok, **special_tokens_map)


def hf_ids(hf: Any, messages: list[dict[str, Any]], chat_template: str, **kwargs: Any) -> list[int]:
    """transformers' apply_chat_template + encode, as ids."""
    out = hf.apply_chat_template(messages, chat_template=chat_template, tokenize=True,
                                 add_generation_prompt=True, **kwargs)
    ids = out["input_ids"] if hasattr(out, "keys") else out
    return list(ids)
