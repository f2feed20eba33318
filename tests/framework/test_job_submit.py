"""`ray job submit` of pipelines/full.py against a local head on 127.0.0.1.

The test starts its own head (own ports, own temp dir, own process group via
``ray start --block``) and stops it by signalling that process group only, so a Ray
the developer has running is never touched.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.framework.fixtures import runs_of_latest_pipeline

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


@pytest.fixture
def ray_head(tmp_path):
    gcs, dash, agent = _free_port(), _free_port(), _free_port()
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_AUTH_MODE": "disabled",
    }
    env.pop("RAY_ADDRESS", None)
    temp = Path("/tmp") / f"rayt-{os.getpid()}-{gcs}"  # short: Ray's socket paths are length-limited
    cmd = [
        str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
        f"--port={gcs}", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}",
        f"--dashboard-agent-listen-port={agent}",  # the default port may belong to another Ray
        "--num-cpus=2", "--disable-usage-stats", f"--temp-dir={temp}",
    ]
    log = open(tmp_path / "head.log", "w")
    head = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for(dash, timeout=90)
        yield {"env": env, "dashboard": f"http://127.0.0.1:{dash}"}
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        log.close()
        subprocess.run(["rm", "-rf", str(temp)], check=False)


def test_ray_job_submit_runs_the_dag(ray_head, root, base_args):
    cmd = [
        str(BIN / "ray"), "job", "submit", "--address", ray_head["dashboard"],
        "--working-dir", str(REPO), "--", "python", "pipelines/full.py", *base_args,
        "run.targets=[corpus_stats]",
    ]
    for _ in range(10):  # the job agent can come up a few seconds after the dashboard port
        done = subprocess.run(cmd, env=ray_head["env"], capture_output=True, text=True, timeout=400)
        if "No available agent" not in done.stdout + done.stderr:
            break
        time.sleep(3)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "succeeded" in done.stdout + done.stderr
    parent, children = runs_of_latest_pipeline(root)
    assert parent.data.tags["ray_submission_id"].startswith("raysubmit_")
    assert {n: r.data.tags["cache_hit"] for n, r in children.items()} == {"corpus_stats": "false"}
    assert (next((root / "corpus_stats").iterdir()) / "stats.json").exists()
