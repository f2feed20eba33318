"""The inputs and the Nugget training task of the stages that train Nugget models on the
tokenizer and build_mt_docs: ``train_nugget`` and ``sweep_nugget`` build their task here,
``train_baselines`` reads the same inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from stages.nugget.artifacts.data import MtDocuments, TokenizerFolder
from stages.nugget.nugget_task import NuggetTask

if TYPE_CHECKING:
    from stages.config.schema import NuggetSection, Seq2SeqModel
    from stages.nugget.config import NuggetTrainJob


@dataclass(frozen=True)
class NuggetData:
    """The inputs class of a Nugget training stage: the seq2seq tokenizer and the MT documents."""

    tokenizer: TokenizerFolder
    docs: MtDocuments


def nugget_task(data: NuggetData, job: NuggetTrainJob, nugget: NuggetSection, model: Seq2SeqModel,
                seed: int) -> NuggetTask:
    """The task of one Nugget model on ``data`` with the job ``train.nugget``, the ``nugget``
    section, the base ``model.seq2seq`` and ``run.seed``."""
    return NuggetTask(
        data=data.docs,
        tokenizer_dir=str(data.tokenizer.path),
        objective=job.objective,
        nugget=nugget,
        model=model,
        deletion_noise=job.deletion_noise,
        dev_examples=job.dev_examples,
        seed=seed,
    )
