"""A password-protected MLflow server (MLflow's own basic-auth app on 127.0.0.1): the
preflight probes it with the credentials, and a run against it logs its stage without
the password reaching stdout, stderr, the artifact root, the server's store or Ray's logs."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stages.framework.preflight import http_problem
from stages.framework.tracking import RunLogger
from stages.framework.tracking_auth import (
    PASSWORD_ENV,
    USER_ENV,
    MissingCredentials,
    use_credentials,
)
from tests.cluster.services import free_port, wait_for_port

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
USER, SECRET = "admin", "Pw-7f3c9e1d-not-in-any-log"


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RAY_"))}
    return {**env, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """``(http://127.0.0.1:PORT, the server's folder)``: the admin's password is given
    by environment only, so the folder holds no plain copy of it."""
    pytest.importorskip("flask_wtf", reason="MLflow's basic-auth app needs Flask-WTF (pip install 'mlflow[auth]')")
    home = tmp_path_factory.mktemp("mlflow-auth")
    (home / "auth.ini").write_text(
        "[mlflow]\ndefault_permission = READ\n"
        f"database_uri = sqlite:///{home / 'auth.db'}\nadmin_username = {USER}\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
    )
    port = free_port()
    env = {**_clean_env(), "MLFLOW_AUTH_CONFIG_PATH": str(home / "auth.ini"), "MLFLOW_AUTH_ADMIN_PASSWORD": SECRET,
           "MLFLOW_FLASK_SERVER_SECRET_KEY": "test-csrf-key", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    cmd = [str(BIN / "mlflow"), "server", "--app-name", "basic-auth", "--host", "127.0.0.1", "--port", str(port),
           "--workers", "1", "--backend-store-uri", f"sqlite:///{home / 'store.db'}",
           "--artifacts-destination", str(home / "artifacts")]
    with open(home / "server.log", "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_port(port, 90, "mlflow server --app-name basic-auth", proc)
        yield f"http://127.0.0.1:{port}", home
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_user_info_moves_into_mlflows_variables(monkeypatch):
    monkeypatch.delenv(USER_ENV, raising=False)
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    assert use_credentials("http://a%40b:p%3Aw@mlflow.example:5000/x") == "http://mlflow.example:5000/x"
    assert (os.environ[USER_ENV], os.environ[PASSWORD_ENV]) == ("a@b", "p:w")  # percent-decoded, as requests does
    assert use_credentials("sqlite:////data/mlflow.db") == "sqlite:////data/mlflow.db"


def test_a_worker_without_the_drivers_credentials_says_what_to_set(monkeypatch):
    monkeypatch.delenv(USER_ENV, raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
    logger = pickle.loads(pickle.dumps(RunLogger("http://127.0.0.1:1", "run", needs_credentials=True)))
    with pytest.raises(MissingCredentials, match=f"{USER_ENV}.*ray start"):
        logger.client  # noqa: B018 (the property builds the client)


def _with_password(uri: str, password: str = SECRET) -> str:
    return uri.replace("http://", f"http://{USER}:{password}@")


def test_preflight_probes_a_protected_server_with_the_uris_credentials(auth_server, monkeypatch):
    uri, _ = auth_server
    for name in (USER_ENV, PASSWORD_ENV, "MLFLOW_TRACKING_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    assert http_problem(_with_password(uri)) is None  # user info in the URI: taken, not a host name
    wrong = http_problem(_with_password(uri, "wrong-pw-1234"))
    assert wrong is not None and "\n" not in wrong.message
    assert wrong.message.startswith("run.tracking_uri:") and "refused the credentials" in wrong.message
    assert "wrong-pw-1234" not in wrong.message and repr(USER) in wrong.message
    none = http_problem(uri)
    assert none is not None and "asks for credentials" in none.message and USER_ENV in none.message
    monkeypatch.setenv(USER_ENV, USER)
    monkeypatch.setenv(PASSWORD_ENV, SECRET)
    assert http_problem(uri) is None  # MLflow's own variables


@pytest.mark.slow
def test_a_run_against_a_protected_server_never_shows_the_password(auth_server, tmp_path, sources):
    uri, server_home = auth_server
    root = tmp_path / "artifacts"
    ray_tmp = Path(tempfile.mkdtemp(prefix="nr", dir="/tmp"))  # short: Ray's socket paths
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pipelines.stage", "corpus_stats", f"run.artifact_root={root}",
             f"run.sources_dir={sources}", f"run.tracking_uri={_with_password(uri)}", "run.num_cpus=1"],
            cwd=REPO, env={**_clean_env(), "RAY_TMPDIR": str(ray_tmp)}, capture_output=True, text=True, timeout=240,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-3000:]
        # the run's closing lines name the store and the parent run's page, without user info
        assert f"MLflow     : {uri.rstrip('/')}" in output and f"MLflow run : {uri.rstrip('/')}/#/experiments/" in output
        assert SECRET not in output
        ray_logs = list(ray_tmp.glob("ray/session_*/logs"))
        assert ray_logs, f"no Ray session logs under {ray_tmp}"
        found = subprocess.run(["grep", "-rl", "--", SECRET, str(root), str(server_home), str(ray_tmp)],
                               capture_output=True, text=True)
        assert found.returncode == 1 and found.stdout == "", f"the password is in: {found.stdout}"
        # the stage task logged into the protected server: its run has its metrics
        from mlflow.tracking import MlflowClient

        os.environ[USER_ENV], os.environ[PASSWORD_ENV] = USER, SECRET
        try:
            client = MlflowClient(uri)
            experiment = client.get_experiment_by_name("nugget-pipeline")
            runs = client.search_runs([experiment.experiment_id], "tags.stage = 'corpus_stats'")
        finally:
            del os.environ[USER_ENV], os.environ[PASSWORD_ENV]
        assert runs and runs[0].info.status == "FINISHED" and runs[0].data.metrics
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
