from __future__ import annotations

import pytest

from tests.lm_eval.fixtures import make_base_lm, make_nugget2d, make_tokenizer
from tests.torch_threads import one_thread  # noqa: F401  (autouse in this package)


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_nugget2d(make_base_lm(len(tokenizer)))
