"""The harness model's rules without lm_eval: how a context is split, the KV budget each
system keeps, Full at a budget as the plain LM on a truncated context, batching, greedy
generation, the rolling configuration and the errors for arguments and request types."""

from __future__ import annotations

import math

import pytest
import torch

from stages.nugget2d.harness import scoring
from stages.nugget2d.harness.settings import (
    HarnessSettings,
    rolling_setting,
    rolling_windows,
    split_context,
    whole_document,
)
from tests.lm_eval.fixtures import make_base_lm, make_nugget2d

VOCAB = 90
PAD = 0


@pytest.fixture(scope="module")
def model():
    # non-zero LoRA B: phi and theta differ from the base LM, so routing mistakes show
    return make_nugget2d(make_base_lm(VOCAB))


def requests(lengths=(30, 9, 17, 4), cont=3, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return [(torch.randint(3, VOCAB, (n,), generator=g, device="cpu").tolist(),
             torch.randint(3, VOCAB, (cont,), generator=g, device="cpu").tolist()) for n in lengths]


def test_split_context_holds_out_the_plain_part():
    ids = list(range(10))
    assert split_context(ids, 1) == (list(range(9)), [9])
    assert split_context(ids, 4) == (list(range(6)), [6, 7, 8, 9])
    assert split_context(ids, 12) == ([], ids)  # nothing to compress
    with pytest.raises(ValueError, match="no tokens"):
        split_context([], 1)
    assert HarnessSettings("full", 0.5, context="whole", recent_tokens=7).plain_tokens == 1
    assert HarnessSettings("full", 0.5, context="recent", recent_tokens=7).plain_tokens == 7


@pytest.mark.parametrize("field,value,match", [
    ("system", "h2o", "system: unknown value 'h2o'"),
    ("context", "all", "context: unknown value 'all'"),
    ("ratio", 0.0, "ratio: value 0.0"),
    ("ratio", 1.5, "ratio: value 1.5"),
    ("recent_tokens", 0, "recent_tokens: value 0"),
    ("batch_size", 0, "batch_size: value 0"),
    ("compressed_tokens", 0, "compressed_tokens: value 0"),
    ("threshold", float("nan"), "threshold: value nan"),
    ("max_length", 0, "max_length: value 0"),
])
def test_bad_arguments_are_named(field, value, match):
    args = {"system": "full", "ratio": 0.5, field: value}
    with pytest.raises(ValueError, match=match):
        HarnessSettings(**args)


@pytest.mark.parametrize("system", ["nugget2d", "full", "streaming_llm", "snapkv", "key_norm"])
def test_each_system_keeps_ceil_r_n_positions(model, system):
    settings = HarnessSettings(system, 0.3, recent_tokens=5, batch_size=4)
    reqs = requests()
    scores = scoring.score_continuations(model, settings, reqs, PAD)
    for (ctx, _), score in zip(reqs, scores, strict=True):
        n = max(len(ctx) - 5, 0)
        assert score.compressed == n
        assert score.kept == math.ceil(0.3 * n - 1e-9)  # 0 for the 4-token context: nothing compressed
        assert math.isfinite(score.logprob) and score.logprob < 0


def test_nodoc_keeps_nothing_and_reads_the_plain_part_alone(model):
    reqs = requests()
    nodoc = scoring.score_continuations(model, HarnessSettings("nodoc", 0.3, recent_tokens=5), reqs, PAD)
    assert [s.kept for s in nodoc] == [0, 0, 0, 0]
    # the same as Full given only the plain part (its last 5 context tokens) as the context
    cut = [(ctx[-5:], cont) for ctx, cont in reqs]
    alone = scoring.score_continuations(model, HarnessSettings("full", 1.0, context="recent", recent_tokens=5),
                                        cut, PAD)
    assert [s.logprob for s in nodoc] == pytest.approx([s.logprob for s in alone], abs=1e-4)


def test_full_at_a_budget_is_the_lm_on_the_most_recent_tokens(model):
    """Full at r keeps the last ceil(r n) compressed tokens as a text of its own."""
    reqs = requests(lengths=(30, 17))
    budget = scoring.score_continuations(model, HarnessSettings("full", 0.25, recent_tokens=5), reqs, PAD)
    truncated = []
    for ctx, cont in reqs:
        compressed, plain = split_context(ctx, 5)
        truncated.append((compressed[len(compressed) - math.ceil(0.25 * len(compressed)):] + plain, cont))
    plain_lm = scoring.score_continuations(model, HarnessSettings("full", 1.0, recent_tokens=5), truncated, PAD)
    assert [s.logprob for s in budget] == pytest.approx([s.logprob for s in plain_lm], abs=1e-4)
    whole = scoring.score_continuations(model, HarnessSettings("full", 1.0, recent_tokens=5), reqs, PAD)
    assert [s.logprob for s in budget] != pytest.approx([s.logprob for s in whole], abs=1e-3)


@pytest.mark.parametrize("system", ["nugget2d", "snapkv", "nodoc"])
def test_batches_answer_as_single_requests(model, system):
    reqs = requests()
    reqs = reqs[:2] + [(reqs[0][0], reqs[2][1]), (reqs[1][0], reqs[3][1])] + reqs[2:]  # shared contexts
    batched = scoring.score_continuations(model, HarnessSettings(system, 0.3, recent_tokens=5, batch_size=4),
                                          reqs, PAD)
    single = scoring.score_continuations(model, HarnessSettings(system, 0.3, recent_tokens=5), reqs, PAD)
    assert [s.logprob for s in batched] == pytest.approx([s.logprob for s in single], abs=1e-4)
    assert [s.kept for s in batched] == [s.kept for s in single]


def test_greedy_generation_with_every_token_is_the_lm_s(model):
    ctx = requests(lengths=(20,))[0][0]
    settings = HarnessSettings("full", 1.0, context="whole")
    (ours,) = scoring.generate(model, settings, [ctx], 6, None, PAD)
    ids = torch.tensor([ctx], device="cpu")
    with model.merged_adapter(None):
        reference = model.lm.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6, do_sample=False,
                                      pad_token_id=PAD)
    assert ours == reference[0, len(ctx):].tolist()


def test_rolling_configuration_is_table_1_s_at_r_0_1():
    setting = rolling_setting(HarnessSettings("nugget2d", 0.1, recent_tokens=32))
    assert (setting.total_states, setting.compressed_tokens, setting.context_tokens) == (64, 320, 32)
    setting = rolling_setting(HarnessSettings("full", 0.5, recent_tokens=8, compressed_tokens=10))
    assert (setting.total_states, setting.compressed_tokens, setting.context_tokens) == (13, 10, 8)


def test_rolling_errors_name_the_system_and_argument(model):
    ids = list(range(3, 20))
    with pytest.raises(ValueError, match="'snapkv' cannot answer loglikelihood_rolling"):
        scoring.rolling_logprob(model, HarnessSettings("snapkv", 0.5), ids)
    with pytest.raises(ValueError, match="threshold: system nugget2d answers loglikelihood_rolling"):
        scoring.rolling_logprob(model, HarnessSettings("nugget2d", 0.5), ids)


@pytest.mark.parametrize("system", ["full", "nodoc", "streaming_llm", "key_norm", "nugget2d"])
def test_rolling_streams_run_at_the_budget(model, system):
    ids = requests(lengths=(40,))[0][0]
    settings = HarnessSettings(system, 0.25, recent_tokens=6, threshold=0.0)
    value = scoring.rolling_logprob(model, settings, ids)
    assert math.isfinite(value) and value < 0
    if system in ("full", "nodoc"):  # a window of 6 + ceil(0.25 * 24) = 12 tokens, or of 6
        window = 12 if system == "full" else 6
        cut = [ids[max(0, i + 1 - window): i + 1] for i in range(len(ids) - 1)]
        with model.merged_adapter(None):
            expected = sum(float(torch.log_softmax(model.lm(input_ids=torch.tensor([c], device="cpu")).logits[0, -1]
                                                   .float(), -1)[ids[i + 1]]) for i, c in enumerate(cut))
        assert value == pytest.approx(expected, abs=1e-3)


def _plain_logprob(model, ids) -> float:
    """The base LM's log-probability of ``ids[1:]`` in one teacher-forced pass."""
    with model.merged_adapter(None):
        logits = model.lm(input_ids=torch.tensor([ids], device="cpu")).logits[0].float()
    return float(torch.log_softmax(logits[:-1], -1).gather(-1, torch.tensor(ids[1:])[:, None]).sum())


@pytest.mark.parametrize("recent_tokens", [4, 32])
def test_full_at_ratio_1_reads_the_whole_rolling_document(model, recent_tokens):
    """eval_harness's full_whole row (Full at r = 1, eval.harness.recent_tokens, no
    compressed_tokens) scores a rolling document with every earlier token in view: the plain
    LM's log-likelihood of the whole document, not a window of recent_tokens + ceil(recent_tokens)
    tokens (64 at the default 32, the size of Full's window at r = 0.1)."""
    ids = requests(lengths=(150,))[0][0]
    settings = HarnessSettings("full", 1.0, recent_tokens=recent_tokens)
    assert whole_document(settings)
    value = scoring.rolling_logprob(model, settings, ids)
    assert value == pytest.approx(_plain_logprob(model, ids), abs=1e-3)
    # a window of 2 x recent_tokens reads less: the check can fail
    windowed = scoring.rolling_logprob(model, HarnessSettings("full", 1.0, recent_tokens=recent_tokens,
                                                              compressed_tokens=recent_tokens), ids)
    assert abs(windowed - value) > 1e-2
    # the other systems at r = 1 keep their streams (their budget is a KV budget per step)
    assert not whole_document(HarnessSettings("nodoc", 1.0)) and not whole_document(HarnessSettings("full", 0.5))


def test_full_at_ratio_1_past_max_length_scores_lm_eval_s_windows(model):
    """Past the LM's max_length, lm_eval's hf model scores the rest of a document in windows of
    max_length tokens, each read from one token of context (the last window reads a full
    max_length); Full at r = 1 does the same."""
    assert rolling_windows(41, 16) == [(0, 1, 17), (16, 17, 33), (24, 33, 41)]
    assert rolling_windows(10, 16) == [(0, 1, 10)] and rolling_windows(1, 16) == []
    ids = requests(lengths=(41,))[0][0]
    value = scoring.rolling_logprob(model, HarnessSettings("full", 1.0, max_length=16), ids)
    # the windows by hand: ids[1:17] after ids[0]; ids[17:33] after ids[16]; ids[33:41] after ids[24:33]
    expected = (_plain_logprob(model, ids[0:17]) + _plain_logprob(model, ids[16:33])
                + _plain_logprob(model, ids[24:41]) - _plain_logprob(model, ids[24:33]))
    assert value == pytest.approx(expected, abs=1e-3)
    assert abs(value - _plain_logprob(model, ids)) > 1e-2  # less context than one pass


@pytest.mark.parametrize("system", ["full", "streaming_llm", "key_norm", "nodoc"])
@pytest.mark.parametrize("extra", [-3, 0, 1, 9])
def test_rolling_shortcuts_equal_the_token_by_token_streams(model, system, extra):
    """Full's batched windows and the one-pass reading of a document a stream holds whole
    (`scoring.KEEP_ALL_BELOW_BUDGET`: ``n - 1 <= total_states``, the boundary included) give the
    log-probability of the system's token-by-token stream, below, at and past the budget."""
    from stages.nugget2d.lm.streams import make_stream, run_segment, windows

    settings = HarnessSettings(system, 0.25, recent_tokens=6, threshold=0.0)
    setting = rolling_setting(settings)
    ids = requests(lengths=(setting.total_states + 1 + extra,))[0][0]
    with windows(model, setting, None):
        stream = make_stream(system, model, setting, settings.ratio, None, settings.press.sink_tokens)
        expected = -sum(run_segment(stream, list(ids), 1).nll)
    assert scoring.rolling_logprob(model, settings, ids) == pytest.approx(expected, abs=1e-3)
