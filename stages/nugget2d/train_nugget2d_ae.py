"""Stage ``train_nugget2d_ae``: the autoencoding study of Nugget2D §4, autoencoders per
ratio and their ICAE baseline, on the ``lm`` base LM (paper: LLaMA-7B on the Pile) with
the job ``train.nugget2d_ae``. How it trains and what it writes:
`stages.nugget2d.nugget2d_stage`.

A Nugget2D autoencoder at each ratio of ``ratios`` (0.05, 0.1; the first is the main
model, the others variants ``r<ratio>``) and, with ``icae``, ICAE (Ge et al., 2023;
`nugget_core.nugget2d.ICAEModel`) per ratio, ``icae_r<ratio>``, with ``ceil(ratio *
max_doc_tokens)`` memory slots: the budget Nugget2D reaches on the longest training
document, fixed for every length. All train the same way
(`stages.nugget2d.autoencoding_task.AutoencodingTask`: same documents, length cuts, loss and
optimiser); ``eval_nugget2d_ae`` reads them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stages.framework.contract import section
from stages.nugget2d.artifacts import TrainedNugget2D
from stages.nugget2d.autoencoding_task import AutoencodingTask
from stages.nugget2d.nugget2d_stage import Nugget2DInputs, Nugget2DTrainingStage, Variant

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DConfig
    from stages.config.schema import CausalLM
    from stages.nugget2d.config import Nugget2DAEJob


def icae_name(ratio: float) -> str:
    return f"{TrainedNugget2D.ICAE}_{TrainedNugget2D.ratio_name(ratio)}"


@dataclass(frozen=True)
class TrainNugget2DAEConfig:
    nugget2d: Nugget2DConfig = section("nugget2d")
    lm: CausalLM = section("model.lm")
    job: Nugget2DAEJob = section("train.nugget2d_ae")
    seed: int = section("run.seed")


class TrainNugget2DAE(Nugget2DTrainingStage[TrainNugget2DAEConfig, Nugget2DInputs]):
    name = "train_nugget2d_ae"
    job_key = train_job = "train.nugget2d_ae"
    base_role = "lm"  # Nugget2D §3: the autoencoding experiment uses LLaMA-7B, the LM (not the chat) model

    def main_model(self, config: TrainNugget2DAEConfig) -> tuple[str, float]:
        return TrainedNugget2D.AUTOENCODING, config.job.ratios[0]

    def task(self, config: TrainNugget2DAEConfig, inputs: Nugget2DInputs) -> AutoencodingTask:
        return self.system_task(config, inputs)

    def system_task(self, config: TrainNugget2DAEConfig, inputs: Nugget2DInputs, system: str = "nugget2d",
                    ratio: float | None = None) -> AutoencodingTask:
        """The autoencoder ``system`` (nugget2d or icae) at ``ratio`` (None: the job's first)."""
        # torch and peft load with the model, not with the stage table
        from nugget_core.nugget2d import icae_slots

        job = config.job
        ratio = job.ratios[0] if ratio is None else ratio
        fields = self.common(config, inputs)
        fields["nugget2d"] = dataclasses.replace(fields["nugget2d"], ratio=ratio)
        return AutoencodingTask(system=system, slots=icae_slots(ratio, job.max_doc_tokens) if system == "icae" else 0,
                                min_doc_tokens=job.min_doc_tokens, max_doc_tokens=job.max_doc_tokens, **fields)

    def variants(self, config: TrainNugget2DAEConfig, inputs: Nugget2DInputs) -> dict[str, Variant]:
        job = config.job
        out = {TrainedNugget2D.ratio_name(r): Variant(self.system_task(config, inputs, "nugget2d", r),
                                                      TrainedNugget2D.AUTOENCODING, r, self.base_role)
               for r in job.ratios[1:]}
        if job.icae:
            out |= {icae_name(r): Variant(self.system_task(config, inputs, "icae", r), TrainedNugget2D.ICAE, r,
                                          self.base_role) for r in job.ratios}
        return out
