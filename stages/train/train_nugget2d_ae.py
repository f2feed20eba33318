"""Stage ``train_nugget2d_ae``: the autoencoding study of Nugget2D §4, autoencoders per
ratio and their ICAE baseline, on the ``lm`` base LM (paper: LLaMA-7B on the Pile) with
the job ``train.nugget2d_ae``. How it trains and what it writes:
`stages.train.nugget2d_stage`.

A Nugget2D autoencoder at each ratio of ``ratios`` (0.05, 0.1; the first is the main
model, the others variants ``r<ratio>``) and, with ``icae``, ICAE (Ge et al., 2023;
`nugget_core.nugget2d.ICAEModel`) per ratio, ``icae_r<ratio>``, with ``ceil(ratio *
max_doc_tokens)`` memory slots: the budget Nugget2D reaches on the longest training
document, fixed for every length. All train the same way
(`stages.train.autoencoding_task.AutoencodingTask`: same documents, length cuts, loss and
optimiser); ``eval_nugget2d_ae`` reads them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from stages.artifacts.train import TrainedNugget2D
from stages.framework.stage import StageContext
from stages.train.autoencoding_task import AutoencodingTask
from stages.train.nugget2d_stage import Nugget2DTrainingStage, Variant

if TYPE_CHECKING:
    from stages.config.train import Nugget2DAEJob


def icae_slots(ratio: float, max_doc_tokens: int) -> int:
    """ICAE's fixed memory at ``ratio``: Nugget2D's count on the longest document."""
    return max(math.ceil(ratio * max_doc_tokens - 1e-9), 1)


def icae_name(ratio: float) -> str:
    return f"{TrainedNugget2D.ICAE}_{TrainedNugget2D.ratio_name(ratio)}"


class TrainNugget2DAE(Nugget2DTrainingStage["Nugget2DAEJob"]):
    name = "train_nugget2d_ae"
    job_key = train_job = "train.nugget2d_ae"
    base_role = "lm"  # Nugget2D §3: the autoencoding experiment uses LLaMA-7B, the LM (not the chat) model
    config_keys = ("nugget2d", "model.lm", "train.nugget2d_ae", "run.seed")

    def main_model(self, ctx: StageContext, job: Nugget2DAEJob) -> tuple[str, float]:
        return TrainedNugget2D.AUTOENCODING, job.ratios[0]

    def task(self, ctx: StageContext, job: Nugget2DAEJob) -> AutoencodingTask:
        return self.system_task(ctx, job)

    def system_task(self, ctx: StageContext, job: Nugget2DAEJob, system: str = "nugget2d", ratio: float | None = None
                    ) -> AutoencodingTask:
        """The autoencoder ``system`` (nugget2d or icae) at ``ratio`` (None: the job's first)."""
        ratio = job.ratios[0] if ratio is None else ratio
        fields = self.common(ctx, job)
        fields["nugget2d"] = dataclasses.replace(fields["nugget2d"], ratio=ratio)
        return AutoencodingTask(system=system, slots=icae_slots(ratio, job.max_doc_tokens) if system == "icae" else 0,
                                min_doc_tokens=job.min_doc_tokens, max_doc_tokens=job.max_doc_tokens, **fields)

    def variants(self, ctx: StageContext, job: Nugget2DAEJob) -> dict[str, Variant]:
        out = {TrainedNugget2D.ratio_name(r): Variant(self.system_task(ctx, job, "nugget2d", r), TrainedNugget2D.AUTOENCODING,
                                                      r, self.base_role) for r in job.ratios[1:]}
        if job.icae:
            out |= {icae_name(r): Variant(self.system_task(ctx, job, "icae", r), TrainedNugget2D.ICAE, r, self.base_role)
                    for r in job.ratios}
        return out
