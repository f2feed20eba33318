"""The pieces of a cluster on one machine: an S3 store (moto), an MLflow tracking server,
and a Ray cluster of a head plus worker nodes, all on 127.0.0.1.

Each node runs ``ray start --block`` in its own process group, with its own ports, its
own ``HOME`` (so node-local caches such as the artifact store's download cache are not
shared, as on separate machines) and one custom resource naming it. The head has no CPUs,
as in ``ray_cluster.yaml``: every stage task and training worker runs on a worker node.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.cluster.services import BIN, Service, free_port, processes_mentioning, wait_for_port

REPO = Path(__file__).resolve().parents[2]
BUCKET = "nugget-cluster-test"
# fake credentials: moto accepts any; botocore, s3fs and pyarrow read these variables
S3_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                  "AWS_DEFAULT_REGION": "us-east-1"}


def s3_env(endpoint: str) -> dict[str, str]:
    """What a process needs to reach the moto store: botocore / s3fs and pyarrow's S3
    filesystem (Ray Train storage) read ``AWS_ENDPOINT_URL``; MLflow's S3 artifact
    repository reads ``MLFLOW_S3_ENDPOINT_URL``."""
    return {**S3_CREDENTIALS, "AWS_ENDPOINT_URL": endpoint, "MLFLOW_S3_ENDPOINT_URL": endpoint}


def base_env() -> dict[str, str]:
    """This environment, with the venv first on PATH and Ray on loopback."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # GCS / raylets on 127.0.0.1 (environment notes)
           "RAY_AUTH_MODE": "disabled", "RAY_DISABLE_USAGE_STATS": "1"}
    for name in ("RAY_ADDRESS", "AWS_PROFILE", "AWS_SESSION_TOKEN"):  # never reach anything else
        env.pop(name, None)
    return env


@dataclass
class S3Store:
    service: Service
    endpoint: str

    @classmethod
    def start(cls, workdir: Path) -> S3Store:
        port = free_port()
        svc = Service.start("moto", [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                            base_env(), workdir / "moto.log")
        wait_for_port(port, 60, "moto_server", svc.proc)
        store = cls(svc, f"http://127.0.0.1:{port}")
        store.client().create_bucket(Bucket=BUCKET)
        return store

    def client(self):  # a boto3 S3 client of this store
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, **{
            "aws_access_key_id": S3_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": S3_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            "region_name": S3_CREDENTIALS["AWS_DEFAULT_REGION"]})

    def objects(self, prefix: str) -> dict[str, dict]:
        """Every object under ``prefix``: key -> {"size", "mtime" (LastModified)}."""
        out: dict[str, dict] = {}
        for page in self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            for obj in page.get("Contents", []):
                out[obj["Key"]] = {"size": obj["Size"], "mtime": obj["LastModified"]}
        return out


@dataclass
class MlflowServer:
    service: Service
    uri: str

    @classmethod
    def start(cls, workdir: Path, s3: S3Store) -> MlflowServer:
        port = free_port()
        env = {**base_env(), **s3_env(s3.endpoint), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        cmd = [str(BIN / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
               "--backend-store-uri", f"sqlite:///{workdir / 'mlflow-server.db'}",
               # the server's own artifact store, proxied (clients upload through the server)
               "--artifacts-destination", f"s3://{BUCKET}/mlflow-artifacts"]
        svc = Service.start("mlflow", cmd, env, workdir / "mlflow.log")
        wait_for_port(port, 120, "mlflow server", svc.proc)
        return cls(svc, f"http://127.0.0.1:{port}")


@dataclass
class RayNode:
    name: str
    service: Service
    resource: str  # the custom resource only this node has


@dataclass
class RayCluster:
    """A head (0 CPUs: it runs the job's driver only) and worker nodes of 1 CPU each."""

    temp_dir: Path
    gcs: str
    dashboard: str
    head: RayNode
    workers: list[RayNode] = field(default_factory=list)

    @classmethod
    def start(cls, workdir: Path, n_workers: int = 2, worker_cpus: int = 1) -> RayCluster:
        # short: Ray's unix socket paths are length-limited; unique: only this test's nodes
        temp = Path("/tmp") / f"rayc-{os.getpid()}-{free_port()}"
        gcs_port, dash_port = free_port(), free_port()
        head = cls._node("head", workdir, temp, [
            "--head", f"--port={gcs_port}", "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dash_port}", "--num-cpus=0"])
        cluster = cls(temp, f"127.0.0.1:{gcs_port}", f"http://127.0.0.1:{dash_port}", head)
        try:
            wait_for_port(dash_port, 120, "ray head dashboard", head.service.proc)
            for i in range(n_workers):  # one at a time: two raylets starting at once on 2
                # cores missed Ray's 30 s registration deadline once (measured)
                cluster.workers.append(cls._node(f"worker{i}", workdir, temp, [
                    f"--address={cluster.gcs}", f"--num-cpus={worker_cpus}"]))
                cluster.wait_for_nodes(2 + i, timeout=120)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    @staticmethod
    def _node(name: str, workdir: Path, temp: Path, args: list[str]) -> RayNode:
        home = workdir / f"home-{name}"
        home.mkdir(parents=True, exist_ok=True)
        resource = f"node_{name}"
        # a joining node starts through tests.cluster.ray_node (see there why)
        ray = [str(BIN / "ray")] if "--head" in args else [str(BIN / "python"), "-m", "tests.cluster.ray_node"]
        cmd = [*ray, "start", "--block", "--node-ip-address=127.0.0.1", "--disable-usage-stats",
               f"--temp-dir={temp}", f"--dashboard-agent-listen-port={free_port()}",
               f"--resources={json.dumps({resource: 1})}", *args]
        env = {**base_env(), "HOME": str(home), "PYTHONPATH": str(REPO),
               "RAY_raylet_start_wait_time_s": "120"}  # Ray's default 30 s: see above
        svc = Service.start(f"ray-{name}", cmd, env, workdir / f"ray-{name}.log")
        return RayNode(name, svc, resource)

    def alive_nodes(self) -> list[dict]:
        """The nodes the GCS holds alive (``ray.util.state.list_nodes``)."""
        from ray.util.state import list_nodes

        # raise_on_missing_output=False: with a filter that leaves out a dead node, Ray
        # 2.60 takes the difference for truncated output and raises (measured)
        return [n.__dict__ if hasattr(n, "__dict__") else dict(n)
                for n in list_nodes(address=self.dashboard, filters=[("state", "=", "ALIVE")],
                                    raise_on_missing_output=False)]

    def wait_for_nodes(self, count: int, timeout: float) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if len(self.alive_nodes()) == count:
                    return
            except Exception:  # the state API answers only once the dashboard is up
                pass
            time.sleep(1)
        raise TimeoutError(f"the Ray cluster at {self.gcs} did not reach {count} alive nodes "
                           f"in {timeout:.0f} s; logs: {[n.service.log_path for n in self.nodes]}")

    @property
    def nodes(self) -> list[RayNode]:
        return [self.head, *self.workers]

    def stop(self) -> list[int]:
        """Stop every node (workers first), then SIGKILL any process still naming this
        cluster's temp dir; returns the PIDs that had to be killed that way."""
        for node in reversed(self.nodes):
            node.service.stop()
        leftovers = processes_mentioning(str(self.temp_dir))
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        return leftovers
