"""Dockerfile and docker-compose.yml stay consistent with the code (no Docker engine needed).

They cannot be run here, so check what can go stale: build targets exist, every TOKEND_*
variable they set is one `tokend serve` reads, and ports line up with Prometheus's scrape target.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
PROMETHEUS = yaml.safe_load(
    (ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text(encoding="utf-8")
)


def dockerfile_env() -> dict[str, str]:
    """The ENV settings of the Dockerfile (``ENV A=1 \\ B=2`` form)."""
    joined = DOCKERFILE.replace("\\\n", " ")
    env: dict[str, str] = {}
    for line in joined.splitlines():
        if line.startswith("ENV "):
            env.update(re.findall(r"(\w+)=(\S+)", line))
    return env


class TestDeployFiles:
    def test_compose_services_and_build_targets(self) -> None:
        """tokend, prometheus and locust; each build target is a stage of the Dockerfile."""
        services = COMPOSE["services"]
        assert {"tokend", "prometheus", "locust"} <= set(services)
        stages = set(re.findall(r"^FROM \S+ AS (\S+)$", DOCKERFILE, flags=re.MULTILINE))
        for name, service in services.items():
            build = service.get("build")
            if isinstance(build, dict) and "target" in build:
                assert build["target"] in stages, f"{name}: no stage {build['target']!r}"

    def test_env_variables_are_serve_settings(self) -> None:
        """Every TOKEND_* the files set is a variable `tokend serve` documents in --help."""
        help_text = subprocess.run(
            [sys.executable, "-m", "tokend.cli", "serve", "--help"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        known = set(re.findall(r"TOKEND_[A-Z_]+", help_text))
        assert known, "tokend serve --help lists no TOKEND_* variables"
        used = {k for k in dockerfile_env() if k.startswith("TOKEND_")}
        for service in COMPOSE["services"].values():
            used |= {k for k in service.get("environment", {}) if k.startswith("TOKEND_")}
        commented = set(
            re.findall(r"#\s*(TOKEND_[A-Z_]+):", (ROOT / "docker-compose.yml").read_text())
        )
        assert used | commented <= known, sorted((used | commented) - known)

    def test_ports_line_up(self) -> None:
        """Exposed/published ports match the service's settings and Prometheus's target."""
        env = dockerfile_env()
        exposed = set(re.findall(r"^EXPOSE (.+)$", DOCKERFILE, flags=re.MULTILINE)[0].split())
        assert {env["TOKEND_PORT"], env["TOKEND_METRICS_PORT"]} <= exposed
        published = {p.split(":")[1] for p in COMPOSE["services"]["tokend"]["ports"]}
        assert {env["TOKEND_PORT"], env["TOKEND_METRICS_PORT"]} <= published
        targets = PROMETHEUS["scrape_configs"][0]["static_configs"][0]["targets"]
        assert targets == [f"tokend:{env['TOKEND_METRICS_PORT']}"]
        assert COMPOSE["services"]["locust"]["environment"]["LOCUST_HOST"] == (
            f"tokend:{env['TOKEND_PORT']}"
        )
        assert env["TOKEND_HOST"] == "0.0.0.0"  # reachable from other containers
