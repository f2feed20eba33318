"""Stage ``train_nugget2d_ft``: starts from ``train_nugget2d``'s model and fine-tunes it
with objective ``finetune`` on ``train.nugget2d_ft.finetune_task`` (paper §6: "further
fine-tune the model with triples sampled from the target task"). How it trains and what
it writes: `stages.train.nugget2d_stage`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stages.artifacts.train import TrainedNugget2D
from stages.framework.stage import StageContext
from stages.train.nugget2d_stage import Nugget2DObjectiveStage

if TYPE_CHECKING:
    from stages.config.train import Nugget2DTrainJob  # noqa: F401 (the job type: a string in the base class below)


class TrainNugget2DFT(Nugget2DObjectiveStage["Nugget2DTrainJob"]):
    name = "train_nugget2d_ft"
    job_key = train_job = "train.nugget2d_ft"
    base_role = "chat"
    upstream = ("prepare_lm", "build_lm", "train_nugget2d")
    config_keys = ("nugget2d", "model.lm", "train.nugget2d_ft", "prompts", "run.seed")

    def from_upstream(self, ctx: StageContext) -> dict[str, Any]:
        return {"init_dir": str(TrainedNugget2D.read(ctx.inputs["train_nugget2d"], "train_nugget2d").path)}
