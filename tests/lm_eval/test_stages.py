"""The four stages through the DAG, with fake upstream stages that save a tiny random
Nugget2D (the real ones train SmolLM2): Lambda flows from calibrate_threshold to
eval_lm, and every table has all of its systems."""

from __future__ import annotations

import csv
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.cli import main_full
from stages.calibrate_threshold import CalibrateThreshold
from stages.datasets.lm import qa_record, summary_record
from stages.eval_lm import EvalLM
from stages.eval_qa import EvalQA
from stages.eval_summarization import EvalSummarization
from stages.framework.dag import Dag
from stages.framework.stage import Stage, StageContext
from tests.framework.conftest import ray_local  # noqa: F401
from tests.framework.fixtures import make_fake_sources, runs_of_latest_pipeline
from tests.lm_eval.fixtures import TEXTS, make_base_lm, make_nugget2d, make_tokenizer

pytestmark = [pytest.mark.ray, pytest.mark.slow]


class FakePrepareLM(Stage):
    name = "prepare_lm"
    config_keys = ("model.lm",)

    def run(self, ctx: StageContext) -> None:
        tok = make_tokenizer(ctx.output_dir / "model")
        make_base_lm(len(tok)).save_pretrained(ctx.output_dir / "model")


class FakeBuildLM(Stage):
    name = "build_lm"
    upstream = ("prepare_lm",)

    def run(self, ctx: StageContext) -> None:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(ctx.inputs["prepare_lm"].file("model")))
        ids = tok(" ".join(TEXTS), add_special_tokens=False)["input_ids"]
        for corpus, offset in (("wiki", 0), ("pile", 200)):
            rows = [{"split": "train" if i % 3 else "test", "distant": ids[s : s + 16], "recent": ids[s + 16 : s + 24]}
                    for i, s in enumerate(range(offset, offset + 24 * 12, 24))]
            pq.write_table(pa.Table.from_pylist(rows), ctx.output_dir / f"lm_{corpus}.parquet")
        rng = np.random.default_rng(0)
        qa = [qa_record(TEXTS[i], f"Fill in the blank: {TEXTS[i + 1][:30]} _____", str(rng.integers(5))) for i in range(4)]
        summ = [summary_record(" ".join(TEXTS[i : i + 3]), TEXTS[i + 3]) for i in range(4)]
        for name, records in (("qa", qa), ("summarization", summ)):
            with open(ctx.output_dir / f"{name}.jsonl", "w") as fh:
                for i, r in enumerate(records):
                    fh.write(json.dumps({"id": f"{name}-{i}", "split": "test", **r}) + "\n")


class _FakeTrained(Stage):
    upstream = ("prepare_lm",)
    seed = 0

    def run(self, ctx: StageContext) -> None:
        from transformers import AutoModelForCausalLM

        from nugget_core.nugget2d import save_nugget2d

        base = AutoModelForCausalLM.from_pretrained(str(ctx.inputs["prepare_lm"].file("model")))
        save_nugget2d(make_nugget2d(base, seed=self.seed), ctx.output_dir / "nugget2d")


class FakeTrainNugget2D(_FakeTrained):
    name = "train_nugget2d"
    config_keys = ("train.nugget2d",)


class FakeTrainNugget2DAR(_FakeTrained):
    name = "train_nugget2d_ar"
    config_keys = ("train.nugget2d_ar",)
    seed = 1


ARGS = [
    "eval.calibration.sample_docs=8", "eval.calibration.heldout_docs=4", "eval.calibration.bins=10",
    "eval.lm.max_segments=2", "eval.lm.contexts=[{total_states: 6, compressed_tokens: 10, context_tokens: 3}]",
    "eval.qa.max_examples=3", "eval.qa.batch_size=2", "eval.qa.max_new_tokens=4", "eval.qa.lmsumm_max_new_tokens=4",
    "eval.summarization.max_examples=3", "eval.summarization.batch_size=2", "eval.summarization.max_new_tokens=4",
]


def _table(out) -> dict[str, dict]:
    with open(out / "table.csv") as fh:
        return {r["system"]: r for r in csv.DictReader(fh)}


def test_calibration_and_the_three_evaluations(ray_local, tmp_path):  # noqa: F811
    root = tmp_path / "artifacts"
    dag = Dag([FakePrepareLM, FakeBuildLM, FakeTrainNugget2D, FakeTrainNugget2DAR,
               CalibrateThreshold, EvalLM, EvalQA, EvalSummarization])
    sources = make_fake_sources(tmp_path / "sources")  # unused by these stages; the config needs a dir
    assert main_full([f"run.artifact_root={root}", f"run.sources_dir={sources}", *ARGS], dag=dag) == 0
    out = {name: next((root / name).iterdir()) for name in
           ("calibrate_threshold", "eval_lm", "eval_qa", "eval_summarization")}

    threshold = json.loads((out["calibrate_threshold"] / "threshold.json").read_text())
    assert threshold["ratio"] == 0.1 and threshold["metrics"]["sample_ratio"] == pytest.approx(0.1, abs=0.01)
    assert (out["calibrate_threshold"] / "scores_hist.png").read_bytes()[:4] == b"\x89PNG"

    lm = _table(out["eval_lm"])
    assert set(lm) == {"full 6/10/3", "compressive 6/10/3", "nugget2d 6/10/3"}
    assert float(lm["full 6/10/3"]["attended_states"]) == 6.0  # windows filled: 16 tokens of history
    assert float(lm["nugget2d 6/10/3"]["attended_states"]) <= 6.0
    assert all(float(r["wiki_subword_ppl"]) > 1 and float(r["pile_word_ppl"]) > 1 for r in lm.values())
    lm_json = json.loads((out["eval_lm"] / "metrics.json").read_text())
    assert f"Lambda = {threshold['lambda']:.4f}" in lm_json["notes"][0] and "matches" in lm_json["notes"][0]

    qa = _table(out["eval_qa"])
    assert set(qa) == {"full", "nodoc", "lmsumm", "nugget2d 5x", "nugget2d 10x"}
    assert float(qa["full"]["context_ratio"]) == 1.0 and float(qa["nugget2d 10x"]["context_ratio"]) < 0.2
    assert float(qa["lmsumm"]["summary_ratio"]) > 0
    assert float(qa["nugget2d 10x"]["kv_bytes"]) < float(qa["full"]["kv_bytes"])
    assert len((out["eval_qa"] / "examples.jsonl").read_text().splitlines()) == 5 * 3

    summ = _table(out["eval_summarization"])
    assert set(summ) == {"full_zs", "full_ft", "nugget2d_ft 10x"}
    assert summ["full_ft"]["note"].startswith("not run in this profile") and summ["full_ft"]["rouge1"] == ""
    assert (out["eval_summarization"] / "table.md").read_text().count("|") > 20

    _, runs = runs_of_latest_pipeline(root)
    assert runs["calibrate_threshold"].data.metrics["lambda"] == pytest.approx(threshold["lambda"])
    assert "full/accuracy" in runs["eval_qa"].data.metrics
    assert "nugget2d_ft 10x/rougeL" in runs["eval_summarization"].data.metrics
    assert runs["eval_lm"].data.tags["lambda_scorer_match"] == "True"
