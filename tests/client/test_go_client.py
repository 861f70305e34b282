"""The Go client module (client/go): generated code current, its own tests, and a program
outside the repository (docs/clients.md's Go example) that imports it, built offline from
Debian's packages (GOPATH mode, as docs/clients.md says), counting a chat against a real server.

No skipping: without the Go toolchain the tests fail and say how to install it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tokend.client import ChatMessage, Client

ROOT = Path(__file__).resolve().parents[2]
MODULE_DIR = ROOT / "client" / "go"
GO_MODULE = "tokend.dev/client/go"
HINT = "run `bash scripts/setup-test-tools.sh` (installs Debian's Go toolchain and packages)"
GO_BUILD_CACHE = ROOT / ".cache" / "interop" / "go-build-cache"  # shared with scripts/interop.py

DOCS = ROOT / "docs" / "clients.md"
TRUNCATE_TEXT = "Grüße aus 日本 👍🏽 — " * 20

# The wrapper's Truncate, ListTokenizers and an EncodeStream refusal, printed for comparison
# with the Python client (scripts/interop.sh covers the other methods in every language).
WRAPPER_PROGRAM = """\
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"tokend.dev/client/go/tokend"
	pb "tokend.dev/client/go/tokendv1"
)

func main() {
	client, err := tokend.Dial(os.Args[1])
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cut, err := client.Truncate(ctx, &pb.TruncateRequest{Tokenizer: "o200k_base",
		Text: strings.Repeat("Grüße aus 日本 👍🏽 — ", 20), MaxTokens: 25,
		Keep: pb.TruncateKeep_TRUNCATE_KEEP_BOTH})
	if err != nil {
		panic(err)
	}
	fmt.Printf("truncate %d %d %d %t %v\\n", cut.GetCount(), cut.GetHeadChars(),
		cut.GetTailChars(), cut.GetTruncated(), cut.GetIds())
	listed, err := client.ListTokenizers(ctx)
	if err != nil {
		panic(err)
	}
	for _, summary := range listed.GetTokenizers() {
		fmt.Printf("tokenizer %s %d\\n", summary.GetName(), summary.GetVocabSize())
	}
	_, err = client.EncodeStream(ctx, "no-such-tokenizer", nil, []string{"a", "b"})
	terr, ok := tokend.AsError(err)
	fmt.Printf("refused %t %v %s\\n", ok, terr.Code, terr.Reason)
}
"""


def docs_go_example() -> str:
    """The Go example of docs/clients.md (the one ```go block): the program built here."""
    text = DOCS.read_text(encoding="utf-8")
    blocks = re.findall(r"```go\n(.*?)```", text, re.S)
    assert len(blocks) == 1, f"want one ```go block in {DOCS}, found {len(blocks)}"
    return str(blocks[0])


def go_env(gopath: Path) -> dict[str, str]:
    """GOPATH mode, offline: ``gopath`` first, then Debian's Go sources."""
    assert shutil.which("go"), f"go is not on PATH: {HINT}"
    return {**os.environ, "GOPATH": f"{gopath}{os.pathsep}/usr/share/gocode",
            "GO111MODULE": "off", "GOPROXY": "off", "GOFLAGS": "",
            "GOCACHE": str(GO_BUILD_CACHE), "GRPC_GO_RETRY": "on"}


def install_module(gopath: Path) -> Path:
    """Copy the module where GOPATH mode looks for its import path, as a user would."""
    target = gopath / "src" / GO_MODULE
    shutil.copytree(MODULE_DIR, target)
    return target


class TestGoClient:
    def test_generated_code_is_current(self, tmp_path: Path) -> None:
        """`scripts/gen_proto.py --go` into a temp dir gives the committed tokendv1 files."""
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_proto.py"), "--go",
                        "--out", str(tmp_path)], check=True, capture_output=True)
        fresh = {p.name: p.read_bytes() for p in (tmp_path / "tokendv1").iterdir()}
        committed = {p.name: p.read_bytes() for p in (MODULE_DIR / "tokendv1").iterdir()}
        assert set(fresh) == set(committed), f"run `{sys.executable} scripts/gen_proto.py --go`"
        stale = [name for name in fresh if fresh[name] != committed[name]]
        assert not stale, f"{stale} stale: run `.venv/bin/python scripts/gen_proto.py --go`"

    @pytest.mark.timeout(600)  # a cold Go build cache compiles grpc-go first
    def test_go_unit_tests_pass(self, tmp_path: Path) -> None:
        """`go test` of the wrapper: retries on UNAVAILABLE, typed errors with details."""
        module = install_module(tmp_path / "gopath")
        result = subprocess.run(["go", "test", "./tokend/"], cwd=module,
                                env=go_env(tmp_path / "gopath"), capture_output=True,
                                text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stdout + result.stderr

    def test_outside_program_counts_a_chat(self, tmp_path: Path, tokend_service: Any) -> None:
        """docs/clients.md's Go example, as a program outside the repository, imports the
        module, builds offline and counts its chat as the Python client does."""
        gopath = tmp_path / "gopath"
        install_module(gopath)
        program = gopath / "src" / "example.com" / "count"
        program.mkdir(parents=True)
        (program / "main.go").write_text(docs_go_example(), encoding="utf-8")
        env = go_env(gopath)
        build = subprocess.run(["go", "build", "-o", str(tmp_path / "count"), "."],
                               cwd=program, env=env, capture_output=True, text=True,
                               timeout=300, check=False)
        assert build.returncode == 0, build.stdout + build.stderr
        run = subprocess.run([str(tmp_path / "count"), tokend_service.target], env=env,
                             capture_output=True, text=True, timeout=60, check=False)
        assert run.returncode == 0, run.stdout + run.stderr
        with Client(tokend_service.target, timeout=30) as tok:
            want = tok.count_tokens("", messages=[ChatMessage("user", "Weather in Oslo?")],
                                    model="gpt-4o")
        assert run.stdout.split() == [str(want.total), str(want.exact).lower()]

    def test_wrapper_truncate_list_and_stream_refusal(
        self, tmp_path: Path, tokend_service: Any
    ) -> None:
        """Truncate and ListTokenizers answer as the Python client's; a refused EncodeStream
        comes back as *tokend.Error with the server's ErrorInfo reason."""
        gopath = tmp_path / "gopath"
        install_module(gopath)
        program = gopath / "src" / "example.com" / "wrapper"
        program.mkdir(parents=True)
        (program / "main.go").write_text(WRAPPER_PROGRAM, encoding="utf-8")
        env = go_env(gopath)
        build = subprocess.run(["go", "build", "-o", str(tmp_path / "wrapper"), "."],
                               cwd=program, env=env, capture_output=True, text=True,
                               timeout=300, check=False)
        assert build.returncode == 0, build.stdout + build.stderr
        run = subprocess.run([str(tmp_path / "wrapper"), tokend_service.target], env=env,
                             capture_output=True, text=True, timeout=60, check=False)
        assert run.returncode == 0, run.stdout + run.stderr
        with Client(tokend_service.target, timeout=30) as tok:
            cut = tok.truncate("o200k_base", TRUNCATE_TEXT, 25, keep="both")
            listed = tok.list_tokenizers()
        ids = " ".join(map(str, cut.ids))
        want = [f"truncate {cut.count} {cut.head_chars} {cut.tail_chars} "
                f"{str(cut.truncated).lower()} [{ids}]",
                *(f"tokenizer {t.name} {t.vocab_size}" for t in listed),
                "refused true NotFound UnknownTokenizer"]
        assert cut.truncated and cut.count <= 25
        assert run.stdout.splitlines() == want
