"""Suite-wide settings: hermetic (no hub look-ups), CPU only, local Ray on loopback."""

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # before any `import ray`
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
# every tensor on a declared device (stages.common.device_guard): pipeline stages and training
# workers started by any test (Ray workers and subprocesses inherit this), and each test's own
# thread (the fixture below)
os.environ.setdefault("NUGGET_DEVICE_GUARD", "1")

from tests.gpu_support import skip_gpu_tests_without_cuda  # noqa: E402  (after the env settings)

#: session fixtures that run a pipeline or write many files: the tests reading one share an xdist
#: group, so `make test`'s workers (pytest-xdist, --dist loadgroup) compute each once
SHARED_SESSION_FIXTURES = ("pipeline_run", "paper_inputs")


def pytest_collection_modifyitems(config, items) -> None:
    skip_gpu_tests_without_cuda(items)
    for item in items:  # a file's tests stay on one worker (its module fixtures run once), unless they share more
        if item.get_closest_marker("xdist_group") is None:
            shared = [f for f in SHARED_SESSION_FIXTURES if f in item.fixturenames]
            item.add_marker(pytest.mark.xdist_group(shared[0] if shared else item.nodeid.split("::", 1)[0]))


@pytest.fixture(autouse=True)
def device_guard():
    """Each test body under the device guard (where NUGGET_DEVICE_GUARD is set): project code
    that makes a tensor without naming its device raises `DeviceDisciplineError`."""
    from stages.common import device_guard

    with device_guard.from_env() as guard:
        yield guard


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray for the session (2 CPUs, loopback, repo importable by workers)."""
    import ray

    if not ray.is_initialized():
        ray.init(
            address="local",  # never attach to a head the developer has running
            num_cpus=2,
            include_dashboard=False,
            # the repo first, then what this process was given: on a machine whose packages
            # come from PYTHONPATH (the GPU image's /tmp/site), workers given the repo alone
            # would lose them (pipelines.cli.connect_ray keeps it the same way)
            runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(
                p for p in (str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")) if p)}},
        )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def pipeline_run(ray_local, tmp_path_factory):
    """The Nugget2D DAG of tests/lm_eval on tiny fakes, run once per session (its tests and
    the GPU stage tests read it): ``(artifact root, {stage: published folder})``."""
    from tests.lm_eval.test_stages import run_lm_eval_dag

    return run_lm_eval_dag(tmp_path_factory)


@pytest.fixture(scope="session")
def paper_inputs(tmp_path_factory):
    """Every external input of profile=paper as local files (`tests.rehearsal.inputs`),
    written once per session: ``(root, overrides)``."""
    from tests.rehearsal.inputs import PaperInputs, ensure_paper_inputs

    root = tmp_path_factory.mktemp("paper") / "inputs"
    return PaperInputs(root, ensure_paper_inputs(root))
