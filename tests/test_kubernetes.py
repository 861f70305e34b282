"""deploy/kubernetes/ is valid Kubernetes and lines up with itself and with `tokend serve`.

No cluster here, so each manifest is validated offline against the Kubernetes OpenAPI schemas
(strict: unknown fields are errors) that PyPI's ``kubernetes-validate`` bundles (pinned in the
test extras), and the cross-references a schema cannot see are checked by hand: selectors
match the pod labels, Services and probes point at ports the container opens, the HPA and the
PDB target the Deployment, every setting is one `tokend serve` reads, and the training Job's
arguments parse with `tokend train`.
"""

from __future__ import annotations

import argparse
import copy
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tokend.cli import build_parser
from tokend.server.config import add_arguments, config_from

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "deploy" / "kubernetes"
# The oldest Kubernetes the manifests are meant for: native gRPC probes are GA since 1.27,
# ``autoscaling/v2`` since 1.23, ``policy/v1`` PDBs since 1.21.
K8S_VERSION = "1.29"
EXPECTED_KINDS = {
    "ConfigMap", "Secret", "Deployment", "Service", "PodDisruptionBudget",
    "HorizontalPodAutoscaler", "Job",
}


def load_all() -> list[tuple[str, dict[str, Any]]]:
    """(file name, document) for every YAML document under deploy/kubernetes/."""
    docs: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc is not None:
                docs.append((path.name, doc))
    return docs


DOCS = load_all()


def one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for _, d in DOCS if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    assert len(found) == 1, f"{len(found)} {kind} named {name}"
    return found[0]


def validation_errors(doc: dict[str, Any]) -> str | None:
    """The schema's complaint about ``doc`` (first line), or None when it is valid."""
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return str(exc).splitlines()[0]
    return None


def container(kind: str) -> dict[str, Any]:
    spec = one(kind)["spec"]["template"]["spec"]
    containers: list[dict[str, Any]] = spec["containers"]
    assert len(containers) == 1
    return containers[0]


def manifest_env() -> dict[str, str]:
    """What the pods' environment holds: the ConfigMap, then the Secret."""
    env = dict(one("ConfigMap", "tokend")["data"])
    env.update(one("Secret", "tokend-credentials")["stringData"])
    return env


class TestSchemas:
    @pytest.mark.parametrize(
        ("file", "doc"), DOCS, ids=[f"{f}:{d['kind']}/{d['metadata']['name']}" for f, d in DOCS]
    )
    def test_manifest_is_valid_kubernetes(self, file: str, doc: dict[str, Any]) -> None:
        """Each document passes the strict OpenAPI schema of its kind and apiVersion."""
        assert validation_errors(doc) is None

    def test_every_part_is_there(self) -> None:
        """Deployment, both Services, PDB, HPA, ConfigMap, Secret, training Job."""
        assert {d["kind"] for _, d in DOCS} == EXPECTED_KINDS
        services = {d["metadata"]["name"]: d for _, d in DOCS if d["kind"] == "Service"}
        assert services["tokend"]["spec"]["type"] == "ClusterIP"
        assert services["tokend-headless"]["spec"]["clusterIP"] == "None"

    @pytest.mark.parametrize(
        ("what", "path", "value", "complaint"),
        [
            ("an unknown field", ["spec", "template", "spec", "containers", 0, "imagee"],
             "tokend:1", "'imagee' was unexpected"),
            ("a string for an int", ["spec", "replicas"], "three", "'three' is not of type"),
            ("a misspelt probe", ["spec", "template", "spec", "containers", 0,
                                  "readinessProbe", "grcp"], {"port": 50051}, "'grcp'"),
            ("no container name", ["spec", "template", "spec", "containers", 0, "name"],
             None, "'name' is a required property"),
        ],
    )
    def test_a_broken_manifest_is_refused(
        self, what: str, path: list[str | int], value: object, complaint: str
    ) -> None:
        """The validator really checks: each mistake in the Deployment is caught, by name."""
        broken = copy.deepcopy(one("Deployment"))
        node: Any = broken
        for key in path[:-1]:
            node = node[key]
        if value is None:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        error = validation_errors(broken)
        assert error is not None, what
        assert complaint in error

    def test_an_unknown_kind_is_refused(self) -> None:
        """A kind the schemas do not know (a typo, a CRD) is an error, not a silent pass."""
        doc = {**one("PodDisruptionBudget"), "kind": "PodDisruptionBudgett"}
        with pytest.raises(kubernetes_validate.SchemaNotFoundError):
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


class TestCrossReferences:
    def test_selectors_match_the_pods(self) -> None:
        """The Deployment, both Services, the PDB select the server pods; not the Job's."""
        deployment = one("Deployment")
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        selector = deployment["spec"]["selector"]["matchLabels"]
        assert selector.items() <= labels.items()
        for _, doc in DOCS:
            if doc["kind"] == "Service":
                assert doc["spec"]["selector"].items() <= labels.items()
                assert doc["spec"]["selector"] == selector
        assert one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"] == selector
        job_labels = one("Job")["spec"]["template"]["metadata"]["labels"]
        assert not selector.items() <= job_labels.items()

    def test_ports_line_up(self) -> None:
        """Services, probes and scrape annotations use the ports `tokend serve` listens on."""
        env = manifest_env()
        grpc_port, metrics_port = int(env["TOKEND_PORT"]), int(env["TOKEND_METRICS_PORT"])
        c = container("Deployment")
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert ports == {"grpc": grpc_port, "metrics": metrics_port}
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert c[probe]["grpc"]["port"] == grpc_port, probe
        for _, doc in DOCS:
            if doc["kind"] == "Service":
                for p in doc["spec"]["ports"]:
                    assert p["targetPort"] in ports
        annotations = one("Deployment")["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert int(annotations["prometheus.io/port"]) == metrics_port
        assert env["TOKEND_HOST"] == "0.0.0.0"

    def test_hpa_and_pdb_fit_the_deployment(self) -> None:
        """The HPA scales this Deployment on CPU (which it requests); the PDB leaves replicas."""
        deployment = one("Deployment")
        hpa = one("HorizontalPodAutoscaler")
        assert hpa["spec"]["scaleTargetRef"] == {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "name": deployment["metadata"]["name"],
        }
        assert [m["resource"]["name"] for m in hpa["spec"]["metrics"]] == ["cpu"]
        assert "cpu" in container("Deployment")["resources"]["requests"]
        assert hpa["spec"]["minReplicas"] > one("PodDisruptionBudget")["spec"]["maxUnavailable"]
        # one worker process per requested CPU (each runs one GIL)
        cpus = int(container("Deployment")["resources"]["requests"]["cpu"])
        assert int(manifest_env()["TOKEND_WORKERS"]) == cpus

    def test_drain_fits_the_grace_period(self) -> None:
        """SIGTERM's drain delay + grace end before Kubernetes kills the pod, and liveness
        does not kill a draining pod (NOT_SERVING) first."""
        env = manifest_env()
        drain = float(env["TOKEND_DRAIN_DELAY_SECONDS"]) + float(env["TOKEND_GRACE_SECONDS"])
        spec = one("Deployment")["spec"]["template"]["spec"]
        assert drain < spec["terminationGracePeriodSeconds"]
        liveness = container("Deployment")["livenessProbe"]
        assert liveness["periodSeconds"] * liveness["failureThreshold"] > drain

    def test_settings_are_serve_settings(self) -> None:
        """Every TOKEND_* variable is one `tokend serve` reads, and together they build a
        valid server configuration."""
        env = manifest_env()
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        known = set(re.findall(r"\[env\s+(TOKEND_[A-Z_]+)\]", parser.format_help()))
        used = {k for k in env if k.startswith("TOKEND_")}
        assert used <= known, sorted(used - known)
        config = config_from(parser.parse_args([]), env)
        assert config.port == int(env["TOKEND_PORT"])
        assert config.workers == int(env["TOKEND_WORKERS"])
        assert env["TOKEND_REGISTRY"].startswith("s3://")

    def test_pods_read_the_configuration(self) -> None:
        """The server and the Job take their environment from the ConfigMap and the Secret."""
        for kind in ("Deployment", "Job"):
            refs = container(kind)["envFrom"]
            assert {"configMapRef": {"name": "tokend"}} in refs
            assert {"secretRef": {"name": "tokend-credentials"}} in refs
        secret = one("Secret", "tokend-credentials")["stringData"]
        assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(secret)

    def test_training_job_runs_tokend_train(self) -> None:
        """The Job's command line parses as `tokend train` (an s3:// corpus kept as a URL)."""
        c = container("Job")
        assert c["command"] == ["tokend", "train"]
        args = build_parser().parse_args(["train", *c["args"]])
        assert args.corpus == ["s3://tokend/corpora/en/"]
        assert args.vocab_size == 32000
        assert args.target is None  # trains in the Job's pod and publishes to the registry
        assert one("Job")["spec"]["template"]["spec"]["restartPolicy"] == "Never"
