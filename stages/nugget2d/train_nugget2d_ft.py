"""Stage ``train_nugget2d_ft``: starts from ``train_nugget2d``'s model and fine-tunes it
with objective ``finetune`` on ``train.nugget2d_ft.finetune_task`` (paper §6: "further
fine-tune the model with triples sampled from the target task"). How it trains and what
it writes: `stages.nugget2d.nugget2d_stage`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stages.framework.contract import produced_by, section
from stages.nugget2d.artifacts import TrainedNugget2D
from stages.nugget2d.nugget2d_stage import Nugget2DCompressorStage, Nugget2DInputs

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DConfig
    from stages.config.schema import CausalLM, PromptSection
    from stages.nugget2d.config import Nugget2DTrainJob

INIT_STAGE = "train_nugget2d"  # the model this stage fine-tunes


@dataclass(frozen=True)
class TrainNugget2DFTConfig:
    nugget2d: Nugget2DConfig = section("nugget2d")
    lm: CausalLM = section("model.lm")
    job: Nugget2DTrainJob = section("train.nugget2d_ft")
    prompts: PromptSection = section("prompts")
    seed: int = section("run.seed")


@dataclass(frozen=True)
class TrainNugget2DFTInputs(Nugget2DInputs):
    init: TrainedNugget2D = produced_by(INIT_STAGE)


class TrainNugget2DFT(Nugget2DCompressorStage[TrainNugget2DFTConfig, TrainNugget2DFTInputs]):
    name = "train_nugget2d_ft"
    job_key = train_job = "train.nugget2d_ft"
    base_role = "chat"

    def from_upstream(self, inputs: TrainNugget2DFTInputs) -> dict[str, Any]:
        return {"init_dir": str(inputs.init.path)}
