"""The Nugget training task of a stage reading the tokenizer, build_mt_docs and
``train.nugget`` (shared by ``train_nugget`` and ``sweep_nugget``)."""

from __future__ import annotations

from stages.artifacts.data import MtDocuments, TokenizerFolder
from stages.framework.stage import StageContext
from stages.train.nugget_task import NuggetTask


def nugget_task(ctx: StageContext) -> NuggetTask:
    job = ctx.cfg("train.nugget")
    return NuggetTask(
        data=MtDocuments.read(ctx.inputs["build_mt_docs"]),
        tokenizer_dir=str(TokenizerFolder.read(ctx.inputs["tokenizer"]).path),
        objective=job.objective,
        nugget=ctx.cfg("nugget"),
        model=ctx.cfg("model.seq2seq"),
        deletion_noise=job.deletion_noise,
        dev_examples=job.dev_examples,
        seed=ctx.cfg("run.seed"),
    )
