"""Registry locations: folders and s3:// URLs are understood; any other URL scheme is refused.

Before, ``--registry s3://bucket/reg`` silently created a folder ``s3:/bucket/reg`` in the
working directory; now every entry point (core, CLI, server config, ``tokend serve``) refuses
an unknown scheme with an error naming it, and creates nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tokend.core.errors import InvalidInput
from tokend.core.registry import Registry, url_scheme
from tokend.core.registry.s3 import parse_s3_url
from tokend.server.config import ServerConfig, add_arguments, config_from

UNSUPPORTED = ["gs://bucket/reg", "http://example.com/reg", "HTTPS://x/y", "file:///tmp/reg",
               "azure://c/r"]


def run_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tokend.cli", *argv], capture_output=True, text=True,
        timeout=60, check=False, cwd=cwd, env={**os.environ, "TOKEND_METRICS_PORT": "0"},
    )


class TestSchemes:
    @pytest.mark.parametrize("url", UNSUPPORTED)
    def test_core_refuses_unknown_schemes_naming_them(
        self, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        scheme = url.split(":", maxsplit=1)[0].lower()
        with pytest.raises(InvalidInput, match=f"scheme '{scheme}' is not supported"):
            Registry(url)
        assert list(tmp_path.iterdir()) == []  # no folder named after the URL

    def test_folder_paths_have_no_scheme(self) -> None:
        assert url_scheme("/var/lib/tokend/registry") is None
        assert url_scheme("relative/reg") is None
        assert url_scheme("c:/weird") is None  # one slash: a path, not a URL
        assert url_scheme("s3://b/p") == "s3"

    @pytest.mark.parametrize(
        ("url", "expected"),
        [("s3://bucket", ("bucket", "")), ("s3://bucket/", ("bucket", "")),
         ("s3://my.bucket-1/a//b/", ("my.bucket-1", "a/b/"))],
    )
    def test_s3_urls_split_into_bucket_and_prefix(
        self, url: str, expected: tuple[str, str]
    ) -> None:
        assert parse_s3_url(url) == expected

    @pytest.mark.parametrize("url", ["s3://", "s3://B/x", "s3://a/../x", "s3://ab/./x"])
    def test_bad_s3_urls_are_refused(self, url: str) -> None:
        with pytest.raises(InvalidInput, match="registry"):
            parse_s3_url(url)

    def test_server_config_refuses_unknown_schemes(self) -> None:
        with pytest.raises(ValueError, match="'gs' is not supported"):
            ServerConfig(registry="gs://bucket/reg")
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        config = config_from(parser.parse_args(["--registry", "s3://bucket/reg"]), {})
        assert config.registry == "s3://bucket/reg"  # kept as a URL, not a Path
        assert config.jobs_path != Path("s3:/bucket/reg/.jobs")
        env = {"TOKEND_REGISTRY": "http://host/reg"}
        with pytest.raises(ValueError, match="'http' is not supported"):
            config_from(parser.parse_args([]), env)

    def test_jobs_stay_local(self, tmp_path: Path) -> None:
        """Job state is local: beside a folder registry, else --jobs-dir / the user data dir."""
        assert ServerConfig(registry=tmp_path).jobs_path == tmp_path / ".jobs"
        assert ServerConfig(registry="s3://b/r", jobs_dir=tmp_path / "j").jobs_path == (
            tmp_path / "j"
        )
        assert "s3:" not in str(ServerConfig(registry="s3://b/r").jobs_path)

    def test_cli_and_serve_refuse_unknown_schemes(self, tmp_path: Path) -> None:
        listed = run_cli("registry", "list", "--registry", "gs://bucket/reg", cwd=tmp_path)
        assert listed.returncode == 2
        assert "'gs' is not supported" in listed.stderr
        served = run_cli("serve", "--registry", "gs://bucket/reg", "--port", "0", cwd=tmp_path)
        assert served.returncode == 2
        assert "'gs' is not supported" in served.stderr
        assert list(tmp_path.iterdir()) == []
