"""The shared fixtures the GPU tests reuse from the CPU suites."""

from tests.framework.conftest import ray_local  # noqa: F401  (session Ray, sees the GPUs)
from tests.training.conftest import mt_artifacts  # noqa: F401
