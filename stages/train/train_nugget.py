"""Stage ``train_nugget``: train a Nugget encoder-decoder (AE or MT) on Ray Train.

Reads the tokenizer and the MT documents of the dataset stages, fits a ``TorchTrainer``
(``train.nugget.num_workers`` workers; DDP, or DeepSpeed ZeRO-2 with
``train.nugget.backend=deepspeed``), restarting from the last checkpoint on worker
failures (``train.nugget.max_failures``). Every ablation is a config, not code:
``nugget.selector`` (topk / chunk / sentence), ``nugget.feedback``, ``nugget.scorer_layer``,
``train.nugget.objective`` (ae / mt), ``train.nugget.deletion_noise`` (TSDAE-style AE).

Output: ``model/`` (HF ``save_pretrained`` + nugget parts + tokenizer, loadable with
``nugget_core.NuggetModel.from_pretrained`` outside Ray), ``trainer_state.json`` (loss
history, dev losses, early stopping) and ``probe_logits.pt``. Per-step loss / lr /
tokens-per-second are logged to MLflow by rank 0 into this stage's run.
"""

from __future__ import annotations

from stages.framework.stage import Stage, StageContext
from stages.train.launch import train_into_stage_output
from stages.train.nugget_task import NuggetTask


def nugget_task(ctx: StageContext) -> NuggetTask:
    """The Nugget task of a stage reading tokenizer + build_mt_docs and train.nugget."""
    job = ctx.cfg("train.nugget")
    return NuggetTask(
        data_dir=str(ctx.inputs["build_mt_docs"].path),
        tokenizer_dir=str(ctx.inputs["tokenizer"].file("tokenizer")),
        objective=job.objective,
        nugget=ctx.cfg("nugget"),
        model=ctx.cfg("model.seq2seq"),
        deletion_noise=job.deletion_noise,
        dev_examples=job.dev_examples,
        seed=ctx.cfg("run.seed"),
    )


class TrainNugget(Stage):
    name = "train_nugget"
    description = "Nugget AE/MT on Ray Train (DDP or DeepSpeed ZeRO-2)."
    upstream = ("tokenizer", "build_mt_docs")
    config_keys = ("nugget", "model.seq2seq", "train.nugget", "run.seed")
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs

    def run(self, ctx: StageContext) -> None:
        train_into_stage_output(ctx, nugget_task(ctx), ctx.cfg("train.nugget"), "train.nugget", "model")
