"""Dockerfile and docker-compose.yml stay consistent with the code (no Docker engine needed).

They cannot be run here, so check what can go stale: the compose file is valid against the
Compose specification's JSON schema, every file it mounts exists, build targets exist, every
TOKEND_* variable they set is one `tokend serve` reads, and the replicas, the balancer,
Prometheus's targets and Locust line up. (deploy/haproxy/haproxy.cfg itself runs in
tests/test_balancer.py.)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
# The Compose specification's schema as docker-compose 1.29.2 ships it on PyPI, extracted by
# scripts/setup-test-tools.sh (pinned, sha256-checked).
COMPOSE_SCHEMA = ROOT / ".test-tools" / "compose_spec.json"
REPLICAS = ["tokend-1", "tokend-2", "tokend-3"]
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
    def test_compose_file_is_valid_against_the_compose_spec(self) -> None:
        schema = json.loads(COMPOSE_SCHEMA.read_text(encoding="utf-8"))
        validator = jsonschema.Draft7Validator(schema)
        errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(COMPOSE)]
        assert errors == []
        # the schema does catch a mistake
        broken = {**COMPOSE, "services": {"x": {"imagee": "tokend:latest"}}}
        assert list(validator.iter_errors(broken))

    def test_every_mounted_file_exists(self) -> None:
        sources = [
            volume.split(":")[0]
            for service in COMPOSE["services"].values()
            for volume in service.get("volumes", [])
            if volume.startswith("./")
        ]
        assert len(sources) >= 4
        for source in sources:
            assert (ROOT / source).exists(), source
        for service in COMPOSE["services"].values():
            build = service.get("build")
            if isinstance(build, dict):
                assert (ROOT / build["context"] / "Dockerfile").is_file()

    def test_compose_services_and_build_targets(self) -> None:
        """Replicas, balancer, prometheus, grafana, locust; build targets are Dockerfile stages."""
        services = COMPOSE["services"]
        assert {*REPLICAS, "balancer", "prometheus", "grafana", "locust-master",
                "locust-worker"} <= set(services)
        stages = set(re.findall(r"^FROM \S+ AS (\S+)$", DOCKERFILE, flags=re.MULTILINE))
        for name, service in services.items():
            build = service.get("build")
            if isinstance(build, dict) and "target" in build:
                assert build["target"] in stages, f"{name}: no stage {build['target']!r}"

    def test_replicas_share_one_registry_volume(self) -> None:
        env = dockerfile_env()
        volumes = {tuple(COMPOSE["services"][r]["volumes"]) for r in REPLICAS}
        assert volumes == {(f"tokend-registry:{env['TOKEND_REGISTRY']}",)}
        assert "tokend-registry" in COMPOSE["volumes"]

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
        """The balancer fronts every replica's gRPC port, Prometheus scrapes every replica's
        metrics port, Locust drives the balancer."""
        env = dockerfile_env()
        exposed = set(re.findall(r"^EXPOSE (.+)$", DOCKERFILE, flags=re.MULTILINE)[0].split())
        assert {env["TOKEND_PORT"], env["TOKEND_METRICS_PORT"]} <= exposed
        balancer = COMPOSE["services"]["balancer"]
        backends = sorted(v for k, v in balancer["environment"].items() if k.startswith("BACKEND_"))
        assert backends == [f"{r}:{env['TOKEND_PORT']}" for r in REPLICAS]
        config = (ROOT / "deploy" / "haproxy" / "haproxy.cfg").read_text(encoding="utf-8")
        assert sorted(re.findall(r"\$\{(BACKEND_\d)\}", config)) == sorted(
            k for k in balancer["environment"] if k.startswith("BACKEND_"))
        lb_port = balancer["environment"]["LB_BIND"].rsplit(":", 1)[1]
        assert balancer["ports"] == [f"{env['TOKEND_PORT']}:{lb_port}"]
        targets = PROMETHEUS["scrape_configs"][0]["static_configs"][0]["targets"]
        assert targets == [f"{r}:{env['TOKEND_METRICS_PORT']}" for r in REPLICAS]
        master = COMPOSE["services"]["locust-master"]
        assert master["environment"]["LOCUST_HOST"] == f"balancer:{lb_port}"
        assert env["TOKEND_HOST"] == "0.0.0.0"  # reachable from other containers
