"""The fast Nugget2D decoder's default path gives the eager decoder's tokens, and in fp32
the reference loop's: on CUDA the default is CUDA-graph replay (many steps and batches);
on the CPU (guarded) the same calls decode eagerly."""

from __future__ import annotations

import pytest
import torch

from stages.common.device import to_device
from tests.nugget_core.conftest import make_causal_lm, make_doc_batch


def _model(dtype: torch.dtype, device: torch.device):
    from nugget_core import ResidualMode
    from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel

    base = make_causal_lm("llama", "sdpa").to(device, dtype)
    config = Nugget2DConfig(ratio=0.4, scorer_layer=1, lora_rank=4, residual=ResidualMode.DIRECT)
    model = Nugget2DModel(base, config).to(device, dtype).eval()
    with torch.no_grad():
        for name, p in model.peft.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.5)
    return model


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_graph_tokens_equal_eager_and_reference(device, dtype):
    from nugget_core.nugget2d.generation import generate_from_context
    from nugget_core.nugget2d.reference_generation import reference_generate_from_context

    model = _model(dtype, torch.device(device))
    batch = to_device(make_doc_batch(), device)
    with torch.no_grad():
        ctx = model.compress(batch["doc_ids"], batch["doc_mask"])
        args = (model, ctx, batch["prompt_ids"], batch["prompt_mask"])
        graph = generate_from_context(*args, max_new_tokens=24)  # the default: a graph on CUDA
        eager = generate_from_context(*args, max_new_tokens=24, cuda_graph=False)
        assert graph.tokens.device.type == device
        assert graph.tokens.tolist() == eager.tokens.tolist()
        if dtype == torch.float32:
            ref = reference_generate_from_context(*args, max_new_tokens=24)
            assert graph.tokens.tolist() == ref.tokens.tolist()
