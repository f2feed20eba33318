from tests.training.conftest import mt_artifacts  # noqa: F401
