"""Stage output contracts (`stages.artifacts`): every contract reads back what it wrote,
and a missing or malformed part fails with an error naming the stage, file and field."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from stages.artifacts.base import ContractError, Location
from stages.artifacts.evaluate import Column, EvalTable, StoredEvalTable, TableRow
from stages.corpora.artifacts import CorpusStatistics, StoredCorpusStatistics
from stages.framework.stage import Artifact
from stages.nugget.artifacts.data import (
    MtDocuments,
    SimilarityDataset,
    StoredSimilarityDataset,
    TokenizerFolder,
)
from stages.nugget.artifacts.models import NuggetSweep, TrainedBaselines, TrainedNugget
from stages.nugget.artifacts.results import (
    NuggetAnalysis,
    ReconstructionResults,
    SimilarityResults,
    StoredNuggetAnalysis,
    StoredReconstructionResults,
    StoredSimilarityResults,
)
from stages.nugget2d.artifacts import (
    BaseLM,
    CalibratedThreshold,
    FullFinetunedLM,
    LMRecords,
    TrainedNugget2D,
)


class FakeTokenizer:
    def save_pretrained(self, folder: str) -> None:
        Path(folder).mkdir(parents=True)
        (Path(folder) / "tokenizer.json").write_text("{}")


def _touch(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- round trips ---------------------------------------------------------------------
def test_data_contracts_round_trip(tmp_path):
    tok = TokenizerFolder.write(tmp_path, FakeTokenizer())
    assert TokenizerFolder.read(tmp_path) == tok and (tok.path / "tokenizer.json").exists()

    for split in ("train", "dev"):
        _touch(MtDocuments.split_file(tmp_path, split))
    assert MtDocuments.read(tmp_path).split("dev") == tmp_path / "dev.parquet"

    _touch(BaseLM.folder(tmp_path) / "config.json")
    assert BaseLM.read(tmp_path).path == tmp_path / "model"

    _touch(LMRecords.segments_file(tmp_path, "wiki"))
    _touch(LMRecords.records_file(tmp_path, "qa"))
    records = LMRecords.read(tmp_path)
    assert records.segments("wiki").name == "lm_wiki.parquet" and records.records("qa").name == "qa.jsonl"

    stats = CorpusStatistics({"source": "gensim_lee", "documents": 3, "top_words": [["the", 4]]})
    stats.write(tmp_path)
    assert CorpusStatistics.read(tmp_path) == stats and stats.source == "gensim_lee"

    for name in SimilarityDataset.FILES:
        _touch(tmp_path / "pi" / name)
    assert SimilarityDataset.read(tmp_path / "pi", "build_pi").path == tmp_path / "pi"
    # with the store key of the artifact it came from (none for a plain directory)
    stored = StoredSimilarityDataset.read(Artifact("build_rr", "k1", "", tmp_path / "pi", {}))
    assert (stored.output.path, stored.where.key) == (tmp_path / "pi", "k1")
    assert StoredSimilarityDataset.read(tmp_path / "pi").where.key == ""
    (tmp_path / "pi" / "docs.tsv").unlink()
    with pytest.raises(ContractError, match="output of stage 'build_rr'.*docs.tsv"):
        StoredSimilarityDataset.read(Artifact("build_rr", "k1", "", tmp_path / "pi", {}))


def test_train_contracts_round_trip(tmp_path):
    (tmp_path / "model").mkdir()
    nugget = TrainedNugget(tmp_path / "model", "mt", 0.1, 3, "topk", True, dev_loss=2.5)
    nugget.write(tmp_path)
    assert TrainedNugget.read(tmp_path) == nugget

    trials = [{"trial": "ae-r0.1-l0", "objective": "ae", "ratio": 0.1, "scorer_layer": 0, "dev_loss": 2.0,
               "final_train_loss": 2.2, "steps": 6, "model_dir": "trials/ae-r0.1-l0/model"},
              {"trial": "ae-r0.5-l0", "objective": "ae", "ratio": 0.5, "scorer_layer": 0, "dev_loss": 1.0,
               "final_train_loss": 1.2, "steps": 6, "model_dir": "trials/ae-r0.5-l0/model"}]
    for t in trials:
        NuggetSweep.trial_dir(tmp_path, t["trial"]).mkdir(parents=True)
    NuggetSweep(tmp_path, trials).write(tmp_path)
    sweep = NuggetSweep.read(tmp_path)
    assert sweep.trials == trials and sweep.best()["ae"]["trial"] == "ae-r0.5-l0"
    assert sweep.model_dir(trials[0]) == tmp_path / "trials/ae-r0.1-l0/model"
    assert json.loads((tmp_path / "best.json").read_text())["ae"]["trial"] == "ae-r0.5-l0"

    systems = [{"system": "re_gating", "kind": "bottleneck", "decoder": "gating", "objective": "ae",
                "model_dir": "systems/re_gating/model", "dev_loss": 4.0},
               {"system": "chunk", "kind": "nugget", "objective": "mt", "ratio": 0.1, "scorer_layer": 3,
                "selector": "chunk", "feedback": True, "model_dir": "systems/chunk/model", "dev_loss": 3.0}]
    for s in systems:
        (TrainedBaselines.system_dir(tmp_path, s["system"]) / "model").mkdir(parents=True)
    TrainedBaselines(tmp_path, systems).write(tmp_path)
    assert TrainedBaselines.read(tmp_path).systems == systems

    out = tmp_path / "n2d"
    TrainedNugget2D.folder(out).mkdir(parents=True)
    TrainedNugget2D(TrainedNugget2D.folder(out), "finetune", "qa").write(out)
    trained = TrainedNugget2D.read(out, "train_nugget2d_ft")
    assert (trained.objective, trained.finetune_task, trained.soft_prompt) == ("finetune", "qa", False)
    assert TrainedNugget2D(trained.path, "continuation").soft_prompt

    ft = tmp_path / "ft"
    FullFinetunedLM.folder(ft).mkdir(parents=True)
    FullFinetunedLM(FullFinetunedLM.folder(ft), "summarization").write(ft)
    assert FullFinetunedLM.read(ft) == FullFinetunedLM(ft / "lm_lora", "summarization")


def test_calibrated_threshold_round_trip(tmp_path):
    threshold = CalibratedThreshold(0.25, 0.1, "train_nugget2d", "abcd", 8, {"sample_ratio": 0.1})
    threshold.write(tmp_path)
    assert CalibratedThreshold.read(tmp_path) == threshold
    assert json.loads((tmp_path / "threshold.json").read_text())["lambda"] == 0.25


def test_eval_table_round_trip_and_rendering(tmp_path):
    table = EvalTable("QA", [Column("accuracy", "acc."), Column("kv_bytes", "KV bytes", "{:.0f}")], [
        TableRow("nugget2d 5x", {"accuracy": 50.0, "kv_bytes": 1024.0}, n=4, stderr={"accuracy": 12.5},
                 paper_row="nugget2d_5x"),
        TableRow("full", {"accuracy": float("nan")}, n=4, paper_row="full"),
        TableRow("lmsumm", {}, note="no summary model", paper_row="lmsumm_10x"),
    ], notes=["4 examples"])
    files = table.write(tmp_path)
    assert {p.name for p in files} == {"table.md", "table.csv", "table.json"}
    back = EvalTable.read(tmp_path)
    assert back.title == "QA" and back.columns == table.columns and back.notes == ["4 examples"]
    assert back.row("nugget2d 5x") == table.rows[0]
    assert back.row("full").metrics == {"accuracy": None}  # NaN is null in JSON
    assert back.row("lmsumm").note == "no summary model" and back.row("lmsumm").n is None
    md = (tmp_path / "table.md").read_text()
    assert "| nugget2d 5x | 4 | 50.00 ± 12.50 | 1024 |" in md and "| full | 4 | nan |" in md
    csv = (tmp_path / "table.csv").read_text().splitlines()
    # a flagged system's reason is its own column ("" when informative: stages.common.degenerate)
    assert csv[0] == "system,paper_row,n,accuracy,kv_bytes,accuracy_stderr,note,uninformative"
    assert table.flat_metrics() == {"nugget2d 5x/accuracy": 50.0, "nugget2d 5x/kv_bytes": 1024.0}
    assert not any(math.isnan(v) for v in table.flat_metrics().values())
    # a 95% interval's ends are logged beside the value
    bounded = EvalTable("LM", [Column("ppl", "PPL")], [TableRow("full", {"ppl": 9.0}, n=4, interval={"ppl": (8.0, 11.0)})])
    assert bounded.flat_metrics() == {"full/ppl": 9.0, "full/ppl_low": 8.0, "full/ppl_high": 11.0}
    assert "| full | 4 | 9.00 [8.00, 11.00] |" in bounded.to_markdown()
    with pytest.raises(KeyError, match="no system 'x'"):
        back.row("x")
    with pytest.raises(ValueError, match="duplicate system"):
        EvalTable("T", [], [TableRow("a"), TableRow("a")]).write(tmp_path)


def test_nugget_evaluation_contracts_round_trip(tmp_path):
    sim = SimilarityResults([{"label": "ColBART", "mode": "colbart", "task": "pi", "mrr": 90.0, "n_tasks": 6,
                              "data": "build_pi artifact k"}], colbart_from="sweep:mt")
    sim.write(tmp_path)
    assert SimilarityResults.read(tmp_path) == sim and (tmp_path / "similarity.md").exists()

    rec = ReconstructionResults([{"label": "Nugget AE", "kind": "nugget", "objective": "ae", "ratio": 0.1,
                                  "bleu": 12.0, "n_docs": 4}], "dev", 5)
    rec.write(tmp_path)
    back = ReconstructionResults.read(tmp_path)
    assert (back.rows, back.split, back.beam_size, back.figures()) == (rec.rows, "dev", 5, [])
    _touch(tmp_path / "bleu_vs_ratio.png")
    assert [p.name for p in ReconstructionResults.read(tmp_path).figures()] == ["bleu_vs_ratio.png"]

    freq = {"sweep:ae": {"label": "Nugget AE", "objective": "ae", "ratio": 0.1, "top": [["the", 1.0, 5.0]],
                         "the_share_nuggets": 1.0, "the_share_text": 5.0, "punctuation_share_nuggets": 20.0,
                         "punctuation_share_text": 10.0}}
    NuggetAnalysis(freq, {"documents": 2}).write(tmp_path)
    analysis = NuggetAnalysis.read(tmp_path)
    assert (analysis.token_frequency, analysis.probability_gain) == (freq, {"documents": 2})


def test_stored_contracts_keep_where_the_output_was_read_from(tmp_path):
    """The report's inputs (`stages.artifacts.base.Stored`): the output read through its
    contract, with the stage, store key and folder it came from."""
    for folder in ("qa", "sim", "rec", "ana", "cs"):
        (tmp_path / folder).mkdir()
    EvalTable("QA", [Column("accuracy", "acc.")], [TableRow("full", {"accuracy": 1.0}, n=2)]).write(tmp_path / "qa")
    stored = StoredEvalTable.read(Artifact("eval_qa", "k-qa", "", tmp_path / "qa", {}))
    assert stored.output == EvalTable.read(tmp_path / "qa") and stored.where == Location("eval_qa", tmp_path / "qa", "k-qa")
    assert StoredEvalTable.read(tmp_path / "qa", "eval_lm").where == Location("eval_lm", tmp_path / "qa")
    SimilarityResults([]).write(tmp_path / "sim")
    ReconstructionResults([], "dev", 5).write(tmp_path / "rec")
    NuggetAnalysis({}, {}).write(tmp_path / "ana")
    CorpusStatistics({"source": "gensim_lee"}).write(tmp_path / "cs")
    for kind, folder, stage in ((StoredSimilarityResults, "sim", "eval_similarity"),
                                (StoredReconstructionResults, "rec", "eval_reconstruction"),
                                (StoredNuggetAnalysis, "ana", "analyze_nuggets"),
                                (StoredCorpusStatistics, "cs", "corpus_stats")):
        read = kind.read(Artifact(stage, f"k-{folder}", "", tmp_path / folder, {}))
        assert read.where == Location(stage, tmp_path / folder, f"k-{folder}") and read.output is not None
        with pytest.raises(ContractError, match=f"output of stage '{stage}' \\(key k-x\\)"):
            kind.read(Artifact(stage, "k-x", "", tmp_path / "missing", {}))


# -- clear errors ----------------------------------------------------------------------
MISSING = [
    (lambda p: TokenizerFolder.read(p), "tokenizer", "tokenizer"),
    (lambda p: MtDocuments.read(p), "build_mt_docs", "train.parquet"),
    (lambda p: SimilarityDataset.read(p, "build_rr"), "build_rr", "tasks.jsonl"),
    (lambda p: BaseLM.read(p), "prepare_lm", "model"),
    (lambda p: LMRecords.read(p).records("qa"), "build_lm", "qa.jsonl"),
    (lambda p: CorpusStatistics.read(p), "corpus_stats", "stats.json"),
    (lambda p: TrainedNugget.read(p), "train_nugget", "trained.json"),
    (lambda p: NuggetSweep.read(p), "sweep_nugget", "results.json"),
    (lambda p: TrainedBaselines.read(p), "train_baselines", "systems.json"),
    (lambda p: TrainedNugget2D.read(p, "train_nugget2d_ar"), "train_nugget2d_ar", "trained.json"),
    (lambda p: FullFinetunedLM.read(p), "train_full_ft", "trained.json"),
    (lambda p: CalibratedThreshold.read(p), "calibrate_threshold", "threshold.json"),
    (lambda p: EvalTable.read(p, "eval_qa"), "eval_qa", "table.json"),
    (lambda p: SimilarityResults.read(p), "eval_similarity", "similarity.json"),
    (lambda p: ReconstructionResults.read(p), "eval_reconstruction", "reconstruction.json"),
    (lambda p: NuggetAnalysis.read(p), "analyze_nuggets", "token_frequency.json"),
]


@pytest.mark.parametrize(("read", "stage", "name"), MISSING, ids=[m[1] for m in MISSING])
def test_missing_file_names_stage_and_file(tmp_path, read, stage, name):
    with pytest.raises(ContractError, match=rf"stage '{stage}'.*'{name}' is missing"):
        read(tmp_path)


def test_errors_name_the_artifact_key_and_the_field(tmp_path):
    art = Artifact("calibrate_threshold", "k123", str(tmp_path), tmp_path, {})
    (tmp_path / "threshold.json").write_text(json.dumps({"lambda": 0.2, "ratio": 0.1}))
    with pytest.raises(ContractError, match=r"stage 'calibrate_threshold' \(key k123\).*field 'scorer_stage' "
                                            r"of 'threshold.json' is missing"):
        CalibratedThreshold.read(art)
    (tmp_path / "threshold.json").write_text("{not json")
    with pytest.raises(ContractError, match="'threshold.json' is not valid JSON"):
        CalibratedThreshold.read(art)
    (tmp_path / "model").mkdir()
    (tmp_path / "trained.json").write_text(json.dumps({"objective": "ae", "ratio": "high", "scorer_layer": 1,
                                                       "selector": "topk", "feedback": True}))
    with pytest.raises(ContractError, match=r"field 'ratio' of 'trained.json' is malformed: expected float"):
        TrainedNugget.read(tmp_path)
    (tmp_path / "table.json").write_text(json.dumps({"title": "T", "columns": [], "rows": [
        {"system": "a", "metrics": {"acc": "high"}}]}))
    with pytest.raises(ContractError, match=r"stage 'eval_lm'.*metric 'acc' of system 'a'"):
        EvalTable.read(tmp_path, "eval_lm")


def test_a_reader_of_an_old_train_nugget2d_output_says_what_is_missing(tmp_path):
    """An output without the recorded objective (eval_qa used to dig it out of the manifest)."""
    TrainedNugget2D.folder(tmp_path).mkdir()
    with pytest.raises(ContractError, match=r"stage 'train_nugget2d'.*'trained.json' is missing"):
        TrainedNugget2D.read(tmp_path)
    (tmp_path / "trained.json").write_text(json.dumps({"finetune_task": "qa"}))
    with pytest.raises(ContractError, match=r"field 'objective' of 'trained.json' is missing"):
        TrainedNugget2D.read(tmp_path)


def test_train_nugget2d_variants_are_checked_and_found_by_ratio(tmp_path):
    TrainedNugget2D.folder(tmp_path).mkdir()
    variants = {"r0.2": {"dir": "variants/r0.2/nugget2d", "objective": "continuation", "ratio": 0.2},
                "autoencoding": {"dir": "variants/autoencoding/nugget2d", "objective": "autoencoding", "ratio": 0.1}}
    TrainedNugget2D(TrainedNugget2D.folder(tmp_path), "continuation", "", 0.1, variants).write(tmp_path)
    with pytest.raises(ContractError, match=r"'variants/(r0.2|autoencoding)/nugget2d' is missing"):
        TrainedNugget2D.read(tmp_path)  # a variant's model folder is part of the contract
    for name in variants:
        TrainedNugget2D.variant_folder(tmp_path, name).mkdir(parents=True)
    trained = TrainedNugget2D.read(tmp_path)
    assert trained.at_ratio(0.1) is trained and trained.at_ratio(0.05) is None
    five = trained.at_ratio(0.2)
    assert (five.path, five.objective, five.ratio) == (TrainedNugget2D.variant_folder(tmp_path, "r0.2"),
                                                        "continuation", 0.2)
    label, scorer = trained.scorer_source()
    assert (label, scorer.objective) == ("train_nugget2d/autoencoding", "autoencoding")
    with pytest.raises(KeyError, match=r"no Nugget2D variant 'r0.3'; it holds \['autoencoding', 'r0.2'\]"):
        trained.variant("r0.3")
    (tmp_path / "trained.json").write_text(json.dumps({"objective": "continuation", "variants": {
        "r0.2": {"dir": "variants/r0.2/nugget2d", "objective": "continuation"}}}))
    with pytest.raises(ContractError, match=r"field 'ratio' of 'trained.json' is missing"):
        TrainedNugget2D.read(tmp_path)
    # an output of a stage without variants is its own scorer source
    (tmp_path / "trained.json").write_text(json.dumps({"objective": "continuation"}))
    assert TrainedNugget2D.read(tmp_path).scorer_source()[0] == "train_nugget2d"


# -- producers write what consumers read ---------------------------------------------------
def _stage_context(stage_cls: type, tmp_path: Path, inputs: dict[str, Artifact]):
    from stages.config import load_config
    from stages.framework.keys import stage_sections
    from stages.framework.stage import StageContext

    out = tmp_path / "out"
    out.mkdir()
    return StageContext(stage_cls.name, "k", stage_sections(stage_cls, load_config([])), inputs, out,
                        None, tmp_path, str(tmp_path / "work"))


def _fake_training(monkeypatch, module: str) -> None:
    def train(ctx, task, job, job_key, model_dir, seed, model_lm=None):
        assert isinstance(seed, int)  # the stage's run.seed, from its typed config
        (ctx.output_dir / model_dir).mkdir()
        return {"best_dev_loss": 1.5}

    monkeypatch.setattr(f"{module}.train_into_stage_output", train)


def test_train_nugget_output_is_what_the_evaluations_read(monkeypatch, tmp_path):
    from stages.nugget.systems import train_nugget_system
    from stages.nugget.train_nugget import TrainNugget

    _fake_training(monkeypatch, "stages.nugget.train_nugget")
    monkeypatch.setattr("stages.nugget.train_nugget.nugget_task", lambda *args: None)
    # what its inputs' contracts check: a tokenizer folder, the train / dev documents
    (tmp_path / "tok" / "tokenizer").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    for split in ("train", "dev"):
        (tmp_path / "docs" / f"{split}.parquet").touch()
    inputs = {"tokenizer": Artifact("tokenizer", "t", "", tmp_path / "tok", {}),
              "build_mt_docs": Artifact("build_mt_docs", "d", "", tmp_path / "docs", {})}
    ctx = _stage_context(TrainNugget, tmp_path, inputs)
    TrainNugget().run(ctx)
    system = train_nugget_system(TrainedNugget.read(Artifact("train_nugget", "k", "", ctx.output_dir, {})))
    nugget = ctx.cfg("nugget")
    assert (system.objective, system.ratio, system.scorer_layer, system.dev_loss) == (
        ctx.cfg("train.nugget").objective, nugget.ratio, nugget.scorer_layer, 1.5)


def test_train_nugget2d_records_its_objective(monkeypatch, tmp_path):
    from stages.nugget2d.train_nugget2d import TrainNugget2D

    _fake_training(monkeypatch, "stages.nugget2d.nugget2d_stage")  # the shared compute()
    monkeypatch.setattr(TrainNugget2D, "task", lambda self, config, inputs: None)
    (tmp_path / "prepare_lm" / "model").mkdir(parents=True)
    (tmp_path / "build_lm").mkdir()
    ctx = _stage_context(TrainNugget2D, tmp_path, {s: Artifact(s, "k", "", tmp_path / s, {})
                                                   for s in ("prepare_lm", "build_lm")})
    TrainNugget2D().run(ctx)
    TrainNugget2D.check_output(ctx)  # what it wrote reads back through its header's output class
    trained = TrainedNugget2D.read(ctx.output_dir)
    assert trained.objective == ctx.cfg("train.nugget2d").objective
    assert trained.soft_prompt == (trained.objective != "finetune")
