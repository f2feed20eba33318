"""The report's training section: did each trained model learn, and does it read its input?

Per model of every training stage in the run: its dev loss before any update (step 0)
and of the weights its fit ended with, the steps and tokens it trained on, read through
the training contracts (`stages.artifacts.trainer_state.TrainingSummary`). A model whose
dev loss ended above its untrained start is flagged in the section and in the log (one
line each): every number measured on it downstream comes from a model that training made
worse. Beside it, the model's input use (`stages.training.input_use`): its dev loss with each
example's own compressed input and with another's, the rise's paired 95% interval over dev
examples, or why it was not measured; a model whose rise does not clear
`stages.artifacts.trainer_state.INPUT_USE_MARGIN` is flagged as ignoring its input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

from stages.artifacts.trainer_state import INPUT_USE_MARGIN, TrainingSummary
from stages.common.progress import progress_logger
from stages.nugget.artifacts.models import (
    NuggetSweep,
    TrainedBaselines,
    TrainedNugget,
    TrainedNuggetLM,
)
from stages.nugget2d.artifacts import FullFinetunedLM, TrainedNugget2D
from stages.restorable.artifacts import TrainedRestorable, TrainedRetrieval

log = progress_logger("nugget.report")

WORSE = "worse: dev loss ended above its start"
IGNORES = "ignores its input"
NOT_SHOWN_TO_READ = "not shown to read its input"
CAPTION = "Training: dev loss before -> after"
HEADERS = ["model", "steps", "tokens seen", "dev loss before (step 0)", "dev loss after", "dev tokens (n)",
           "input use: dev loss own / another's input, rise [95% CI] (n)", "flag"]
INTRO = ("Each trained model's dev loss (mean negative log-likelihood per dev target token, over the n tokens "
         "shown) before its first update (step 0) and of the weights its fit ended with (the last step's, or the "
         "best evaluation's with export_model=best_dev), the optimiser steps and the tokens (inputs + targets, every "
         f"worker) it trained on. '{WORSE}': training made the model worse than untrained, so what the tables "
         "measure on it is no sign of the method. Input use: the exported weights' dev loss with each dev example's "
         "own compressed input (encoder input, history, document) and with another dev example's, over the same "
         "targets, and the rise (another's - own) with its paired 95% bootstrap interval over the n dev examples; "
         f"'{IGNORES}': the whole interval is at most {INPUT_USE_MARGIN:g} nats per token, so what the model outputs "
         f"does not depend on its input; '{NOT_SHOWN_TO_READ}': the interval straddles {INPUT_USE_MARGIN:g} (too few dev "
         "examples to tell). Either way the model is below every floor. Models without a compressed "
         "input, or with fewer dev examples than an interval needs, say why it was not measured.")


# every training stage, in DAG order: the report reads the output of each one in the run
TRAINING_STAGES = ("train_nugget", "sweep_nugget", "train_baselines", "train_nugget_lm", "train_nugget2d",
                   "train_nugget2d_ft", "train_nugget2d_ar", "train_nugget2d_ae", "train_full_ft", "train_re",
                   "train_re_retrieval")
# what they write (the Nugget2D stages all a `TrainedNugget2D`)
Trained: TypeAlias = (TrainedNugget | NuggetSweep | TrainedBaselines | TrainedNuggetLM | TrainedNugget2D | FullFinetunedLM
                      | TrainedRestorable | TrainedRetrieval)


def summaries_of(stage: str, output: Trained) -> list[TrainingSummary]:
    """The summaries of the models ``output``, the output of training stage ``stage``, holds."""
    if isinstance(output, TrainedNugget2D):  # four stages write this class: the stage names their models
        return output.training(stage)
    return output.training()


def training_summaries(outputs: Mapping[str, Trained | None]) -> list[TrainingSummary]:
    """The summary of every model trained by the training stages in ``outputs`` (stage ->
    its output, None where it is not in the run), in `TRAINING_STAGES` order."""
    return [s for stage in TRAINING_STAGES if (output := outputs.get(stage)) is not None
            for s in summaries_of(stage, output)]


def input_use_cell(s: TrainingSummary) -> str:
    """``own / other, rise [low, high] (n = ...)``, or why the model's input use was not measured."""
    use = s.input_use
    if use is None:
        return f"not measured: {s.input_use_note or 'not in its trainer state'}"
    return (f"{use.own:.3f} / {use.other:.3f}, {use.other - use.own:+.3f} [{use.low:+.3f}, {use.high:+.3f}] "
            f"(n = {use.n})")


def flags(s: TrainingSummary) -> str:
    """The model's flags: made worse by training; ignores its input, or is not shown to read it."""
    use = s.input_use.reason().split(":")[0] if s.input_use is not None else ""
    return "; ".join(flag for flag in ((WORSE if s.got_worse else ""), use) if flag)


def training_rows(summaries: Sequence[TrainingSummary]) -> list[tuple[str, ...]]:
    """The section's rows (`HEADERS`), one per model."""
    return [(s.model, str(s.steps), f"{s.tokens_seen:,}", f"{s.dev_loss_before:.3f}", f"{s.dev_loss_after:.3f}",
             str(s.dev_loss_n), input_use_cell(s), flags(s)) for s in summaries]


def log_worse(summaries: Sequence[TrainingSummary]) -> list[str]:
    """One warning line per model whose dev loss ended above its start; the lines."""
    lines = [f"report: {s.model}: dev loss {s.dev_loss_before:.3f} -> {s.dev_loss_after:.3f} after {s.steps} steps "
             "(above its untrained start: training made it worse)" for s in summaries if s.got_worse]
    for line in lines:
        log.warning(line)
    return lines
