"""The report's training section from fixture training outputs: per trained model its dev
loss before -> after, steps and tokens seen, and its input use, read through the training
contracts; a model whose dev loss ended above its start is flagged in the section and in the
log, one that ignores its input in the section."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path

import pytest

from stages.artifacts.base import ContractError
from stages.framework.contract import input_fields
from stages.nugget.artifacts.models import NuggetSweep, TrainedBaselines, TrainedNugget
from stages.nugget2d.artifacts import TrainedNugget2D
from stages.report.contract import ReportInputs
from stages.report.report import Report
from stages.report.training import IGNORES, TRAINING_STAGES, WORSE, training_summaries
from stages.training.loop import STATE_FILE, TrainerState
from tests.evaluation.fixtures import artifact, context, report_required

NO_INPUT = "no compressed input (FullFinetuneTask defines no mismatch)"


def _state(folder: Path, before: float, after: float, steps: int = 20, tokens: int = 4000,
           input_use: dict | None = None, note: str = NO_INPUT) -> dict:
    """A trainer state as the loop writes it (its own dataclass), beside a model folder."""
    state = asdict(TrainerState(step=steps, initial_dev_loss=before, exported_dev_loss=after, tokens_seen=tokens,
                                dev_loss_n=512, exported_step=steps, dev_losses=[after], input_use=input_use,
                                input_use_note="" if input_use else note))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STATE_FILE).write_text(json.dumps(state))
    return state


# hand-made input uses (`stages.training.input_use` measures them): one that reads its input, one that
# does not (the rise's interval reaches below the margin)
READS = {"own": 3.0, "other": 5.4, "low": 2.1, "high": 2.7, "n": 256}
IGNORES_INPUT = {"own": 6.691, "other": 6.692, "low": -0.002, "high": 0.004, "n": 64}


def _training_outputs(root: Path) -> dict:
    """train_nugget (learned), train_baselines (one system, learned), sweep_nugget (one
    trial, learned) and train_nugget2d whose variant r0.5 ended worse than it started."""
    nugget = root / "train_nugget"
    (nugget / "model").mkdir(parents=True)
    TrainedNugget(nugget / "model", "ae", 0.1, 1, "topk", True, dev_loss=3.0).write(nugget)
    _state(nugget, 7.5, 3.0, steps=200, tokens=1_234_567, input_use=READS)
    base = root / "train_baselines"
    (base / "systems" / "re_gating" / "model").mkdir(parents=True)
    _state(base / "systems" / "re_gating", 7.4, 4.0, input_use=IGNORES_INPUT)
    TrainedBaselines(base, [{"system": "re_gating", "kind": "bottleneck", "decoder": "gating", "objective": "ae",
                             "model_dir": "systems/re_gating/model", "dev_loss": 4.0}]).write(base)
    sweep = root / "sweep_nugget"
    (sweep / "trials" / "ae_r0.1_l1" / "model").mkdir(parents=True)
    NuggetSweep(sweep, [{"trial": "ae_r0.1_l1", "objective": "ae", "ratio": 0.1, "scorer_layer": 1, "dev_loss": 3.5,
                         "final_train_loss": 3.4, "steps": 50, "initial_dev_loss": 7.5, "exported_dev_loss": 3.5,
                         "dev_loss_n": 512, "tokens_seen": 30000, "input_use": IGNORES_INPUT, "input_use_note": "",
                         "model_dir": "trials/ae_r0.1_l1/model"}]).write(sweep)
    n2d = root / "train_nugget2d"
    TrainedNugget2D.folder(n2d).mkdir(parents=True)
    TrainedNugget2D.variant_folder(n2d, "r0.5").mkdir(parents=True)
    _state(n2d, 5.2, 4.9, note="3 dev examples: fewer than 20, too few to tell")
    _state(TrainedNugget2D.variant_folder(n2d, "r0.5").parent, 5.2, 5.28, input_use=IGNORES_INPUT)  # made worse too
    TrainedNugget2D(TrainedNugget2D.folder(n2d), "continuation", "", 0.25, {
        "r0.5": {"dir": "variants/r0.5/nugget2d", "objective": "continuation", "ratio": 0.5}}).write(n2d)
    return {stage: artifact(stage, root / stage)
            for stage in ("train_nugget", "train_baselines", "sweep_nugget", "train_nugget2d")}


def test_training_section_shows_before_after_and_flags_the_model_made_worse(tmp_path, caplog):
    inputs = {**_training_outputs(tmp_path), **report_required(tmp_path / "evaluated")}
    ctx = context(Report, inputs, tmp_path / "report", [])
    caplog.set_level(logging.WARNING, logger="nugget.report")
    Report().run(ctx)
    md = (ctx.output_dir / "report.md").read_text()
    section = md.split("## Training: dev loss before -> after")[1].split("\n## ")[0]
    rows = {cells[0]: cells[1:] for line in section.splitlines() if line.startswith("| ") and "model" not in line
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    # steps, tokens seen, before, after, n, input use, flags
    ignored = "6.691 / 6.692, +0.001 [-0.002, +0.004] (n = 64)"
    assert rows == {
        "train_nugget": ["200", "1,234,567", "7.500", "3.000", "512", "3.000 / 5.400, +2.400 [+2.100, +2.700] (n = 256)",
                         ""],
        "sweep_nugget/ae_r0.1_l1": ["50", "30,000", "7.500", "3.500", "512", ignored, IGNORES],
        "train_baselines/re_gating": ["20", "4,000", "7.400", "4.000", "512", ignored, IGNORES],
        "train_nugget2d": ["20", "4,000", "5.200", "4.900", "512",
                           "not measured: 3 dev examples: fewer than 20, too few to tell", ""],
        "train_nugget2d/r0.5": ["20", "4,000", "5.200", "5.280", "512", ignored, f"{WORSE}; {IGNORES}"],
    }
    assert "Training: dev loss before -&gt; after" in (ctx.output_dir / "report.html").read_text()
    # one log line per model made worse
    warnings = [r.getMessage() for r in caplog.records if r.name == "nugget.report"]
    assert warnings == ["report: train_nugget2d/r0.5: dev loss 5.200 -> 5.280 after 20 steps (above its untrained "
                        "start: training made it worse)"]
    assert ctx.logger.metrics["trained_models"] == 5 and ctx.logger.metrics["trained_models_worse"] == 1


def test_every_training_stage_is_read_by_the_report():
    from stages.registry import ALL_STAGES

    trainers = {s.name for s in ALL_STAGES if s.name.startswith(("train_", "sweep_"))}
    assert set(TRAINING_STAGES) == trainers and set(TRAINING_STAGES) <= set(Report.upstream)
    # read through the report's typed inputs, one field per training stage named after it, in DAG order
    assert Report.optional_upstream is not None and Report.optional_upstream[-len(TRAINING_STAGES):] == TRAINING_STAGES
    assert [f.name for f in input_fields(ReportInputs)][-len(TRAINING_STAGES):] == list(TRAINING_STAGES)


def test_a_trainer_state_without_the_step_0_dev_loss_is_named(tmp_path):
    inputs = _training_outputs(tmp_path)
    state = json.loads((tmp_path / "train_nugget" / STATE_FILE).read_text())
    del state["initial_dev_loss"]
    (tmp_path / "train_nugget" / STATE_FILE).write_text(json.dumps(state))
    with pytest.raises(ContractError, match=r"field 'initial_dev_loss' of 'trainer_state.json' is missing"):
        training_summaries({"train_nugget": TrainedNugget.read(inputs["train_nugget"])})
