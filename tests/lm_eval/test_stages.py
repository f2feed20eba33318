"""The four stages through the DAG on a tiny random LLaMA, with a fake compressor stage
(a random Nugget2D; the real one trains SmolLM2) and the real downstream training stages
(train_nugget2d_ar, train_full_ft, train_nugget2d_ft): Lambda is calibrated on the
compressor's scorer and flows into autoregressive training and eval_lm, and every table
has all of its systems, measured."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nugget_core.nugget2d import Nugget2DUsage, load_nugget2d
from pipelines.cli import main_full
from stages.artifacts.evaluate import EvalTable
from stages.artifacts.trainer_state import TRAINER_STATE
from stages.framework.dag import Dag
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import (
    BaseLM,
    CalibratedThreshold,
    FullFinetunedLM,
    LMRecords,
    TrainedNugget2D,
    scorer_fingerprint,
)
from stages.nugget2d.calibrate_threshold import CalibrateThreshold
from stages.nugget2d.eval_lm import EvalLM
from stages.nugget2d.eval_nugget2d_ae import EvalNugget2DAE
from stages.nugget2d.eval_qa import EvalQA
from stages.nugget2d.eval_summarization import EvalSummarization
from stages.nugget2d.lm_builders import qa_record, summary_record
from stages.nugget2d.train_full_ft import TrainFullFT
from stages.nugget2d.train_nugget2d import TrainNugget2D
from stages.nugget2d.train_nugget2d_ae import TrainNugget2DAE
from stages.nugget2d.train_nugget2d_ar import TrainNugget2DAR
from stages.nugget2d.train_nugget2d_ft import TrainNugget2DFT
from tests.framework.fixtures import make_fake_sources, runs_of_latest_pipeline
from tests.lm_eval.fixtures import ADAPTER, TEXTS, make_base_lm, make_nugget2d, make_tokenizer

pytestmark = [pytest.mark.ray, pytest.mark.slow]


CHAT_TEMPLATE = ("{% for m in messages %}<|user|>\n{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


class FakePrepareLM(Stage):
    """Two base LMs as with ``model.lm.chat_name_or_path`` (Nugget2D §3): ``model/`` for
    language modelling, ``chat/`` (other weights, same tokenizer) for QA / summaries."""

    name = "prepare_lm"
    config_keys = ("model.lm",)

    def run(self, ctx: StageContext) -> None:
        tok = make_tokenizer()
        tok.chat_template = CHAT_TEMPLATE  # profile=tiny lays prompts out in the LM's chat template
        for folder, seed in ((BaseLM.folder(ctx.output_dir), 0), (ctx.output_dir / BaseLM.CHAT_DIR, 1)):
            tok.save_pretrained(str(folder))
            make_base_lm(len(tok), seed=seed).save_pretrained(folder)
        BaseLM.write_roles(ctx.output_dir, BaseLM.CHAT_DIR)


class FakeBuildLM(Stage):
    name = "build_lm"
    upstream = ("prepare_lm",)

    def run(self, ctx: StageContext) -> None:
        tok = BaseLM.read(ctx.inputs["prepare_lm"]).tokenizer()
        ids = tok(" ".join(TEXTS), add_special_tokens=False)["input_ids"]
        for corpus, offset in (("wiki", 0), ("pile", 200)):
            split = lambda i: "test" if i % 3 == 0 else "dev" if i % 6 == 1 else "train"  # noqa: E731
            rows = [{"split": split(i), "document_id": f"{corpus}-{i // 2}", "distant": ids[s : s + 16],
                     "recent": ids[s + 16 : s + 24]} for i, s in enumerate(range(offset, offset + 24 * 12, 24))]
            pq.write_table(pa.Table.from_pylist(rows), LMRecords.segments_file(ctx.output_dir, corpus))
        # continuation windows (doc 12 + prompt 4 + answer 8 tokens), every third one a test window
        windows = [{"split": "test" if i % 3 == 0 else "dev" if i % 3 == 1 else "train", "document_id": f"wiki-{i // 2}",
                    "doc": ids[s : s + 12], "prompt": ids[s + 12 : s + 16], "answer": ids[s + 16 : s + 24]}
                   for i, s in enumerate(range(0, 24 * 12, 24))]
        pq.write_table(pa.Table.from_pylist(windows), LMRecords.continuation_file(ctx.output_dir))
        rng = np.random.default_rng(0)
        qa = [qa_record(TEXTS[i], f"Fill in the blank: {TEXTS[i + 1][:30]} _____", str(rng.integers(5))) for i in range(4)]
        summ = [summary_record(" ".join(TEXTS[i : i + 3]), TEXTS[i + 3]) for i in range(20)]
        for name, records in (("qa", qa), ("summarization", summ)):
            with open(LMRecords.records_file(ctx.output_dir, name), "w") as fh:
                for i, r in enumerate(records):  # 4 test records first; the fine-tuning stages use the rest
                    split = "test" if i < 4 else "dev" if i < 8 else "train"
                    fh.write(json.dumps({"id": f"{name}-{i}", "split": split, **r}) + "\n")


class FakeTrainNugget2D(Stage):
    """Random Nugget2D models in train_nugget2d's layout: the main one and the variants
    the real stage trains for this config (another seed each)."""

    name = "train_nugget2d"
    upstream = ("prepare_lm",)
    config_keys = ("train.nugget2d", "nugget2d")

    def run(self, ctx: StageContext) -> None:
        import dataclasses

        import torch

        from nugget_core.nugget2d import save_nugget2d

        job, ratio = ctx.cfg("train.nugget2d"), ctx.cfg("nugget2d").ratio
        save_nugget2d(make_nugget2d(BaseLM.read(ctx.inputs["prepare_lm"], "chat").causal_lm(), seed=0),
                      TrainedNugget2D.folder(ctx.output_dir))
        records = {}
        for seed, (name, (objective, r)) in enumerate(TrainNugget2D.variant_specs(job, ratio).items(), 1):
            role = "lm" if name == "autoencoding" else "chat"  # as the real stage places them
            model = make_nugget2d(BaseLM.read(ctx.inputs["prepare_lm"], role).causal_lm(), seed=seed)
            model.config = dataclasses.replace(model.config, ratio=r)
            g = torch.Generator().manual_seed(seed)
            with torch.no_grad():  # a scorer of its own, as a separate training gives
                for p in model.scorer.parameters():
                    p.add_(torch.randn(p.shape, generator=g) * 0.1)
            folder = TrainedNugget2D.variant_folder(ctx.output_dir, name)
            save_nugget2d(model, folder)
            records[name] = {"dir": str(folder.relative_to(ctx.output_dir)), "objective": objective, "ratio": r,
                             "base_role": role}
        TrainedNugget2D(TrainedNugget2D.folder(ctx.output_dir), job.objective, "", ratio, records,
                        "chat").write(ctx.output_dir)
        for folder in (ctx.output_dir, *(ctx.output_dir / Path(r["dir"]).parent for r in records.values())):
            (folder / TRAINER_STATE).write_text(json.dumps(  # what each fit leaves beside its model
                {"step": 0, "initial_dev_loss": 7.0, "exported_dev_loss": 7.0, "dev_loss_n": 1, "tokens_seen": 0}))


TRAIN_ARGS = [f"train.{job}.{k}" for job in ("full_ft", "nugget2d_ft", "nugget2d_ar", "nugget2d_ae") for k in (
    "max_steps=4", "batch_size=2", "eval_every=4", "checkpoint_every=4", "dev_examples=2", "lr=5e-3",
    "warmup_steps=0")] + ["train.full_ft.max_doc_tokens=24", "train.nugget2d_ft.max_doc_tokens=24"]
# the fake compressor's Nugget2D config (tests.lm_eval.fixtures.make_nugget2d)
ARGS = [*TRAIN_ARGS, "nugget2d.lora_rank=4", "nugget2d.lora_alpha=4", "nugget2d.scorer_layer=1",
        "nugget2d.recent_window=8",
    "calibrate.threshold.sample_docs=8", "calibrate.threshold.heldout_docs=4", "calibrate.threshold.bins=10",
    "eval.lm.max_segments=2", "eval.lm.contexts=[{total_states: 6, compressed_tokens: 10, context_tokens: 3}]",
    "eval.qa.max_examples=3", "eval.qa.batch_size=2", "eval.qa.max_new_tokens=4", "eval.qa.lmsumm_max_new_tokens=4",
    "eval.summarization.max_examples=3", "eval.summarization.batch_size=2", "eval.summarization.max_new_tokens=4",
    # the paper's compressors: a model of its own for QA's 5x row, the AR scorer from autoencoding
    "train.nugget2d.extra_ratios=[0.2]", "train.nugget2d.ar_scorer=autoencoding",
    # Full and Compressive trained in train_nugget2d_ar's fit, decoded by eval_lm (Nugget2D §5.1)
    "train.nugget2d_ar.baselines=[full,compressive]", "eval.lm.baseline_adapter=trained",
    # the autoencoding study: Nugget2D and ICAE at r = 0.25 on windows of up to 24 tokens
    "train.nugget2d_ae.ratios=[0.25]", "train.nugget2d_ae.max_doc_tokens=24", "train.nugget2d_ae.min_doc_tokens=4",
    "eval.autoencoding.lengths=[8,16,24]", "eval.autoencoding.max_docs=2", "eval.autoencoding.batch_size=2",
    "eval.autoencoding.extra_tokens=2", "eval.autoencoding.analysis_docs=4", "eval.autoencoding.top_tokens=3",
    "eval.autoencoding.highlight_docs=1",
]


def _table(out) -> dict[str, dict]:
    return {r.system: r.metrics for r in EvalTable.read(out).rows}


def _published(root, stage: str):
    """The stage's one complete artifact."""
    (done,) = list((root / stage).iterdir())
    return done


def run_lm_eval_dag(tmp_path_factory) -> tuple:
    """The DAG the `pipeline_run` session fixture (tests/conftest.py) runs once."""
    tmp_path = tmp_path_factory.mktemp("lm_eval_dag")
    root = tmp_path / "artifacts"
    dag = Dag([FakePrepareLM, FakeBuildLM, FakeTrainNugget2D, TrainNugget2DAR, TrainFullFT, TrainNugget2DFT,
               CalibrateThreshold, EvalLM, EvalQA, EvalSummarization, TrainNugget2DAE, EvalNugget2DAE])
    sources = make_fake_sources(tmp_path / "sources")  # unused by these stages; the config needs a dir
    assert main_full([f"run.artifact_root={root}", f"run.sources_dir={sources}", *ARGS], dag=dag) == 0
    return root, {name: _published(root, name) for name in
                  ("prepare_lm", "build_lm", "train_full_ft", "train_nugget2d_ft", "calibrate_threshold",
                   "eval_lm", "eval_qa", "eval_summarization", "train_nugget2d_ae", "eval_nugget2d_ae")}


def test_calibration_and_the_three_evaluations(pipeline_run):
    root, out = pipeline_run

    threshold = CalibratedThreshold.read(out["calibrate_threshold"])
    assert threshold.ratio == 0.1 and threshold.metrics["sample_ratio"] == pytest.approx(0.1, abs=0.01)
    assert (out["calibrate_threshold"] / "scores_hist.png").read_bytes()[:4] == b"\x89PNG"

    lm = _table(out["eval_lm"])
    assert set(lm) == {f"{s} 6/10/3" for s in ("full", "compressive", "nugget2d", "streaming_llm", "key_norm")} | {
        "Kneser-Ney trigram (floor)"}
    assert float(lm["full 6/10/3"]["attended_states"]) == 6.0  # windows filled: 16 tokens of history
    assert float(lm["nugget2d 6/10/3"]["attended_states"]) <= 6.0
    # the presses fill the same budget: 3 distant states + the 3-token window
    assert float(lm["streaming_llm 6/10/3"]["attended_states"]) == float(lm["key_norm 6/10/3"]["attended_states"]) == 6.0
    assert all(float(r["wiki_subword_ppl"]) > 1 and float(r["pile_word_ppl"]) > 1 for r in lm.values())
    # every perplexity with its per-article statistics: the corpus's 2 test segments are cut from 2 articles
    # (build_lm's document_id), every system on the same ones; no interval from 2; the trigram floor on each
    lm_table = EvalTable.read(out["eval_lm"])
    for row in lm_table.rows:
        for c in ("wiki", "pile"):
            for k in (f"{c}_subword_ppl", f"{c}_word_ppl"):
                assert row.units[k].ids == (f"{c}-0", f"{c}-1") and row.units[k].value() == pytest.approx(
                    row.metrics[k]), (row.system, k)
        assert row.n == 4 and not row.interval
    assert set(lm_table.floors) == {f"{c}_{k}_ppl" for c in ("wiki", "pile") for k in ("subword", "word")}
    lm_notes = lm_table.notes
    assert f"Lambda = {threshold.threshold:.4f}" in lm_notes[0] and "matches" in lm_notes[0]
    assert "their own LoRA theta, trained by train_nugget2d_ar" in lm_notes[1]
    # the row's models were trained at another window than the 6/10/3 they are read with (Nugget2D table 1)
    assert any(n.startswith("nugget2d and compressive: one model each, trained with omega_r =") and "6/10/3 rows" in n
               for n in lm_notes)

    qa = _table(out["eval_qa"])
    presses = ("streaming_llm", "snapkv", "key_norm")
    assert set(qa) == {"full", "nodoc", "lmsumm", *(f"{s} {x}x" for s in ("nugget2d", *presses) for x in (5, 10))}
    for s in presses:  # the same KV budget as Nugget2D at each ratio: ceil(r n) positions per layer
        for x in (5, 10):
            assert float(qa[f"{s} {x}x"]["context_ratio"]) == float(qa[f"nugget2d {x}x"]["context_ratio"])
            assert float(qa[f"{s} {x}x"]["kv_bytes"]) < float(qa["full"]["kv_bytes"])
    assert float(qa["full"]["context_ratio"]) == 1.0 and float(qa["nugget2d 10x"]["context_ratio"]) < 0.2
    assert float(qa["lmsumm"]["summary_ratio"]) > 0
    assert float(qa["nugget2d 10x"]["kv_bytes"]) < float(qa["full"]["kv_bytes"])
    assert len((out["eval_qa"] / "examples.jsonl").read_text().splitlines()) == 11 * 3
    qa_notes = " ".join(EvalTable.read(out["eval_qa"]).notes)
    assert "nugget2d 5x: the model trained at r = 0.2" in qa_notes
    assert "nugget2d 10x: the model trained at r = 0.1" in qa_notes
    assert "streaming_llm / snapkv / key_norm: training-free KV presses" in qa_notes
    assert "streaming_llm / key_norm: training-free" in " ".join(lm_notes) and "SnapKV" not in " ".join(lm_notes)

    summ = _table(out["eval_summarization"])
    assert set(summ) == {"full_zs", "full_ft", "nugget2d_ft 10x", *(f"{s} 10x" for s in presses), "lead-3 (floor)"}
    assert set(EvalTable.read(out["eval_summarization"]).floors) == {"rouge1", "rouge2", "rougeL", "rougeLsum"}
    qa_table = EvalTable.read(out["eval_qa"])
    assert qa_table.floors["accuracy"].value == qa["nodoc"]["accuracy"]
    assert {r.units["accuracy"].ids for r in qa_table.rows} == {("qa-0", "qa-1", "qa-2")}
    assert float(summ["key_norm 10x"]["context_ratio"]) == float(summ["nugget2d_ft 10x"]["context_ratio"])
    assert all(0 <= float(r[m]) <= 100 for r in summ.values() for m in ("rouge1", "rouge2", "rougeL"))
    assert float(summ["full_ft"]["context_ratio"]) == 1.0 and float(summ["nugget2d_ft 10x"]["context_ratio"]) < 0.2
    summaries = [json.loads(x) for x in (out["eval_summarization"] / "examples.jsonl").read_text().splitlines()]
    by_system = {s: [e["output"] for e in summaries if e["system"] == s] for s in ("full_zs", "full_ft")}
    assert by_system["full_zs"] != by_system["full_ft"]  # the fine-tuned adapter is in the decoded LM
    assert (out["eval_summarization"] / "table.md").read_text().count("|") > 20
    assert all("prompts laid out as chat_template" in (out[s] / "table.md").read_text()
               for s in ("eval_qa", "eval_summarization"))

    _, runs = runs_of_latest_pipeline(root)
    assert runs["calibrate_threshold"].data.metrics["lambda"] == pytest.approx(threshold.threshold)
    assert "full/accuracy" in runs["eval_qa"].data.metrics
    assert "nugget2d_ft 10x/rougeL" in runs["eval_summarization"].data.metrics
    assert runs["train_full_ft"].data.metrics["steps"] == 4 and "best_dev_loss" in runs["train_nugget2d_ft"].data.metrics
    assert runs["eval_lm"].data.tags["lambda_scorer_match"] == "True"
    assert runs["eval_lm"].data.metrics["floor/wiki_subword_ppl"] == pytest.approx(
        lm_table.floors["wiki_subword_ppl"].value)
    assert runs["eval_lm"].data.metrics["full 6/10/3/wiki_subword_ppl_units"] == 2


def test_merged_full_ft_lm_reproduces_the_training_logits(pipeline_run):
    """train_full_ft's export, merged into the base LM for decoding, gives the logits the
    peft model had in the worker on the probe batch; the Full path adds nothing to it."""
    import torch

    from nugget_core.nugget2d import Nugget2DConfig
    from stages.nugget2d.full_ft_task import FullFinetuneTask
    from stages.training.loop import PROBE_FILE

    _, out = pipeline_run
    chat = BaseLM.read(out["prepare_lm"], "chat")  # the summarisation experiments' base LM
    model = FullFinetunedLM.read(out["train_full_ft"]).load(chat,
                                                           Nugget2DConfig(lora_rank=4, lora_alpha=4, scorer_layer=1))
    task = FullFinetuneTask(LMRecords.read(out["build_lm"]), str(chat.path),
                            "summarization",
                            lora_rank=4, lora_alpha=4, **ADAPTER, max_doc_tokens=24, dev_examples=2,
                            prompt_format="chat_template")
    probe = task.collate(task.load_split("dev")[:2], step=-1, rank=0, train=False)
    with torch.no_grad():
        logits = model.lm_forward(input_ids=probe["input_ids"], attention_mask=probe["attention_mask"]).logits
    torch.testing.assert_close(logits, torch.load(out["train_full_ft"] / PROBE_FILE), atol=1e-4, rtol=1e-4)


def test_nugget2d_ft_starts_from_the_compressor_and_moves_away(pipeline_run):
    """train_nugget2d_ft loads train_nugget2d's model (same config, adapters present) and
    fine-tuning changes the decoder adapter theta (trained by objective finetune)."""
    root, out = pipeline_run
    start, base = TrainedNugget2D.read(_published(root, "train_nugget2d")).load_from(out["prepare_lm"])
    tuned_output = TrainedNugget2D.read(out["train_nugget2d_ft"], "train_nugget2d_ft")
    assert tuned_output.objective == "finetune" and not tuned_output.soft_prompt
    assert base.role == tuned_output.base_role == "chat"  # QA / summaries: the chat model (Nugget2D §3)
    tuned, _ = tuned_output.load_from(out["prepare_lm"])
    assert tuned.config == start.config
    theta = lambda m: {n: p for n, p in m.named_parameters() if ".decoder." in n and "lora_" in n}  # noqa: E731
    before, after = theta(start), theta(tuned)
    assert before.keys() == after.keys() and before
    assert any(not (before[n] == after[n]).all() for n in before)
    assert max(float((before[n] - after[n]).abs().max()) for n in before) < 1.0  # fine-tuned, not re-initialised


def test_autoregressive_stage_reuses_the_autoencoding_scorer_frozen(pipeline_run):
    """Paper §2.5: train_nugget2d_ar copies the autoencoding compressor's scorer (with
    ``ar_scorer: autoencoding``, not the QA compressor's) and never updates it, so the
    Lambda calibrated on that scorer is the threshold of the AR model."""
    root, out = pipeline_run
    ar_out = TrainedNugget2D.read(_published(root, "train_nugget2d_ar"), "train_nugget2d_ar")
    ar, base = ar_out.load_from(out["prepare_lm"])
    compressors = TrainedNugget2D.read(_published(root, "train_nugget2d"))
    autoencoder = compressors.variant("autoencoding")
    assert autoencoder.objective == "autoencoding"
    # the scorer reads the features of the LM it runs in: the autoencoder trained on the AR model's base
    assert ar_out.base_role == autoencoder.base_role == base.role == "lm" and compressors.base_role == "chat"
    threshold = CalibratedThreshold.read(out["calibrate_threshold"])
    assert threshold.scorer_stage == "train_nugget2d/autoencoding"
    assert scorer_fingerprint(ar) == threshold.scorer_fingerprint == scorer_fingerprint(autoencoder.load(base))
    assert scorer_fingerprint(ar) != scorer_fingerprint(compressors.load_from(out["prepare_lm"])[0])
    theta = [p for n, p in ar.named_parameters() if ".decoder." in n and "lora_B" in n]
    assert any(bool(p.abs().sum() > 0) for p in theta)  # the adapters did train (LoRA B starts at 0)
    # the checkpoint travels: its Lambda, how it reads inputs, where its base LM is, a model card
    assert ar.config.threshold == threshold.threshold
    assert ar.usage == Nugget2DUsage(objective="autoregressive", soft_prompt=False)
    alone = load_nugget2d(ar_out.path, base_within=root)  # the base LM found from base_model.json alone
    assert alone.config.threshold == threshold.threshold and scorer_fingerprint(alone) == scorer_fingerprint(ar)
    card = (ar_out.path / "README.md").read_text()
    assert "## Usage" in card and "load_nugget2d" in card and "train_nugget2d_ar" in card
    assert all((ar_out.path.parent / v["dir"] / "README.md").is_file() for v in ar_out.variants.values())


def test_lm_baselines_are_trained_beside_the_autoregressive_model(pipeline_run):
    """train_nugget2d_ar's fit also trains Full and Compressive (Nugget2D §5.1: "with the
    same configuration"): theta only (phi, scorer and soft prompt as initialised), each its
    own weights, and eval_lm's baseline rows decode with them, not with the base LM."""
    import torch

    from stages.nugget2d.lm.streams import ContextSetting, make_stream, run_segment, windows

    root, out = pipeline_run
    base = BaseLM.read(out["prepare_lm"], "lm")
    ar_out = TrainedNugget2D.read(_published(root, "train_nugget2d_ar"), "train_nugget2d_ar")
    assert {n: v["objective"] for n, v in ar_out.variants.items()} == {"full": "full", "compressive": "compressive"}
    ar = ar_out.load(base)
    models = {name: ar_out.variant(name).load(base) for name in ("full", "compressive")}
    lora = lambda m, part, kind: {n: p for n, p in m.named_parameters() if f".{part}." in n and kind in n}  # noqa: E731
    for model in models.values():
        assert any(bool(p.abs().sum() > 0) for p in lora(model, "decoder", "lora_B").values())  # theta trained
        assert all(bool(p.abs().sum() == 0) for p in lora(model, "compressor", "lora_B").values())  # phi untouched
    full_theta, comp_theta = (lora(models[n], "decoder", "lora_B") for n in ("full", "compressive"))
    assert any(not torch.equal(full_theta[n], comp_theta[n]) for n in full_theta)
    # eval_lm's Full row is the trained Full model's perplexity, recomputed here on one segment
    segments = pq.read_table(LMRecords.read(out["build_lm"]).segments("wiki")).to_pylist()
    first = next(r for r in segments if r["split"] == "test" and r["recent"])
    setting = ContextSetting(6, 10, 3)
    examples = [json.loads(x) for x in (out["eval_lm"] / "examples.jsonl").read_text().splitlines()]
    logged = next(e for e in examples if e["system"] == "full" and e["corpus"] == "wiki" and e["segment"] == 0)
    threshold = CalibratedThreshold.read(out["calibrate_threshold"])
    for model, expect_equal in ((models["full"], True), (ar, False)):
        with windows(model, setting, threshold.threshold):
            run = run_segment(make_stream("full", model, setting, threshold.ratio, "decoder"),
                              first["distant"] + first["recent"], len(first["distant"]))
        ppl = float(np.exp(np.mean(run.nll)))
        assert (ppl == pytest.approx(logged["subword_ppl"], rel=1e-4)) is expect_equal


def test_autoencoding_study_compares_nugget2d_with_fixed_icae_memory(pipeline_run):
    """train_nugget2d_ae trains Nugget2D and ICAE the same way; eval_nugget2d_ae decodes
    each length from ceil(r L) nuggets vs ICAE's fixed ceil(r x 24) slots, and counts the
    nugget tokens; both models load outside Ray."""
    import math

    from nugget_core.nugget2d import ICAEModel, Nugget2DModel

    root, out = pipeline_run
    trained = TrainedNugget2D.read(out["train_nugget2d_ae"], "train_nugget2d_ae")
    assert (trained.objective, trained.ratio, set(trained.variants)) == ("autoencoding", 0.25, {"icae_r0.25"})
    icae = trained.variant("icae_r0.25").load_from(out["prepare_lm"])[0]
    assert isinstance(icae, ICAEModel) and icae.slots == 6
    assert isinstance(trained.load_from(out["prepare_lm"])[0], Nugget2DModel)

    table = _table(out["eval_nugget2d_ae"])
    for n in (8, 16, 24):
        assert float(table["nugget2d r0.25"][f"states_L{n}"]) == math.ceil(0.25 * n)
        assert float(table["icae r0.25"][f"states_L{n}"]) == 6
        assert all(0 <= float(table[s][f"bleu_L{n}"]) <= 100 for s in ("nugget2d r0.25", "icae r0.25"))
    shares = [r for name, r in table.items() if name.startswith("token")]
    assert shares and all(0 <= float(r["share_nuggets"]) <= 100 for r in shares)
    ae = EvalTable.read(out["eval_nugget2d_ae"])
    rows = ae.rows
    assert {r.system: r.n for r in rows}["nugget2d r0.25"] == 2  # 2 documents, each at 3 lengths
    for row in (r for r in rows if r.system in ("nugget2d r0.25", "icae r0.25")):  # each BLEU over the 2 documents
        assert {k: u.ids for k, u in row.units.items()} == dict.fromkeys(
            ("bleu", "bleu_L8", "bleu_L16", "bleu_L24"), ("wiki-0", "wiki-1"))
        assert not row.interval  # fewer than MIN_UNITS documents
    assert set(ae.floors) == {"bleu", "bleu_L8", "bleu_L16", "bleu_L24"}
    assert "[[" in (out["eval_nugget2d_ae"] / "nuggets.md").read_text()
    examples = [json.loads(x) for x in (out["eval_nugget2d_ae"] / "examples.jsonl").read_text().splitlines()]
    assert len(examples) == 2 * 3 * 2
    _, runs = runs_of_latest_pipeline(root)
    assert {"icae r0.25/bleu", "icae r0.25/bleu_units", "floor/bleu"} <= set(runs["eval_nugget2d_ae"].data.metrics)
    assert any(k.startswith("icae_r0.25") for k in runs["train_nugget2d_ae"].data.metrics)  # the variant's own

