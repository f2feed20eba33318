from tests.framework.conftest import ray_local  # noqa: F401  (session Ray)
from tests.training.conftest import mt_artifacts  # noqa: F401
