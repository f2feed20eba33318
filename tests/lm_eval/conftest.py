from __future__ import annotations

import pytest
import torch

from tests.lm_eval.fixtures import make_base_lm, make_nugget2d, make_tokenizer


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny matmuls are dominated by thread hand-offs on 2 shared cores."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_nugget2d(make_base_lm(len(tokenizer)))
