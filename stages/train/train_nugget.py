"""Stage ``train_nugget``: train a Nugget encoder-decoder (AE or MT) on Ray Train.

Reads the tokenizer and the MT documents of the dataset stages, fits a ``TorchTrainer``
(``train.nugget.num_workers`` workers; DDP, or DeepSpeed ZeRO-2 with
``train.nugget.backend=deepspeed``), restarting from the last checkpoint on worker
failures (``train.nugget.max_failures``). Every ablation is a config, not code:
``nugget.selector`` (topk / chunk / sentence), ``nugget.feedback``, ``nugget.scorer_layer``,
``train.nugget.objective`` (ae / mt), ``train.nugget.deletion_noise`` (TSDAE-style AE).

Output: `stages.artifacts.train.TrainedNugget`: ``model/`` (HF ``save_pretrained`` + nugget
parts + tokenizer, loadable with ``nugget_core.NuggetModel.from_pretrained`` outside Ray)
and what it is (``trained.json``); ``trainer_state.json`` (loss
history, dev losses, early stopping) and ``probe_logits.pt``. Per-step loss / lr /
tokens-per-second are logged to MLflow by rank 0 into this stage's run.
"""

from __future__ import annotations

from stages.artifacts.train import TrainedNugget
from stages.framework.stage import Stage, StageContext
from stages.train.launch import train_into_stage_output
from stages.train.nugget_job import nugget_task


class TrainNugget(Stage):
    name = "train_nugget"
    upstream = ("tokenizer", "build_mt_docs")
    config_keys = ("nugget", "model.seq2seq", "train.nugget", "run.seed")
    external_models = ("model.seq2seq.name_or_path",)  # the pretrained base (source=pretrained)
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs
    train_job = "train.nugget"  # the executor reserves its workers

    def run(self, ctx: StageContext) -> None:
        state = train_into_stage_output(ctx, nugget_task(ctx), ctx.cfg("train.nugget"), "train.nugget",
                                        TrainedNugget.DIR)
        nugget = ctx.cfg("nugget")
        TrainedNugget(ctx.output_dir / TrainedNugget.DIR, str(ctx.cfg("train.nugget").objective), float(nugget.ratio),
                      int(nugget.scorer_layer), str(nugget.selector), bool(nugget.feedback),
                      state.get("best_dev_loss")).write(ctx.output_dir)
