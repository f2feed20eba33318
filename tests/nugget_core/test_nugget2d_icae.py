"""ICAE memory slots (the autoencoding baseline of Nugget2D §4): what the decoder reads,
that it learns, and that it saves and loads."""

from __future__ import annotations

import pytest
import torch

from nugget_core.nugget2d import (
    ICAEModel,
    Nugget2DConfig,
    Nugget2DModel,
    TinyCausalSpec,
    build_tiny_causal_lm,
    generate_from_context,
    load_icae,
    save_icae,
)

pytestmark = pytest.mark.usefixtures("one_thread")
ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _icae(causal_factory, slots: int = 3) -> ICAEModel:
    torch.manual_seed(0)
    return ICAEModel(Nugget2DModel(causal_factory(), Nugget2DConfig(scorer_layer=1, lora_rank=4)), slots)


def test_memory_is_a_fixed_number_of_slots_whatever_the_length(causal_factory, doc_batch):
    icae = _icae(causal_factory, slots=3)
    ids, mask = doc_batch["doc_ids"], doc_batch["doc_mask"]  # lengths 12 and 8
    with torch.no_grad():
        ctx = icae.compress(ids, mask)
    assert ctx.counts.tolist() == [3, 3] and ctx.lengths.tolist() == [3, 3]
    assert [k.shape for k in ctx.kv.keys] == [torch.Size([2, 2, 3, 8])] * 2
    assert ctx.positions.tolist() == [[0, 1, 2]] * 2


def test_slots_read_the_real_tokens_and_nothing_of_the_padding(causal_factory, doc_batch):
    icae = _icae(causal_factory)
    ids, mask = doc_batch["doc_ids"], doc_batch["doc_mask"]
    with torch.no_grad():
        batched = icae.compress(ids, mask)
        alone = icae.compress(ids[1:, :8], mask[1:, :8])  # row 1 unpadded
        changed = ids.clone()
        changed[1, 0] = (changed[1, 0] + 1) % 60 + 3
        other = icae.compress(changed, mask)
    for layer in range(2):
        torch.testing.assert_close(batched.kv.keys[layer][1:], alone.kv.keys[layer], atol=1e-5, rtol=1e-5)
        assert not torch.allclose(other.kv.keys[layer][1], batched.kv.keys[layer][1])  # the document matters
        torch.testing.assert_close(other.kv.keys[layer][0], batched.kv.keys[layer][0])  # per row


def test_icae_trains_only_its_parts(causal_factory, doc_batch):
    icae = _icae(causal_factory)
    icae.trainable()
    names = {n for n, p in icae.named_parameters() if p.requires_grad}
    assert "memory" in names and "nugget2d.soft_prompt" in names
    assert not any("scorer" in n for n in names) and any("lora" in n for n in names)
    assert names == {n for n in names if "lora" in n or n in ("memory", "nugget2d.soft_prompt")}
    icae(doc_batch["doc_ids"], doc_batch["doc_mask"], doc_batch["doc_ids"], doc_batch["doc_mask"]).loss.backward()
    assert float(icae.memory.grad.abs().sum()) > 0
    assert all(p.grad is None for p in icae.nugget2d.scorer.parameters())


def test_icae_overfits_reconstruction():
    """4 documents of 20 tokens through 4 slots; 100 Adam steps (as the Nugget2D
    autoencoding overfit test). Measured (CPU, fp32): 5.80 -> 0.0035; asserted: x20."""
    torch.manual_seed(0)
    spec = TinyCausalSpec(hidden_size=64, intermediate_size=128, initializer_range=0.2)
    config = Nugget2DConfig(scorer_layer=1, lora_rank=8, lora_alpha=16, lora_target_modules=ALL_LINEAR)
    icae = ICAEModel(Nugget2DModel(build_tiny_causal_lm("llama", spec), config), slots=4)
    optimiser = torch.optim.Adam(icae.trainable(), lr=2e-2)
    doc = torch.randint(3, 64, (4, 20), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(doc)
    losses = []
    for _ in range(100):
        loss = icae(doc, mask, doc, mask).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] / 20, losses[::10]


def test_save_and_load_give_the_same_reconstruction(causal_factory, doc_batch, tmp_path):
    icae = _icae(causal_factory)
    with torch.no_grad():
        icae.memory.normal_()
    save_icae(icae, tmp_path / "icae")
    loaded = load_icae(tmp_path / "icae", causal_factory())
    ids, mask = doc_batch["doc_ids"], doc_batch["doc_mask"]
    with torch.no_grad():
        a = generate_from_context(icae.nugget2d, icae.compress(ids, mask), max_new_tokens=5, soft_prompt=True,
                                  cuda_graph=False)
        b = generate_from_context(loaded.nugget2d, loaded.compress(ids, mask), max_new_tokens=5, soft_prompt=True,
                                  cuda_graph=False)
    assert a.tokens.tolist() == b.tokens.tolist()
    with pytest.raises(FileNotFoundError, match="is not an ICAE model folder .it has no icae_memory.safetensors"):
        load_icae(tmp_path, causal_factory())
