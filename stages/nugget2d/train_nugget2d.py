"""Stage ``train_nugget2d``: the Nugget2D compressor, ``train.nugget2d.objective`` in
autoencoding / continuation / finetune (``finetune_task`` qa or summarization). How it
trains and what it writes: `stages.nugget2d.nugget2d_stage`.

Variants, trained in the same fit: a compressor at each ratio of
``train.nugget2d.extra_ratios`` (paper: the 5x QA model is trained at r = 0.2) and, with
``train.nugget2d.ar_scorer: autoencoding``, the autoencoding compressor whose scorer the
autoregressive model (``train_nugget2d_ar``) reuses (§2.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from stages.framework.contract import section
from stages.nugget2d.artifacts import TrainedNugget2D
from stages.nugget2d.nugget2d_stage import Nugget2DCompressorStage, Nugget2DInputs, Variant

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DConfig
    from stages.config.schema import CausalLM, PromptSection
    from stages.nugget2d.config import Nugget2DCompressorJob


@dataclass(frozen=True)
class TrainNugget2DConfig:
    nugget2d: Nugget2DConfig = section("nugget2d")
    lm: CausalLM = section("model.lm")
    job: Nugget2DCompressorJob = section("train.nugget2d")
    prompts: PromptSection = section("prompts")
    seed: int = section("run.seed")


class TrainNugget2D(Nugget2DCompressorStage[TrainNugget2DConfig, Nugget2DInputs]):
    name = "train_nugget2d"
    job_key = train_job = "train.nugget2d"
    base_role = "chat"  # the QA compressor (§6.2); its autoencoding variant trains on "lm"

    @staticmethod
    def variant_specs(job: Nugget2DCompressorJob, ratio: float) -> dict[str, tuple[str, float]]:
        """The compressors trained beside the main one: name -> (objective, ratio)."""
        out = {TrainedNugget2D.ratio_name(r): (job.objective, r) for r in job.extra_ratios}
        if job.ar_scorer == TrainedNugget2D.AUTOENCODING and job.objective != TrainedNugget2D.AUTOENCODING:
            out[TrainedNugget2D.AUTOENCODING] = (TrainedNugget2D.AUTOENCODING, ratio)
        return out

    def variants(self, config: TrainNugget2DConfig, inputs: Nugget2DInputs) -> dict[str, Variant]:
        specs = self.variant_specs(config.job, config.nugget2d.ratio)
        # the autoencoding compressor lends its scorer to the AR model: the AR model's base LM
        role = {name: "lm" if name == TrainedNugget2D.AUTOENCODING else self.base_role for name in specs}
        return {name: Variant(self.compressor_task(config, inputs, objective, r, role[name]), objective, r, role[name])
                for name, (objective, r) in specs.items()}
