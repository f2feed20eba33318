"""Generation from nuggets: greedy equals a hand-written greedy decode without KV cache,
and beam search (5 beams) on a padded batch equals beam search on each document alone,
which fails if the per-document scores are expanded to the beams in the wrong order."""

from __future__ import annotations

import pytest
import torch

from nugget_core import NuggetConfig, get_nugget_model

ARCHS = ("bart", "t5")


def _direct_model(model_factory, arch: str, impl: str):
    # direct: the scores change the forward pass, so a misplaced score changes the output.
    config = NuggetConfig(ratio=0.5, scorer_layer=1, residual="direct", feedback=False)
    nugget_model = get_nugget_model(model_factory(arch, impl), config)
    with torch.no_grad():  # scores of a few units, so that they matter
        nugget_model.scorer.ffn[-1].weight.mul_(20.0)
    return nugget_model


def _manual_greedy(nugget_model, input_ids, attention_mask, steps: int) -> torch.Tensor:
    config = nugget_model.base_model.config
    nuggets = nugget_model.encode(input_ids, attention_mask)
    out = torch.full((input_ids.shape[0], 1), config.decoder_start_token_id)
    done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
    for _ in range(steps):
        logits = nugget_model(nuggets=nuggets, decoder_input_ids=out, use_cache=False).logits
        nxt = logits[:, -1].argmax(-1)
        nxt = torch.where(done, config.pad_token_id, nxt)
        done |= nxt.eq(config.eos_token_id)
        out = torch.cat([out, nxt[:, None]], dim=1)
    return out


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("arch", ARCHS)
def test_greedy_generate_equals_manual_greedy(model_factory, batch_factory, arch, impl):
    nugget_model = _direct_model(model_factory, arch, impl)
    batch = batch_factory(nugget_model.base_model)
    with torch.no_grad():
        expected = _manual_greedy(nugget_model, batch["input_ids"], batch["attention_mask"], 8)
    got = nugget_model.generate(
        batch["input_ids"], batch["attention_mask"], num_beams=1, do_sample=False, max_new_tokens=8
    )
    assert torch.equal(got, expected[:, : got.shape[1]])


@pytest.mark.parametrize("arch", ARCHS)
def test_beam_search_batched_equals_per_document(model_factory, batch_factory, arch):
    nugget_model = _direct_model(model_factory, arch, "sdpa")
    batch = batch_factory(nugget_model.base_model)  # lengths 9 and 6: k = 5 and 3
    kwargs = dict(num_beams=5, max_new_tokens=7, output_scores=True, return_dict_in_generate=True)
    batched = nugget_model.generate(batch["input_ids"], batch["attention_mask"], **kwargs)
    assert batched.sequences.shape[0] == 2
    for row, length in enumerate([9, 6]):
        alone = nugget_model.generate(
            batch["input_ids"][row : row + 1, :length],
            batch["attention_mask"][row : row + 1, :length],
            **kwargs,
        )
        n = alone.sequences.shape[1]
        assert torch.equal(batched.sequences[row, :n], alone.sequences[0])
        torch.testing.assert_close(batched.sequences_scores[row], alone.sequences_scores[0])


def test_beam_search_uses_the_scores(model_factory, batch_factory):
    """Guard for the test above: the scores do change what beam search returns."""
    nugget_model = _direct_model(model_factory, "bart", "sdpa")
    batch = batch_factory(nugget_model.base_model)
    kwargs = dict(num_beams=5, max_new_tokens=7, output_scores=True, return_dict_in_generate=True)
    with_scores = nugget_model.generate(batch["input_ids"], batch["attention_mask"], **kwargs)
    nugget_model.residual.mode = nugget_model.residual.mode.NONE
    without = nugget_model.generate(batch["input_ids"], batch["attention_mask"], **kwargs)
    assert (with_scores.sequences_scores - without.sequences_scores).abs().max() > 1e-3
