"""Fixture upstream artifacts for the evaluation stages and the report (no Ray, no MLflow).

Untrained tiny models are enough here: the tests check the stages' plumbing and that the
report shows exactly what the evaluation outputs hold, not model quality.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stages.artifacts.evaluate import StoredEvalTable
from stages.config import load_config
from stages.corpora.artifacts import CorpusStatistics
from stages.corpora.nugget_data import Task, write_dataset
from stages.framework.stage import Artifact, StageContext
from stages.framework.tracking import RunFacts
from stages.nugget.artifacts.models import NuggetSweep, TrainedBaselines, TrainedNugget
from stages.nugget.artifacts.results import ReconstructionResults, SimilarityResults
from tests.training.fixtures import make_docs, make_mt_artifacts

# evaluation settings small enough for CPU tests (tests/evaluation, tests/gpu)
SMALL = ["eval.max_examples=4", "eval.reconstruction_extra_tokens=2", "eval.max_tasks=6", "eval.batch_size=4"]


@dataclass
class RecordingLogger:
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    tables: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        if step is None:
            self.metrics.update(metrics)

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        assert Path(path).exists()
        self.artifacts.append(Path(path).name)

    def set_tags(self, tags: dict[str, str]) -> None:
        self.tags.update(tags)

    def log_artifacts(self, directory: Path, artifact_path: str | None = None) -> None:
        assert Path(directory).is_dir()
        self.artifacts.append(f"{artifact_path}/")

    def log_table(self, data: dict[str, list[Any]], artifact_file: str) -> None:
        assert len({len(v) for v in data.values()}) <= 1, "columns of unequal length"
        self.tables[artifact_file] = data

    def run_facts(self) -> RunFacts:
        """A pipeline run's place in MLflow, as the framework reads it (the report's header)."""
        return RunFacts("sqlite:///tmp/mlflow.db", "7", "child-run", "parent-run", 1.0e9,
                        {"git_commit": "abc123", "config_hash": "cafe", "entry": "full"})

    def log_model(self, name: str, code: str, readme: Path, **pyfunc: Any) -> str:
        assert Path(code).is_file() and Path(readme).is_file()
        self.models[name] = pyfunc
        return f"models:/{name}"


def listed_deviations(overrides: list[str]) -> list[Any]:
    """The report's differences from the papers (`stages.report.deviations`) for the config of
    ``overrides``."""
    return deviations_of(load_config(overrides))


def deviations_of(cfg: Any) -> list[Any]:
    """The report's differences from the papers for a loaded config, read as a stage reads its
    config: a dotted section key -> the section."""
    from stages.report.deviations import deviations

    def get(key: str) -> Any:
        value = cfg
        for part in key.split("."):
            value = getattr(value, part)
        return value

    return deviations(get)


def artifact(stage: str, path: Path, config: dict[str, Any] | None = None) -> Artifact:
    return Artifact(stage, f"key-{stage}", str(path), path, {"config": config or {}})


def report_required(root: Path) -> dict[str, Artifact]:
    """Outputs of the report's required upstream (corpus statistics, similarity and
    reconstruction results without a system), for a test of another part of the report."""
    outputs = {"corpus_stats": CorpusStatistics({"source": "fixture", "documents": 1}),
               "eval_similarity": SimilarityResults([]), "eval_reconstruction": ReconstructionResults([], "dev", 1)}
    for stage, output in outputs.items():
        (root / stage).mkdir(parents=True)
        output.write(root / stage)
    return {stage: artifact(stage, root / stage) for stage in outputs}


def stored_table(stage: str, path: Path) -> StoredEvalTable:
    """The `EvalTable` written at ``path`` as the report reads the output of ``stage``."""
    return StoredEvalTable.read(artifact(stage, path))


def context(stage_cls: type, inputs: dict[str, Artifact], out: Path, overrides: list[str]) -> StageContext:
    from stages.framework.keys import stage_sections

    cfg = load_config(overrides)
    out.mkdir(parents=True, exist_ok=True)
    return StageContext(stage_cls.name, "k", stage_sections(stage_cls, cfg), inputs, out,
                        RecordingLogger(), out, str(out / "work"))


def write_trainer_state(folder: Path, dev_loss: float) -> dict[str, Any]:
    """A trainer state as the training loop writes it beside a model (what its training contract's
    ``training()`` reads), for a fit of 10 steps from dev loss 7.0 to ``dev_loss``; its fields."""
    import json
    from dataclasses import asdict

    from stages.training.loop import STATE_FILE, TrainerState

    state = asdict(TrainerState(step=10, initial_dev_loss=7.0, exported_dev_loss=dev_loss, dev_loss_n=64,
                                tokens_seen=2560, exported_step=10, dev_losses=[dev_loss]))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STATE_FILE).write_text(json.dumps(state))
    return state


def _nugget(tok, ratio: float, layer: int, seed: int, target: Path) -> None:
    from nugget_core import NuggetConfig, TinyBartSpec, build_tiny_bart, get_nugget_model

    base = build_tiny_bart(tok, TinyBartSpec(d_model=32, layers=2, ffn_dim=64), seed=seed)
    model = get_nugget_model(base, NuggetConfig(ratio=ratio, scorer_layer=layer))
    model.save_pretrained(target)
    tok.save_pretrained(target)


def make_eval_inputs(root: Path, n_dev: int = 16) -> dict[str, Artifact]:
    """build_mt_docs (``n_dev`` dev documents), build_pi, build_rr, sweep_nugget, train_nugget, train_baselines."""
    from transformers import AutoTokenizer

    from nugget_core import TinyBartSpec, build_tiny_bart
    from nugget_core.baselines import get_bottleneck_model

    data, tok_dir = make_mt_artifacts(root, n_dev=n_dev)
    tok = AutoTokenizer.from_pretrained(tok_dir)
    sweep = root / "sweep"
    results = []
    for i, (obj, ratio, layer) in enumerate([("ae", 0.1, 1), ("ae", 0.25, 1), ("mt", 0.1, 1), ("mt", 0.1, 0)]):
        trial = f"{obj}-r{ratio}-l{layer}"
        _nugget(tok, ratio, layer, i, sweep / "trials" / trial / "model")
        results.append({"trial": trial, "objective": obj, "ratio": ratio, "scorer_layer": layer,
                        "dev_loss": 5.0 - i, "model_dir": f"trials/{trial}/model", "steps": 10,
                        "initial_dev_loss": 7.0, "exported_dev_loss": 5.0 - i, "dev_loss_n": 64, "tokens_seen": 2560})
    NuggetSweep(sweep, results).write(sweep)
    train = root / "train_nugget"
    _nugget(tok, 0.1, 1, 9, train / "model")
    TrainedNugget(train / "model", "ae", 0.1, 1, "topk", True, dev_loss=3.0).write(train)
    write_trainer_state(train, 3.0)
    base = root / "baselines"
    model = get_bottleneck_model(build_tiny_bart(tok, TinyBartSpec(d_model=32, layers=2, ffn_dim=64)), decoder="gating")
    model.save_pretrained(base / "systems" / "re_gating" / "model")
    tok.save_pretrained(base / "systems" / "re_gating" / "model")
    # a Nugget AE encoding the corpus's other side (appendix D): analyze_nuggets only
    _nugget(tok, 0.1, 1, 11, base / "systems" / "nugget_ae_tgtlang" / "model")
    write_trainer_state(base / "systems" / "re_gating", 4.0)
    write_trainer_state(base / "systems" / "nugget_ae_tgtlang", 4.5)
    TrainedBaselines(base, [
        {"system": "re_gating", "kind": "bottleneck", "decoder": "gating", "objective": "ae",
         "deletion_noise": 0.0, "model_dir": "systems/re_gating/model", "dev_loss": 4.0},
        {"system": "nugget_ae_tgtlang", "kind": "nugget", "objective": "ae", "deletion_noise": 0.0,
         "model_dir": "systems/nugget_ae_tgtlang/model", "dev_loss": 4.5, "ratio": 0.1, "scorer_layer": 1,
         "selector": "topk", "feedback": True, "encoder_side": "target"},
    ]).write(base)
    inputs = {
        "build_mt_docs": artifact("build_mt_docs", data),
        "sweep_nugget": artifact("sweep_nugget", sweep),
        "train_nugget": artifact("train_nugget", train),
        "train_baselines": artifact("train_baselines", base),
    }
    for task, seed in (("pi", 5), ("rr", 6)):
        folder = root / task
        folder.mkdir()
        rows = make_docs(12, seed)
        docs = [(f"L{i}", r["source"]) for i, r in enumerate(rows)] + [(f"R{i}", r["source"]) for i, r in enumerate(rows)]
        tasks = [Task(f"L{i}", tuple(f"R{(i + j) % 12}" for j in range(4)), 0) for i in range(12)]
        write_dataset(folder, docs, tasks)
        inputs[f"build_{task}"] = artifact(f"build_{task}", folder)
    return inputs
