"""`stages.costs`' per-stage estimates from the config: model shapes, what each stage
counts, and what it says it cannot count (never a made-up number)."""

from __future__ import annotations

import json

import pytest

from stages.config import load_config
from stages.costs import nugget2d
from stages.costs.decoder import DecoderShape, lora_step_work
from stages.costs.estimate import CPU, EVAL, NONE, TRAIN
from stages.costs.known_models import LLAMA_7B, SMOLLM2_135M
from stages.costs.plan import estimate
from stages.costs.published import SPLITS
from stages.costs.seq2seq import Seq2SeqShape
from stages.costs.shapes import lm_shape, re_shape, seq2seq_shape
from stages.costs.work import flops
from stages.registry import DAG


def config(*overrides: str):
    return load_config(list(overrides), check=False)


def test_shapes_of_each_profiles_models(tmp_path):
    tiny, paper = config("profile=tiny"), config("profile=paper")
    assert lm_shape(tiny.model.lm).shape == DecoderShape.from_config(SMOLLM2_135M)
    found = lm_shape(paper.model.lm, chat=True)
    assert found.shape == DecoderShape.from_config(LLAMA_7B) and "Llama-2-7b-chat-hf" in found.basis
    assert seq2seq_shape(tiny.model.seq2seq).shape == Seq2SeqShape(64, 4, 4, 4, 128, 4000)
    assert seq2seq_shape(paper.model.seq2seq).shape == Seq2SeqShape(1024, 12, 12, 16, 4096, 250054)
    assert re_shape(tiny).shape == seq2seq_shape(tiny.model.seq2seq).shape  # model.re.source=stage_ae
    assert re_shape(paper).shape == Seq2SeqShape(512, 6, 6, 8, 2048, 32128)
    assert lm_shape(config("model.lm.keep_layers=4").model.lm).shape.layers == 4
    # a local folder's config.json wins over the table; an unknown name has no shape
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({**LLAMA_7B, "num_hidden_layers": 2}))
    local = config("model.lm.source=pretrained", f"model.lm.name_or_path={tmp_path / 'm'}")
    assert lm_shape(local.model.lm).shape.layers == 2
    unknown = config("model.lm.source=pretrained", "model.lm.name_or_path=someone/mystery-lm")
    assert lm_shape(unknown.model.lm).shape is None
    cost = estimate(unknown, "train_nugget2d")
    assert cost.kind == TRAIN and not cost.work and "mystery-lm" in cost.missing


def test_a_nugget2d_fit_is_its_lora_step_and_scorer_features_times_its_steps():
    cfg = config("profile=tiny", "train.nugget2d.extra_ratios=[]", "train.nugget2d.ar_scorer=compressor")
    job, lm, shape = cfg.train.nugget2d, cfg.data.lm, DecoderShape.from_config(SMOLLM2_135M)
    batch, k = job.examples_per_step(), nugget2d.nuggets(cfg.nugget2d.ratio, lm.doc_tokens)
    lora = flops(lora_step_work(shape, batch=batch, doc=lm.doc_tokens, prompt=lm.prompt_tokens,
                                answer=lm.answer_tokens, rank=cfg.nugget2d.lora_rank,
                                targets=cfg.nugget2d.lora_target_modules, nuggets=k))
    features = 2 * cfg.nugget2d.scorer_layer * shape.layer_matmul_params() * batch * lm.doc_tokens
    (work,) = estimate(cfg, "train_nugget2d").work
    assert work.flops == pytest.approx(job.max_steps * (lora + features))


def test_paper_counts_come_from_config_or_a_stated_published_size():
    paper = config("profile=paper")
    qa = estimate(paper, "eval_qa")
    assert qa.kind == EVAL and qa.work and any(SPLITS["squad_validation"].basis in n for n in qa.notes)
    assert all(": 10570 x (" in w.what for w in qa.work)
    lm = estimate(paper, "eval_lm")  # the Pile's 100k tokens are in the config, WikiText's segments are not
    assert lm.work and "wiki" in lm.missing and all(w.what.startswith("pile") for w in lm.work)
    for name in ("eval_harness", "eval_nugget2d_ae", "eval_nugget_lm"):
        cost = estimate(paper, name)
        assert not cost.work and cost.missing, name


def test_offline_data_with_no_count_is_not_estimated():
    cost = estimate(config("profile=tiny", "eval.qa.max_examples=0"), "eval_qa")
    assert cost.kind == EVAL and not cost.work and "max_examples=0" in cost.missing


@pytest.mark.parametrize("profile", ["tiny", "small", "gpu1", "paper"])
def test_every_stage_of_every_profile_is_costed_or_says_why_not(profile):
    cfg = config(f"profile={profile}")
    for name in DAG.for_config(cfg).order:
        cost = estimate(cfg, name)
        assert cost.kind in (TRAIN, EVAL, CPU, NONE), name
        assert cost.work or cost.missing or cost.kind == CPU, name
        assert all(w.flops >= 0 and w.nbytes >= 0 and (w.flops or w.nbytes) for w in cost.work), name
