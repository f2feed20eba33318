"""eval_harness end to end on tiny fixtures, without Ray: a random LLaMA pair as prepare_lm,
build_lm's records, random Nugget2D compressor and AR models, a Lambda; then the report reading
its table as a collected evaluation."""

from __future__ import annotations

import json
import logging
import re

import pytest

pytest.importorskip("lm_eval")
pytestmark = pytest.mark.slow  # ~25 s on 2 cores: the stage runs twice on six systems

from nugget_core.nugget2d import save_nugget2d  # noqa: E402
from stages.artifacts.evaluate import EvalTable  # noqa: E402
from stages.common.intervals import wilson  # noqa: E402
from stages.nugget2d.artifacts import BaseLM, CalibratedThreshold, LMRecords, TrainedNugget2D  # noqa: E402
from stages.nugget2d.eval_harness import EvalHarness  # noqa: E402
from stages.report.report import Report  # noqa: E402
from tests.evaluation.fixtures import artifact, context, report_required  # noqa: E402
from tests.lm_eval.fixtures import make_nugget2d  # noqa: E402
from tests.lm_eval.test_stages import FakeBuildLM, FakePrepareLM, FakeTrainNugget2D  # noqa: E402
from tests.log_lines import LogLines  # noqa: E402

SYSTEMS = ("nugget2d", "full", "streaming_llm", "snapkv", "key_norm", "nodoc")
ROWS = (*SYSTEMS, "full_whole")  # eval.harness.whole_context (on by default): Full at r = 1 last
TASKS = ("nugget_qa", "nugget_cloze", "nugget_lm_wiki")
OVERRIDES = ["eval.harness.enabled=true", f"eval.harness.tasks=[{','.join(TASKS)}]", "eval.harness.limit=2",
             "eval.harness.cloze_choices=3", "eval.harness.recent_tokens=4", "eval.harness.max_gen_toks=3",
             "eval.harness.ratio=0.25", "eval.harness.bootstrap_iters=10", "eval.presses.snapkv_window=2",
             "nugget2d.lora_rank=4", "nugget2d.lora_alpha=4", "nugget2d.scorer_layer=1"]


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory):
    """The inputs built, eval_harness run once: ``(root, ctx)``."""
    root = tmp_path_factory.mktemp("eval_harness")
    found = {}
    for stage, reads in ((FakePrepareLM, ()), (FakeBuildLM, ("prepare_lm",)), (FakeTrainNugget2D, ("prepare_lm",))):
        ctx = context(stage, {u: found[u] for u in reads}, root / stage.name, OVERRIDES)
        stage().run(ctx)
        found[stage.name] = artifact(stage.name, ctx.output_dir)
    (root / "build_lm" / "stats.json").write_text(json.dumps({"stand_ins": {
        "qa": "cloze question cut from a real sentence (stand-in for SQuAD)", "wiki": "fixture text"}}))
    for task in ("qa", "summarization"):  # the fixture's sentences start lower-case: capitalised, they split
        path = LMRecords.records_file(root / "build_lm", task)
        records = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps({**r, "document": re.sub(r"(^|\. )([a-z])", lambda m: m[1] + m[2].upper(),
                                                                      r["document"])}) + "\n" for r in records))
    ar = root / "train_nugget2d_ar"  # the autoregressive model on the LM role's base, as train_nugget2d_ar
    save_nugget2d(make_nugget2d(BaseLM.read(root / "prepare_lm", "lm").causal_lm(), seed=7),
                  TrainedNugget2D.folder(ar))
    TrainedNugget2D(TrainedNugget2D.folder(ar), "autoregressive", "", 0.25, base_role="lm").write(ar)
    calibrated = root / "calibrate_threshold"
    calibrated.mkdir()
    CalibratedThreshold(0.0, 0.25, "train_nugget2d", "fixture", 8).write(calibrated)
    found |= {"train_nugget2d_ar": artifact("train_nugget2d_ar", ar),
              "calibrate_threshold": artifact("calibrate_threshold", calibrated)}
    ctx = context(EvalHarness, found, root / "eval_harness", OVERRIDES)
    progress = logging.getLogger("nugget.eval_harness")
    handler = LogLines()
    progress.addHandler(handler)
    try:
        EvalHarness().run(ctx)
    finally:
        progress.removeHandler(handler)
    PROGRESS[:] = handler.messages
    EvalHarness.check_output(ctx)
    return root, ctx


PROGRESS: list[str] = []  # the stage's progress lines of the module's run


def test_the_stage_logs_one_progress_line_per_system_and_model(harness_run):
    """lm_eval's bars are off in a stage: each system's run on each model (the compressor's tasks,
    the autoregressive model's rolling one) logs a line with the elapsed time and an eta."""
    lines = [x for x in PROGRESS if x.startswith("[eval_harness] ") and " done (" in x]
    assert len(lines) == 2 * len(ROWS) - 1, PROGRESS  # nodoc has no rolling run (nothing to leave out)
    assert lines[0].startswith(f"[eval_harness] 1/{2 * len(ROWS)} nugget2d: nugget_qa, nugget_cloze done (")
    assert lines[-1].startswith(f"[eval_harness] {2 * len(ROWS)}/{2 * len(ROWS)} full_whole: nugget_lm_wiki done (")
    assert lines[-1].endswith("eta 0s)")


def test_table_has_every_task_and_system_with_n_and_the_harness_interval(harness_run):
    _, ctx = harness_run
    table = EvalTable.read(ctx.output_dir)
    rows = {r.system: r for r in table.rows}
    assert list(rows) == [f"{t} {s}" for t in TASKS for s in ROWS]
    snapkv = rows["nugget_lm_wiki snapkv"]  # no token-by-token form: a row saying so, no number
    assert not snapkv.metrics and snapkv.note.startswith("not applicable: snapkv ranks the context")
    for name, row in rows.items():
        if row is snapkv:
            continue
        assert row.n == 2, name
        task = name.split()[0]
        expected = {"nugget_qa": {"exact_match"}, "nugget_cloze": {"acc", "acc_norm"},
                    "nugget_lm_wiki": {"word_perplexity", "byte_perplexity", "bits_per_byte"}}[task]
        assert set(row.metrics) == expected, name
        if task in ("nugget_cloze", "nugget_qa"):  # a proportion's interval: Wilson's, of value x n in n
            for key in expected:
                assert row.interval[key] == pytest.approx(wilson(row.metrics[key] * row.n, row.n)), (name, key)
        if task == "nugget_lm_wiki":  # 2 documents: fewer than a bootstrap interval needs (15), so none
            assert row.metrics["word_perplexity"] > 1 and row.metrics["bits_per_byte"] > 0
            assert not set(expected) & set(row.interval), name
    assert table.notes[0].startswith("In this table x [a, b] is the harness's value and its 95% interval: for acc, "
                                     "acc_norm and exact_match (the share of the row's n examples) the Wilson score")
    assert "Lambda = 0.0000 from calibrate_threshold" in " ".join(table.notes)
    assert any(n.startswith("full_whole: Full at r = 1") for n in table.notes)
    assert table.stand_in.startswith("SQuAD-style QA: cloze question cut from a real sentence")  # build_lm's labels
    assert "wiki perplexity: fixture text" in table.stand_in
    # the compressor and the presses read the same budget and differ from Full on some task
    cloze = {s: rows[f"nugget_cloze {s}"].metrics["acc_norm"] for s in SYSTEMS}
    ppl = {s: rows[f"nugget_lm_wiki {s}"].metrics["word_perplexity"] for s in SYSTEMS if s != "snapkv"}
    assert len(set(ppl.values())) > 1 and all(0 <= v <= 1 for v in cloze.values())


def test_samples_tasks_and_harness_results_are_written_and_logged(harness_run):
    _, ctx = harness_run
    out = ctx.output_dir
    rows = [json.loads(x) for x in (out / "examples.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * len(TASKS) * len(ROWS) - 2  # 2 documents per task and system but SnapKV rolling
    whole = {r["ratio"] for r in rows if r["system"] == "full_whole"}
    assert whole == {1.0}  # the reference reads every context token; the others the budget of eval.harness.ratio
    qa = [r for r in rows if r["task"] == "nugget_qa" and r["system"] == "nugget2d"]
    assert qa[0]["prompt"].endswith("\nAnswer:") and isinstance(qa[0]["output"], str) and "exact_match" in qa[0]
    assert qa[0]["ratio"] == 0.25 and qa[0]["context"] == "recent" and qa[0]["target"]
    cloze = next(r for r in rows if r["task"] == "nugget_cloze")
    assert cloze["output"] in [c.strip() for c in cloze["choices"]] and cloze["acc"] in (0.0, 1.0)
    assert next(r for r in rows if r["task"] == "nugget_lm_wiki")["loglikelihood"] < 0
    # the local tasks as published: YAML + data, runnable from their folder
    assert sorted(p.name for p in (out / "tasks").iterdir()) == sorted(
        f"{t}.{ext}" for t in TASKS for ext in ("jsonl", "yaml"))
    harness = json.loads((out / "harness" / "full_context.json").read_text())
    assert set(harness["results"]) == {"nugget_qa", "nugget_cloze"} and "samples" not in harness
    assert (out / "harness" / "nugget2d_rolling.json").is_file() and not (out / "harness" / "snapkv_rolling.json").exists()
    logged = ctx.logger.metrics
    assert logged["nugget_cloze full/n"] == 2 and "nugget_cloze full/acc_stderr" in logged
    assert "nugget_cloze full/acc_low" in logged and "nugget_lm_wiki nugget2d/word_perplexity" in logged
    assert "full_context.json" in ctx.logger.artifacts and "tables/examples.json" in ctx.logger.tables


def test_full_whole_scores_a_rolling_document_as_the_hf_model(harness_run):
    """The full_whole row (Full at r = 1) reads each rolling document whole: its log-likelihood is
    lm_eval's hf model's on the base LM, not that of a window of 2 x eval.harness.recent_tokens
    (8 tokens here, far shorter than the documents)."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    root, ctx = harness_run
    rows = [json.loads(x) for x in (ctx.output_dir / "examples.jsonl").read_text().splitlines()]
    whole = sorted((r for r in rows if r["task"] == "nugget_lm_wiki" and r["system"] == "full_whole"),
                   key=lambda r: r["doc_id"])
    windowed = sorted((r for r in rows if r["task"] == "nugget_lm_wiki" and r["system"] == "full"),
                      key=lambda r: r["doc_id"])
    hf = HFLM(pretrained=str(BaseLM.read(root / "prepare_lm", "lm").path), device="cpu", dtype="float32",
              batch_size=1)
    assert all(len(hf.tok_encode(r["prompt"])) > 8 for r in whole)
    expected = hf.loglikelihood_rolling([Instance("loglikelihood_rolling", {}, (r["prompt"],), i)
                                         for i, r in enumerate(whole)])
    assert [r["loglikelihood"] for r in whole] == pytest.approx(expected, abs=1e-3)
    assert all(abs(a["loglikelihood"] - b["loglikelihood"]) > 1e-3 for a, b in zip(whole, windowed, strict=True))


def test_the_report_shows_the_table_as_a_collected_evaluation(harness_run):
    root, ctx = harness_run
    inputs = report_required(root / "evaluated")
    report = context(Report, {**inputs, "eval_harness": artifact("eval_harness", ctx.output_dir)}, root / "report", [])
    Report().run(report)
    md = (report.output_dir / "report.md").read_text()
    section = md.split("\n## lm-evaluation-harness: Nugget2D vs the baselines at r = 0.25")[1].split("\n## ")[0]
    assert "| nugget_cloze nugget2d | 2 |" in section and "not applicable: snapkv" in section
    assert (report.output_dir / "tables" / "eval_harness.csv").is_file()


def test_a_second_run_on_the_same_inputs_gives_the_same_table_and_samples(harness_run):
    """Seeded (run.seed into every seed of the harness, the cloze's order): the same numbers."""
    root, first = harness_run
    again = context(EvalHarness, dict(first.inputs), root / "eval_harness_again", OVERRIDES)
    EvalHarness().run(again)
    for name in ("table.json", "examples.jsonl", "tasks/nugget_cloze.jsonl"):
        assert (again.output_dir / name).read_text() == (first.output_dir / name).read_text(), name
