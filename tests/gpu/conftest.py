"""The GPU tests' shared fixtures. Each test runs twice: on ``cuda`` (marked ``gpu``: `make
gpu-test`, skipped without a GPU) and on ``cpu`` in `make test`, where the device guard
(`stages.common.device_guard`, on for the whole suite) fails any tensor that project code
makes without naming its device: the bug class that only shows once the model is on a GPU."""

import pytest


@pytest.fixture(params=[pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.gpu)])
def device(request) -> str:
    """Where the test puts its models: ``cuda`` (marked ``gpu``) or ``cpu`` (guarded)."""
    return request.param
