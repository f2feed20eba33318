"""On CUDA: the fast Nugget2D decoder's CUDA-graph replay gives the eager decoder's
tokens, and in fp32 the reference loop's; graphs replay across many steps and batches."""

from __future__ import annotations

import pytest
import torch

from stages.common.device import to_device
from tests.nugget_core.conftest import make_causal_lm, make_doc_batch

pytestmark = pytest.mark.gpu
CUDA = torch.device("cuda")


def _model(dtype: torch.dtype):
    from nugget_core import ResidualMode
    from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel

    base = make_causal_lm("llama", "sdpa").to(CUDA, dtype)
    config = Nugget2DConfig(ratio=0.4, scorer_layer=1, lora_rank=4, residual=ResidualMode.DIRECT)
    model = Nugget2DModel(base, config).to(CUDA, dtype).eval()
    with torch.no_grad():
        for name, p in model.peft.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.5)
    return model


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_graph_tokens_equal_eager_and_reference(dtype):
    from nugget_core.nugget2d.generation import generate_from_context
    from nugget_core.nugget2d.reference_generation import reference_generate_from_context

    model = _model(dtype)
    batch = to_device(make_doc_batch(), CUDA)
    with torch.no_grad():
        ctx = model.compress(batch["doc_ids"], batch["doc_mask"])
        args = (model, ctx, batch["prompt_ids"], batch["prompt_mask"])
        graph = generate_from_context(*args, max_new_tokens=24)  # default on CUDA: graph
        eager = generate_from_context(*args, max_new_tokens=24, cuda_graph=False)
        assert graph.tokens.device.type == "cuda"
        assert graph.tokens.tolist() == eager.tokens.tolist()
        if dtype == torch.float32:
            ref = reference_generate_from_context(*args, max_new_tokens=24)
            assert graph.tokens.tolist() == ref.tokens.tolist()
