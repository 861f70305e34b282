"""A real Prometheus scraping a real ``tokend serve`` with deploy/prometheus/prometheus.yml:
the series arrive and move, the recording rules evaluate, every Grafana panel's query parses
and returns series; rules.yml passes ``promtool check rules`` and its unit tests.

prometheus and promtool come from Debian's ``prometheus`` package (scripts/setup-test-tools.sh).
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
RATE = "10s"  # the window of rate() in the queries here: ten 1 s scrapes


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Prometheus:
    """A prometheus process on loopback; ``query`` runs PromQL through its HTTP API."""

    def __init__(self, base: Path, metrics_port: int) -> None:
        config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
        # The deploy file, adapted: 1 s scrapes of the test's server, rules from deploy/.
        config["global"].update(scrape_interval="1s", evaluation_interval="1s")
        config["rule_files"] = [str(DEPLOY / "prometheus" / name) for name in config["rule_files"]]
        [job] = config["scrape_configs"]
        job["static_configs"] = [{"targets": [f"127.0.0.1:{metrics_port}"]}]
        path = base / "prometheus.yml"
        path.write_text(yaml.safe_dump(config))
        self.port = free_port()
        self.log = (base / "prometheus.log").open("w")
        self.process = subprocess.Popen(
            [shutil.which("prometheus") or "prometheus", f"--config.file={path}",
             f"--storage.tsdb.path={base / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url("/-/ready"), timeout=2)
                break
            except OSError:
                assert self.process.poll() is None, (base / "prometheus.log").read_text()
                assert time.monotonic() < deadline, "prometheus not ready within 30 s"
                time.sleep(0.2)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector of ``expr`` now; a parse error fails with Prometheus's message."""
        url = self.url("/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        try:
            body = json.load(urllib.request.urlopen(url, timeout=10))
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{expr}: {exc.read().decode()}") from None
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def wait_for(self, expr: str, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Poll ``expr`` until it returns series (with finite values)."""
        deadline = time.monotonic() + timeout
        while True:
            result = [r for r in self.query(expr) if math.isfinite(float(r["value"][1]))]
            if result:
                return result
            assert time.monotonic() < deadline, f"no series for {expr} within {timeout} s"
            time.sleep(0.5)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def drive(target: str, stop: threading.Event) -> None:
    """Steady traffic until ``stop``: Encode, Decode, CountTokens and some NOT_FOUND calls."""
    with grpc.insecure_channel(target) as channel:
        stub = pb_grpc.TokenizerServiceStub(channel)
        i = 0
        while not stop.wait(0.02):
            i += 1
            stub.Encode(pb.EncodeRequest(tokenizer="cl100k_base", texts=[f"hello {i % 50}"]))
            stub.Decode(pb.DecodeRequest(tokenizer="cl100k_base", ids=[15339, 1917]))
            stub.CountTokens(pb.CountTokensRequest(tokenizer="cl100k_base", texts=["a b c"]))
            if i % 5 == 0:
                with pytest.raises(grpc.RpcError):
                    stub.Encode(pb.EncodeRequest(tokenizer="no-such-tokenizer", texts=["x"]))


@pytest.fixture(scope="module")
def prometheus(tokend_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    """Prometheus scraping the session's tokend serve while traffic flows."""
    running = Prometheus(tmp_path_factory.mktemp("prometheus"), tokend_server.metrics_port)
    stop = threading.Event()
    traffic = threading.Thread(target=drive, args=(tokend_server.target, stop), daemon=True)
    traffic.start()
    try:
        running.wait_for('up{job="tokend"} == 1')
        yield running
    finally:
        stop.set()
        traffic.join(10)
        running.stop()


def value(series: dict[str, Any]) -> float:
    return float(series["value"][1])


class TestScrapedByPrometheus:
    def test_rates_move_and_error_codes_are_counted(self, prometheus: Prometheus) -> None:
        ok = prometheus.wait_for(
            f'rate(grpc_server_handled_total{{grpc_method="Encode",grpc_code="OK"}}[{RATE}]) > 0'
        )
        assert ok[0]["metric"]["grpc_type"] == "unary"
        assert ok[0]["metric"]["grpc_service"] == "tokend.v1.TokenizerService"
        prometheus.wait_for(
            f'increase(grpc_server_handled_total{{grpc_code="NOT_FOUND"}}[{RATE}]) > 0'
        )
        prometheus.wait_for(f'rate(tokend_tokens_total{{tokenizer="cl100k_base"}}[{RATE}]) > 0')
        prometheus.wait_for(f"rate(grpc_server_msg_received_total[{RATE}]) > 0")

    def test_histogram_quantiles(self, prometheus: Prometheus) -> None:
        """p50 <= p99, both inside the histogram's range (50 us .. 30 s)."""
        def quantile(q: float) -> float:
            [series] = prometheus.wait_for(
                f"histogram_quantile({q}, sum by (le) "
                f"(rate(grpc_server_handling_seconds_bucket[{RATE}])))"
            )
            return value(series)

        p50, p99 = quantile(0.5), quantile(0.99)
        assert 0 < p50 <= p99 <= 30

    def test_per_worker_series(self, prometheus: Prometheus, tokend_server) -> None:
        pids = {str(p) for p in tokend_server.wait_event("serving")["pids"]}
        rss = prometheus.wait_for("tokend_worker_resident_memory_bytes > 0")
        assert {s["metric"]["pid"] for s in rss} == pids

    def test_recording_rules_evaluate(self, prometheus: Prometheus) -> None:
        """The rules of rules.yml are loaded and produce series from real data."""
        rules = json.load(urllib.request.urlopen(prometheus.url("/api/v1/rules"), timeout=10))
        groups = {g["name"]: g for g in rules["data"]["groups"]}
        assert {"tokend-recording", "tokend-alerts"} <= set(groups)
        assert all(r["health"] == "ok" for g in groups.values() for r in g["rules"])
        prometheus.wait_for("tokend:grpc_requests:rate1m > 0")
        prometheus.wait_for("tokend:grpc_handling_seconds:p99_5m > 0")
        prometheus.wait_for("tokend:grpc_error_ratio:rate5m >= 0")


class TestGrafanaDashboard:
    def test_every_panel_query_parses_and_returns_series(self, prometheus: Prometheus) -> None:
        dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "tokend.json").read_text())
        exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
        assert len(exprs) >= 10
        for expr in exprs:
            # Grafana's $__rate_interval is at least four scrape intervals.
            prometheus.wait_for(expr.replace("$__rate_interval", RATE))

    def test_provisioning_points_at_the_dashboard(self) -> None:
        provider = yaml.safe_load(
            (DEPLOY / "grafana" / "provisioning" / "dashboards" / "tokend.yml").read_text()
        )
        compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
        mounts = dict(v.rsplit(":", 2)[:2] for v in compose["services"]["grafana"]["volumes"])
        [path] = [p["options"]["path"] for p in provider["providers"]]
        assert mounts["./deploy/grafana/dashboards"] == path
        assert mounts["./deploy/grafana/provisioning"] == "/etc/grafana/provisioning"


class TestRules:
    def test_promtool_checks_the_rules(self) -> None:
        result = subprocess.run(
            ["promtool", "check", "rules", str(DEPLOY / "prometheus" / "rules.yml")],
            capture_output=True, text=True, check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SUCCESS" in result.stdout

    def test_promtool_unit_tests_of_the_alerts(self) -> None:
        result = subprocess.run(
            ["promtool", "test", "rules", "rules.test.yml"], cwd=DEPLOY / "prometheus",
            capture_output=True, text=True, check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        # every alert of rules.yml is exercised by a test
        rules = yaml.safe_load((DEPLOY / "prometheus" / "rules.yml").read_text())
        alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
        tests = (DEPLOY / "prometheus" / "rules.test.yml").read_text()
        assert all(f"alertname: {a}" in tests for a in alerts)
