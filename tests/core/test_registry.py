"""The registry: names, publish/resolve/load, aliases, delete, corruption and generation.

Every test taking ``reg`` runs twice: on a local folder and on an S3 prefix of a real SeaweedFS
(``backend`` fixture in tests/conftest.py); ``raw`` tampers with the stored files of either.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from registry_backends import Backend, LocalRaw, S3Raw

from tokend.core.errors import (
    AlreadyExists,
    CorruptData,
    FailedPrecondition,
    InvalidInput,
    InvalidName,
    UnknownTokenizer,
)
from tokend.core.formats import parse_tiktoken_bpe
from tokend.core.names import ParsedRef, check_alias, check_name, parse_ref
from tokend.core.patterns import GPT2_PATTERN, O200K_PATTERN
from tokend.core.registry import Registry

BAD_NAMES = [
    "",
    "../x",
    "..",
    ".",
    "...",
    "/abs",
    "a/b",
    "a\\b",
    "-lead",
    ".hidden",
    "_under",
    "Upper",
    "a" * 65,
    "tok\n",
    "tok\x00",
    "t ok",
    "tok@",
    "\u0430bc",  # Cyrillic a
    "\uff41bc",  # fullwidth a
    "ta\u0301",  # combining accent
    "tok\u200b",  # zero-width space
    "caf\u00e9",
]


def small_ranks(extra: int = 20) -> dict[bytes, int]:
    """All 256 single bytes plus ``extra`` two-byte merges: a valid little rank table."""
    ranks = {bytes([i]): i for i in range(256)}
    letters = b"abcdefghijklmnopqrstuvwxyz"
    for i in range(extra):
        ranks[bytes([letters[i % 26], letters[(i * 7 + 3) % 26]]) + b"#" * (i // 26)] = 256 + i
    return ranks


@pytest.fixture
def reg(backend: Backend) -> Registry:
    return backend.open()


@pytest.fixture
def raw(backend: Backend) -> LocalRaw | S3Raw:
    return backend.raw


@pytest.fixture
def local(tmp_path: Path) -> Registry:
    """A folder registry, for tests of the local store's own machinery (staging, flocks)."""
    return Registry(tmp_path / "reg", include_builtins=False)


def publish(reg: Registry, name: str = "tok", extra: int = 20) -> int:
    info = reg.publish(
        name,
        ranks=small_ranks(extra),
        pat_str=GPT2_PATTERN,
        special_tokens={"<|endoftext|>": 256 + extra},
        training={"vocab_size": 257 + extra},
        corpus={"sha256": "0" * 64, "bytes": 123},
    )
    return info.version


class TestNames:
    @pytest.mark.parametrize("name", BAD_NAMES)
    def test_bad_names_are_refused_naming_the_rule(self, name: str) -> None:
        """Every hostile or malformed name is InvalidName, and the message states the rule."""
        with pytest.raises(InvalidName, match=r"\[a-z0-9\]"):
            check_name(name)

    @pytest.mark.parametrize("name", ["a", "0", "tok", "my-tok.v2", "o200k_base", "a" * 64])
    def test_good_names(self, name: str) -> None:
        assert check_name(name) == name

    @pytest.mark.parametrize("alias", ["123", "latest", "", "../x", "Stable"])
    def test_bad_aliases(self, alias: str) -> None:
        """Aliases may not be all digits (that is a version) nor the reserved 'latest'."""
        with pytest.raises(InvalidName):
            check_alias(alias)

    def test_parse_every_reference_form(self) -> None:
        assert parse_ref("tok") == ParsedRef("tok", version=None, alias=None)
        assert parse_ref("tok@7") == ParsedRef("tok", version=7, alias=None)
        assert parse_ref("tok@stable") == ParsedRef("tok", version=None, alias="stable")
        assert parse_ref("tok@latest") == ParsedRef("tok", version=None, alias="latest")

    @pytest.mark.parametrize(
        "ref", ["tok@0", "tok@07", "tok@-1", "tok@", "@1", "tok@1@2", "tok@Ab"]
    )
    def test_bad_references(self, ref: str) -> None:
        with pytest.raises(InvalidName):
            parse_ref(ref)

    @pytest.mark.parametrize("name", BAD_NAMES)
    def test_registry_refuses_bad_names_everywhere(
        self, reg: Registry, raw: LocalRaw | S3Raw, name: str
    ) -> None:
        """Publishing, resolving, aliasing and deleting a hostile name never touch storage."""
        before = raw.keys()
        with pytest.raises(InvalidName):
            reg.publish(name, ranks=small_ranks(), pat_str=GPT2_PATTERN, special_tokens={})
        with pytest.raises(InvalidName):
            reg.resolve(name)
        with pytest.raises(InvalidName):
            reg.set_alias(name, "stable", 1)
        with pytest.raises(InvalidName):
            reg.delete(name)
        assert raw.keys() == before


class TestPublish:
    def test_publish_then_load_round_trips(self, reg: Registry) -> None:
        """What is published is what load_data returns, hash-checked."""
        publish(reg)
        data = reg.load_data("tok")
        assert data.ranks == small_ranks()
        assert data.pat_str == GPT2_PATTERN
        assert data.special_tokens == {"<|endoftext|>": 276}
        assert data.resolved.ref == "tok@1"

    def test_manifest_records_everything(self, reg: Registry, raw: LocalRaw | S3Raw) -> None:
        publish(reg)
        manifest = reg.manifest("tok@1")
        ranks_file = raw.read("tok/1/ranks.tiktoken")
        assert manifest["files"]["ranks.tiktoken"]["bytes"] == len(ranks_file)
        assert manifest["pattern"] == GPT2_PATTERN
        assert manifest["pattern_name"] == "gpt2"
        assert manifest["n_vocab"] == 277
        assert manifest["training"] == {"vocab_size": 277}
        assert manifest["corpus"] == {"sha256": "0" * 64, "bytes": 123}
        assert manifest["tool"]["name"] == "tokend"
        assert manifest["format_version"] == 1
        assert parse_tiktoken_bpe(ranks_file) == small_ranks()

    def test_versions_increase(self, reg: Registry) -> None:
        assert [publish(reg) for _ in range(3)] == [1, 2, 3]
        assert reg.resolve("tok").version == 3
        assert reg.resolve("tok@latest").version == 3
        assert reg.resolve("tok@2").version == 2

    def test_versions_never_reused_after_delete(self, reg: Registry) -> None:
        """Deleting the latest (even every) version never frees its number."""
        publish(reg)
        publish(reg)
        reg.delete("tok@2")
        assert publish(reg) == 3
        reg.delete("tok", all_versions=True)
        with pytest.raises(UnknownTokenizer):
            reg.resolve("tok")
        assert publish(reg) == 4

    def test_version_counter_survives_counter_loss(self, local: Registry) -> None:
        """Without its counter file, the highest directory still bounds the next version."""
        publish(local)
        publish(local)
        (Path(local.location) / "tok" / "counter.json").unlink()
        assert publish(local) == 3

    @pytest.mark.parametrize(
        ("ranks", "specials", "match"),
        [
            ({}, {}, "empty"),
            ({b"a": 0, b"b": 0}, {}, "rank 0"),
            ({b"a": 0, b"": 1}, {}, "non-empty"),
            ({b"a": -1}, {}, "non-negative"),
            ({b"a": 0}, {"<s>": 0}, "already used"),
            ({b"a": 0}, {"": 1}, "non-empty"),
        ],
    )
    def test_invalid_contents_are_refused(
        self, reg: Registry, ranks: dict[bytes, int], specials: dict[str, int], match: str
    ) -> None:
        with pytest.raises(InvalidInput, match=match):
            reg.publish("tok", ranks=ranks, pat_str=GPT2_PATTERN, special_tokens=specials)
        assert reg.list() == []

    def test_bad_pattern_is_refused(self, reg: Registry) -> None:
        with pytest.raises(InvalidInput, match="compile"):
            reg.publish("tok", ranks=small_ranks(), pat_str="(", special_tokens={})

    def test_explicit_n_vocab_is_checked(self, reg: Registry) -> None:
        with pytest.raises(InvalidInput, match="explicit_n_vocab"):
            reg.publish(
                "tok",
                ranks=small_ranks(),
                pat_str=GPT2_PATTERN,
                special_tokens={},
                explicit_n_vocab=5,
            )
        info = reg.publish(
            "tok",
            ranks=small_ranks(),
            pat_str=O200K_PATTERN,
            special_tokens={},
            explicit_n_vocab=276,
        )
        assert reg.load_data(info.ref).explicit_n_vocab == 276

    def test_unserializable_training_metadata_is_refused(self, reg: Registry) -> None:
        with pytest.raises(InvalidInput, match="training"):
            reg.publish(
                "tok",
                ranks=small_ranks(),
                pat_str=GPT2_PATTERN,
                special_tokens={},
                training={"x": object()},
            )

    def test_list(self, reg: Registry) -> None:
        publish(reg, "b")
        publish(reg, "a")
        publish(reg, "a")
        reg.set_alias("a", "stable", 1)
        infos = {i.name: i for i in reg.list()}
        assert set(infos) == {"a", "b"}
        assert infos["a"].versions == (1, 2)
        assert infos["a"].latest == 2
        assert infos["a"].aliases == {"stable": 1}
        assert not infos["a"].builtin

    def test_staging_is_empty_after_publish(self, local: Registry) -> None:
        publish(local)
        assert list((Path(local.location) / ".staging").iterdir()) == []

    def test_a_publish_stores_its_files_and_nothing_else(
        self, reg: Registry, raw: LocalRaw | S3Raw
    ) -> None:
        """After a publish only the version's files, its counter and the stamp are stored."""
        publish(reg)
        version_keys = [k for k in raw.keys() if k.startswith("tok/1/")]  # noqa: SIM118 (not a dict)
        assert {k.rsplit("/", 1)[1] for k in version_keys} <= {
            "manifest.json", "ranks.tiktoken", ".reserved"
        }
        assert {"tok/1/manifest.json", "tok/1/ranks.tiktoken"} <= set(version_keys)


class TestAliases:
    def test_alias_resolves_and_moves(self, reg: Registry, raw: LocalRaw | S3Raw) -> None:
        publish(reg)
        publish(reg)
        reg.set_alias("tok", "stable", 1)
        assert reg.resolve("tok@stable").version == 1
        reg.set_alias("tok", "stable", 2)
        assert reg.resolve("tok@stable").version == 2
        assert json.loads(raw.read("tok/aliases.json")) == {"stable": 2}

    def test_alias_to_missing_version_is_refused(self, reg: Registry) -> None:
        publish(reg)
        with pytest.raises(UnknownTokenizer, match="versions 1"):
            reg.set_alias("tok", "stable", 2)
        with pytest.raises(UnknownTokenizer):
            reg.set_alias("nope", "stable", 1)

    def test_unknown_alias_lists_the_existing_ones(self, reg: Registry) -> None:
        publish(reg)
        reg.set_alias("tok", "canary", 1)
        with pytest.raises(UnknownTokenizer, match="canary"):
            reg.resolve("tok@stable")

    @pytest.mark.parametrize("alias", [*BAD_NAMES, "42", "latest"])
    def test_hostile_aliases_are_refused(
        self, reg: Registry, raw: LocalRaw | S3Raw, alias: str
    ) -> None:
        """No alias that breaks the rule (or is a version, or 'latest') is ever written."""
        publish(reg)
        with pytest.raises(InvalidName):
            reg.set_alias("tok", alias, 1)
        assert not raw.exists("tok/aliases.json")

    def test_remove_alias(self, reg: Registry) -> None:
        publish(reg)
        reg.set_alias("tok", "stable", 1)
        reg.remove_alias("tok", "stable")
        with pytest.raises(UnknownTokenizer):
            reg.resolve("tok@stable")
        with pytest.raises(UnknownTokenizer):
            reg.remove_alias("tok", "stable")


class TestDelete:
    def test_delete_refuses_aliased_versions_naming_the_alias(self, reg: Registry) -> None:
        publish(reg)
        publish(reg)
        reg.set_alias("tok", "stable", 1)
        with pytest.raises(FailedPrecondition, match="tok@stable"):
            reg.delete("tok@1")
        with pytest.raises(FailedPrecondition, match="stable"):
            reg.delete("tok@stable")
        with pytest.raises(FailedPrecondition, match="stable"):
            reg.delete("tok", all_versions=True)
        assert reg.resolve("tok@1").version == 1
        reg.delete("tok@2")
        assert reg.resolve("tok").version == 1

    def test_delete_bare_name_deletes_the_latest(self, reg: Registry) -> None:
        publish(reg)
        publish(reg)
        assert reg.delete("tok") == [2]
        assert reg.resolve("tok").version == 1

    def test_delete_unknown(self, reg: Registry) -> None:
        with pytest.raises(UnknownTokenizer):
            reg.delete("nope@1")

    def test_deleted_version_is_gone(self, reg: Registry, raw: LocalRaw | S3Raw) -> None:
        publish(reg)
        publish(reg)
        reg.delete("tok@1")
        with pytest.raises(UnknownTokenizer, match="versions: 2"):
            reg.resolve("tok@1")
        # Only the version marker of an object store stays (it keeps the number taken).
        left = [k for k in raw.keys() if k.startswith("tok/1/")]  # noqa: SIM118 (not a dict)
        assert left in ([], ["tok/1/.reserved"])


class TestCorruption:
    RANKS = "tok/1/ranks.tiktoken"

    def test_flipped_byte_is_corrupt_and_rest_usable(
        self, reg: Registry, raw: LocalRaw | S3Raw
    ) -> None:
        publish(reg)
        publish(reg)
        data = bytearray(raw.read(self.RANKS))
        data[10] ^= 0x01
        raw.write(self.RANKS, bytes(data))
        with pytest.raises(CorruptData, match=r"tok/1/ranks\.tiktoken: sha256"):
            reg.load_data("tok@1")
        assert reg.load_data("tok@2").ranks == small_ranks()
        problems = reg.verify()
        assert [p.ref for p in problems] == ["tok@1"]
        assert "sha256" in problems[0].message

    def test_truncated_file_is_corrupt(self, reg: Registry, raw: LocalRaw | S3Raw) -> None:
        publish(reg)
        raw.write(self.RANKS, raw.read(self.RANKS)[:100])
        with pytest.raises(CorruptData, match="truncated"):
            reg.load_data("tok")
        assert [p.ref for p in reg.verify()] == ["tok@1"]

    def test_missing_file_is_corrupt(self, reg: Registry, raw: LocalRaw | S3Raw) -> None:
        publish(reg)
        raw.delete(self.RANKS)
        with pytest.raises(CorruptData, match="missing"):
            reg.load_data("tok")

    @pytest.mark.parametrize("content", [b"", b"{", b"[]", b'{"format_version": 1}', b"\xff\xfe"])
    def test_bad_manifest_is_corrupt(
        self, reg: Registry, raw: LocalRaw | S3Raw, content: bytes
    ) -> None:
        publish(reg)
        publish(reg, "other")
        raw.write("tok/1/manifest.json", content)
        with pytest.raises(CorruptData, match="manifest"):
            reg.load_data("tok")
        assert reg.load_data("other").ranks == small_ranks()
        assert [p.ref for p in reg.verify()] == ["tok@1"]

    @pytest.mark.parametrize("field, value", [
        ("n_vocab", 2**40), ("n_vocab", 2**32), ("n_vocab", 0), ("special_tokens", {"<x>": 2**32}),
        ("special_tokens", {"<x>": -1}),
    ])
    def test_manifest_ids_outside_uint32_are_corrupt(
        self, reg: Registry, raw: LocalRaw | S3Raw, field: str, value: object
    ) -> None:
        """Ids travel as uint32: a manifest beyond that is CorruptData (was INTERNAL when
        GetTokenizer filled vocab_size) and ``verify`` reports it."""
        publish(reg)
        manifest = json.loads(raw.read("tok/1/manifest.json"))
        manifest[field] = value
        raw.write("tok/1/manifest.json", json.dumps(manifest).encode())
        with pytest.raises(CorruptData, match=r"uint32"):
            reg.manifest("tok")
        problems = reg.verify()
        assert [p.ref for p in problems] == ["tok@1"]
        assert "uint32" in problems[0].message

    def test_manifest_naming_another_version_is_corrupt(
        self, reg: Registry, raw: LocalRaw | S3Raw
    ) -> None:
        publish(reg)
        publish(reg)
        # A version directory copied under the wrong number must not be served as that number.
        raw.write("tok/2/manifest.json", raw.read("tok/1/manifest.json"))
        with pytest.raises(CorruptData, match="tok@1"):
            reg.load_data("tok@2")

    def test_manifest_cannot_point_outside_the_version(
        self, reg: Registry, raw: LocalRaw | S3Raw
    ) -> None:
        """A manifest listing ``../../x`` as a file is refused before anything is opened."""
        publish(reg)
        manifest = json.loads(raw.read("tok/1/manifest.json"))
        manifest["files"]["../../../secret"] = {"sha256": "0" * 64, "bytes": 1}
        raw.write("tok/1/manifest.json", json.dumps(manifest).encode())
        with pytest.raises(CorruptData, match="files must be"):
            reg.load_data("tok")

    def test_corrupt_aliases_file(self, reg: Registry, raw: LocalRaw | S3Raw) -> None:
        publish(reg)
        raw.write("tok/aliases.json", b"{not json")
        with pytest.raises(CorruptData, match="aliases"):
            reg.resolve("tok@stable")
        assert reg.resolve("tok@1").version == 1
        assert [p.path.endswith("aliases.json") for p in reg.verify()] == [True]

    def test_garbled_aliases_serve_the_kept_copy_in_every_process(
            self, backend: Backend, reg: Registry, raw: LocalRaw | S3Raw) -> None:
        """A process that starts after aliases.json was garbled (a restarted worker: it never
        saw the good file) resolves the alias from the registry's kept copy of the last file
        it wrote, as the processes that did see it do; verify still reports the file."""
        publish(reg)
        publish(reg)
        reg.set_alias("tok", "stable", 1)
        reg.set_alias("tok", "next", 2)
        raw.write("tok/aliases.json", b"{not json")
        fresh = backend.open()
        passed_over: list[str] = []
        fresh.on_kept_aliases = lambda name, exc: passed_over.append(name)
        assert fresh.resolve("tok@stable").version == 1
        assert fresh.resolve("tok@next").version == 2
        assert passed_over == ["tok", "tok"]
        assert [p.path.endswith("aliases.json") for p in fresh.verify()] == [True]
        with pytest.raises(CorruptData, match="aliases"):  # changes read the file as it is
            fresh.set_alias("tok", "stable", 2)

    def test_without_a_kept_copy_a_garbled_aliases_file_is_corrupt(
            self, backend: Backend, reg: Registry, raw: LocalRaw | S3Raw) -> None:
        """Registries written before the kept copy existed: a process that never saw a good
        file has nothing to serve and says the file is corrupt (one that did keeps its own)."""
        publish(reg)
        reg.set_alias("tok", "stable", 1)
        assert reg.resolve("tok@stable").version == 1  # this process saw the good file
        raw.write("tok/aliases.json", b"{not json")
        raw.delete("tok/aliases.kept.json")
        assert reg.resolve("tok@stable").version == 1
        with pytest.raises(CorruptData, match="aliases"):
            backend.open().resolve("tok@stable")

    def test_verify_clean_registry(self, reg: Registry) -> None:
        publish(reg)
        publish(reg, "other")
        assert reg.verify() == []


class TestGeneration:
    def test_generation_changes_on_every_change(self, reg: Registry) -> None:
        seen = {reg.generation()}
        publish(reg)
        seen.add(reg.generation())
        publish(reg)
        seen.add(reg.generation())
        reg.set_alias("tok", "stable", 1)
        seen.add(reg.generation())
        reg.delete("tok@2")
        seen.add(reg.generation())
        assert len(seen) == 5

    def test_generation_is_stable_without_changes(self, reg: Registry) -> None:
        publish(reg)
        assert reg.generation() == reg.generation()
        reg.load_data("tok")
        reg.verify()
        assert reg.generation() == Registry(reg.location, include_builtins=False).generation()


class TestOpen:
    def test_root_that_is_a_file(self, tmp_path: Path) -> None:
        (tmp_path / "f").write_text("x")
        with pytest.raises(FailedPrecondition, match="not a directory"):
            Registry(tmp_path / "f")

    def test_leftovers_are_cleaned_on_open(self, local: Registry) -> None:
        """Staging dirs whose writer is gone, trash and temp files vanish on the next open."""
        publish(local)
        staging = Path(local.location) / ".staging"
        (staging / "dead").mkdir()
        (staging / "dead" / "ranks.tiktoken").write_bytes(b"partial")
        (staging / "dead2").mkdir()
        (staging / "dead2.lock").write_bytes(b"")  # lock file nobody holds
        (staging / "x.trash").mkdir()
        (Path(local.location) / "tok" / ".counter.json.abc.tmp").write_bytes(b"half")
        Registry(local.location, include_builtins=False)
        assert list(staging.iterdir()) == []
        assert not (Path(local.location) / "tok" / ".counter.json.abc.tmp").exists()
        assert local.verify() == []

    def test_live_staging_dir_is_left_alone(self, local: Registry) -> None:
        """A staging dir whose lock is held (a publisher still writing) survives a clean."""
        from tokend.core.registry.locking import held_lock_file

        staging = Path(local.location) / ".staging"
        fd = held_lock_file(staging / "live.lock")
        try:
            (staging / "live").mkdir()
            Registry(local.location, include_builtins=False)
            assert (staging / "live").is_dir()
        finally:
            os.close(fd)
        Registry(local.location, include_builtins=False)
        assert list(staging.iterdir()) == []

    def test_unknown_name_lists_known(self, reg: Registry) -> None:
        publish(reg, "alpha")
        with pytest.raises(UnknownTokenizer, match="alpha"):
            reg.resolve("beta")
        with pytest.raises(UnknownTokenizer):
            reg.resolve("alpha@9")


class TestLoad:
    def test_load_gives_tiktoken_ids(self, reg: Registry) -> None:
        """load() builds an Encoding equal to tiktoken on the same table."""
        import tiktoken

        publish(reg)
        publish(reg, extra=40)
        resolved, enc = reg.load("tok@1")
        assert resolved.ref == "tok@1"
        reference = tiktoken.Encoding(
            "ref",
            pat_str=GPT2_PATTERN,
            mergeable_ranks=small_ranks(),
            special_tokens={"<|endoftext|>": 276},
        )
        text = "the quick brown fox<|endoftext|> jumps ab ab abab\n\n  héllo 日本"
        assert enc.encode(text, allowed_special="all") == reference.encode(
            text, allowed_special="all"
        )
        # No cache here: each load builds anew (the server's table is the one cache).
        assert reg.load("tok@1")[1] is not enc
        assert reg.load("tok")[1].n_vocab == reg.load("tok@2")[1].n_vocab == enc.n_vocab + 20

    def test_corrupt_version_is_never_served(self, reg: Registry, raw: LocalRaw | S3Raw) -> None:
        publish(reg)
        publish(reg)
        raw.write("tok/2/ranks.tiktoken", raw.read("tok/2/ranks.tiktoken")[:-3])
        with pytest.raises(CorruptData, match=r"tok/2/ranks\.tiktoken"):
            reg.load("tok")
        assert reg.load("tok@1")[0].version == 1


class TestBuiltins:
    @pytest.fixture
    def breg(self, tmp_path: Path) -> Registry:
        return Registry(tmp_path / "reg")

    def test_builtins_and_models_resolve(self, breg: Registry) -> None:
        from tokend.core.engine.builtins import get_encoding

        assert breg.resolve("o200k_base").builtin
        assert breg.resolve("o200k_base").version is None
        assert breg.resolve("gpt-4o").name == "o200k_base"
        assert breg.resolve("gpt-4").name == "cl100k_base"
        resolved, enc = breg.load("gpt-4o")
        assert enc is get_encoding("o200k_base")
        assert resolved.ref == "o200k_base"

    def test_builtins_are_read_only(self, breg: Registry) -> None:
        with pytest.raises(AlreadyExists, match="built-in"):
            breg.publish("o200k_base", ranks=small_ranks(), pat_str=GPT2_PATTERN, special_tokens={})
        for ref in ("o200k_base", "gpt-4o"):
            with pytest.raises(FailedPrecondition, match="read-only"):
                breg.delete(ref)
        with pytest.raises(InvalidInput, match="no versions"):
            breg.resolve("o200k_base@1")
        with pytest.raises(FailedPrecondition, match="read-only"):
            breg.set_alias("o200k_base", "stable", 1)

    def test_list_and_manifest_show_builtins(self, breg: Registry) -> None:
        from tokend.core.engine.builtins import list_encoding_names

        publish(breg)
        infos = breg.list()
        assert [i.name for i in infos] == ["tok", *list_encoding_names()]
        assert [i.builtin for i in infos] == [False] + [True] * len(list_encoding_names())
        manifest = breg.manifest("cl100k_base")
        assert manifest["builtin"] is True
        assert manifest["special_tokens"]["<|endoftext|>"] == 100257

    def test_builtin_manifests_match_the_tables(self, breg: Registry) -> None:
        """Built-in manifests (read from the JSON descriptions) agree with the loaded tables
        and with tiktoken's n_vocab."""
        from tiktoken_reference import reference

        from tokend.core.engine.builtins import get_encoding, list_encoding_names

        for name in list_encoding_names():
            manifest = breg.manifest(name)
            enc = get_encoding(name)
            assert manifest["pattern"] == enc.pat_str
            assert manifest["special_tokens"] == enc.special_tokens
            assert manifest["n_vocab"] == enc.n_vocab == reference(name).n_vocab

    def test_builtin_manifest_loads_no_table(self, tmp_path: Path) -> None:
        """Describing a built-in does not parse its rank file (a fresh process checks)."""
        from fresh_python import run_fresh
        from tiktoken_reference import reference

        code = (
            "import sys\n"
            "from tokend.core.engine import builtins\n"
            "from tokend.core.registry import Registry\n"
            f"m = Registry({str(tmp_path)!r}).manifest('p50k_edit')\n"
            "assert not builtins._ranks and not builtins._encodings\n"
            "print(m['n_vocab'])\n"
        )
        assert int(run_fresh(code)) == reference("p50k_edit").n_vocab

    def test_builtin_data_for_export(self, breg: Registry) -> None:
        from tokend.core.engine.builtins import get_encoding

        data = breg.load_data("r50k_base")
        assert data.ranks == get_encoding("r50k_base").mergeable_ranks
        assert data.special_tokens == {"<|endoftext|>": 50256}

    def test_unknown_name_mentions_builtins(self, breg: Registry) -> None:
        with pytest.raises(UnknownTokenizer, match="o200k_base"):
            breg.resolve("nothing-here")

    def test_registry_name_wins_over_model_name(self, breg: Registry) -> None:
        """A published tokenizer may be called like a model; the registry is looked up first."""
        publish(breg, "gpt-4o")
        assert not breg.resolve("gpt-4o").builtin
