"""LM systems of eval_lm: Compressive with ratio 1 equals Full, and the attended-state
accounting matches the windows of each system."""

from __future__ import annotations

import math

import pytest
import torch

from stages.nugget2d.lm.streams import (
    ContextSetting,
    attended_states,
    make_stream,
    run_segment,
    windows,
)

SETTING = ContextSetting(total_states=10, compressed_tokens=20, context_tokens=4)


def _ids(model, n: int = 30, seed: int = 3) -> list[int]:
    vocab = model.lm.config.vocab_size
    return torch.randint(5, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.mark.parametrize("adapter", [None, "decoder"])
def test_compressive_with_ratio_one_equals_a_rolling_full_window(model, adapter):
    from nugget_core.nugget2d import FullStream

    ids = _ids(model)
    with windows(model, SETTING, threshold=0.0):
        full = run_segment(FullStream(model, SETTING.total_states, adapter, reencode=False), ids, start=12)
        comp = run_segment(make_stream("compressive", model, SETTING, 1.0, adapter), ids, start=12)
        # a real compression ratio changes the predictions (the test can fail)
        pooled = run_segment(make_stream("compressive", model, SETTING, 0.25, adapter), ids, start=12)
    torch.testing.assert_close(torch.tensor(comp.nll), torch.tensor(full.nll), rtol=1e-4, atol=1e-4)
    assert comp.attended_states == full.attended_states == SETTING.total_states
    assert not torch.allclose(torch.tensor(pooled.nll), torch.tensor(full.nll), atol=1e-3)
    assert pooled.attended_states < full.attended_states


def test_full_window_attends_to_at_most_total_states(model):
    ids = _ids(model, 16)
    with windows(model, SETTING, threshold=0.0):
        run = run_segment(make_stream("full", model, SETTING, 0.1, None), ids, start=1)
    expected = [min(i + 1, SETTING.total_states) for i in range(len(ids) - 1)]
    assert run.attended_states == pytest.approx(sum(expected) / len(expected))
    assert math.isnan(run.nugget_ratio)


@pytest.mark.parametrize(("threshold", "ratio"), [(-1e9, 1.0), (1e9, 0.0)])
def test_nugget2d_attended_states_follow_the_windows(model, threshold, ratio):
    ids = _ids(model, 40)
    c, d, cap = SETTING.context_tokens, SETTING.compressed_tokens, SETTING.total_states - SETTING.context_tokens
    with windows(model, SETTING, threshold=threshold):
        stream = make_stream("nugget2d", model, SETTING, 0.1, None)
        seen = []
        for token in ids:
            seen.append(attended_states(stream))
            stream.step(token)
            assert stream.nugget_positions.numel() <= cap + c  # memory stays bounded
    nuggets = [min(max(p - c + 1, 0), d, cap) if ratio else 0 for p in range(len(ids))]
    assert seen == [n + min(p, c - 1) + 1 for p, n in enumerate(nuggets)]
    assert sum(stream.selected) / len(stream.selected) == ratio


def test_windows_restore_the_config(model):
    before = model.config
    with windows(model, SETTING, threshold=0.5):
        assert model.config.recent_window == 4 and model.config.threshold == 0.5
        assert model.config.scorer_context == before.scorer_context  # the scorer keeps its window
    assert model.config is before


def test_history_tokens_cost_a_reencoding_full_window_nothing(model):
    """run_segment only advances a windowed Full over the history (no forward) and scores
    exactly what stepping every token scores."""
    from nugget_core.nugget2d import FullStream, stream_nll

    ids = _ids(model, 24)
    with windows(model, SETTING, threshold=0.0):
        run = run_segment(make_stream("full", model, SETTING, 0.1, None), ids, start=12)
        stepped = stream_nll(FullStream(model, SETTING.total_states), torch.tensor(ids), start=12)
        calls = []
        stream = make_stream("full", model, SETTING, 0.1, None)
        original = model.lm_forward
        model.lm_forward = lambda *a, **k: calls.append(1) or original(*a, **k)
        try:
            run_segment(stream, ids, start=12)
        finally:
            del model.lm_forward
    torch.testing.assert_close(torch.tensor(run.nll), stepped, rtol=1e-5, atol=1e-5)
    assert len(calls) == len(ids) - 12  # one forward per scored token, none for the history


def test_training_notes_name_the_rows_read_with_another_window_than_trained():
    """Nugget2D table 1: one AR fit (omega_r = 64, 832-token samples) serves both budgets."""
    from stages.nugget2d.lm.streams import ContextSetting, training_notes

    settings = [ContextSetting(128, 640, 64), ContextSetting(64, 320, 32)]
    assert training_notes(64, 832, settings, ["full", "compressive", "nugget2d"], trained_baselines=True) == [
        "nugget2d and compressive: one model each, trained with omega_r = 64 on 832-token samples, for every "
        "configuration; the 64/320/32 rows evaluate it at another omega_r",
        "full: trained attending to the whole 832-token sample, evaluated with a sliding window of 128 / 64 tokens"]
    # untrained baselines (the base LM) have no training window to compare
    assert training_notes(64, 832, settings[:1], ["full", "compressive", "nugget2d"], trained_baselines=False) == [
        "nugget2d: one model each, trained with omega_r = 64 on 832-token samples, for every configuration"]
