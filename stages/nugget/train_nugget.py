"""Stage ``train_nugget``: train a Nugget encoder-decoder (AE or MT) on Ray Train.

Reads the tokenizer and the MT documents of the dataset stages, fits a ``TorchTrainer``
(``train.nugget.num_workers`` workers; DDP, or DeepSpeed ZeRO-2 with
``train.nugget.backend=deepspeed``), restarting from the last checkpoint on worker
failures (``train.nugget.max_failures``). Every ablation is a config, not code:
``nugget.selector`` (topk / chunk / sentence), ``nugget.feedback``, ``nugget.scorer_layer``,
``train.nugget.objective`` (ae / mt), ``train.nugget.deletion_noise`` (TSDAE-style AE).

Output: `stages.nugget.artifacts.models.TrainedNugget`: ``model/`` (HF ``save_pretrained`` + nugget
parts + tokenizer, loadable with ``nugget_core.NuggetModel.from_pretrained`` outside Ray)
and what it is (``trained.json``); ``trainer_state.json`` (loss
history, dev losses, early stopping) and ``probe_logits.pt``. Per-step loss / lr /
tokens-per-second are logged to MLflow by rank 0 into this stage's run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.models import TrainedNugget
from stages.nugget.nugget_job import NuggetData, nugget_task
from stages.training.launch import train_into_stage_output

if TYPE_CHECKING:
    from stages.config.schema import NuggetSection, Seq2SeqModel
    from stages.nugget.config import NuggetTrainJob


@dataclass(frozen=True)
class TrainNuggetConfig:
    nugget: NuggetSection = section("nugget")
    seq2seq: Seq2SeqModel = section("model.seq2seq")
    job: NuggetTrainJob = section("train.nugget")
    seed: int = section("run.seed")


class TrainNugget(Stage[TrainNuggetConfig, NuggetData, TrainedNugget]):
    name = "train_nugget"
    external_models = ("model.seq2seq.name_or_path",)  # the pretrained base (source=pretrained)
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs
    train_job = "train.nugget"  # the executor reserves its workers

    def compute(self, ctx: StageContext, config: TrainNuggetConfig, inputs: NuggetData) -> None:
        job, nugget = config.job, config.nugget
        task = nugget_task(inputs, job, nugget, config.seq2seq, config.seed)
        state = train_into_stage_output(ctx, task, job, "train.nugget", TrainedNugget.DIR, config.seed)
        TrainedNugget(ctx.output_dir / TrainedNugget.DIR, str(job.objective), float(nugget.ratio),
                      int(nugget.scorer_layer), str(nugget.selector), bool(nugget.feedback),
                      state.get("best_dev_loss")).write(ctx.output_dir)
