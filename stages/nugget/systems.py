"""Which trained models an evaluation covers, read from upstream artifacts.

Sources (each optional except where a stage requires it), as a stage's inputs hold them
(read through their contracts, `stages.nugget.artifacts.models`): ``sweep_nugget``
(`NuggetSweep`: one model per trial), ``train_nugget`` (`TrainedNugget`),
``train_baselines`` (`TrainedBaselines`: TSDAE, RE, Nugget ablations).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from stages.artifacts.trainer_state import TrainingSummary
from stages.nugget.artifacts.models import NuggetSweep, TrainedBaselines, TrainedNugget


@dataclass(frozen=True)
class System:
    """One trained model to evaluate."""

    name: str  # unique, e.g. "sweep:mt-r0.1-l2", "baseline:tsdae_ae"
    kind: str  # nugget | bottleneck
    model_dir: Path
    objective: str  # ae | mt
    source: str  # the stage that trained it
    ratio: float | None = None
    scorer_layer: int | None = None
    selector: str = "topk"
    feedback: bool = True
    decoder: str | None = None  # bottleneck: cross | gating
    baseline: str | None = None  # train_baselines system name
    dev_loss: float | None = None
    encoder_side: str = "source"  # "target": encodes the MT corpus's other language (app. D)
    # the `TrainingSummary.model` of the fit that trained it: "train_nugget", "sweep_nugget/<trial>",
    # "train_baselines/<system>" (how an evaluation finds the model's own training summary, `ignoring_input`)
    trained_as: str = ""

    def describe(self) -> str:
        if self.kind == "bottleneck":
            return f"{self.baseline} ({self.decoder} decoder, {self.objective.upper()}, single vector)"
        extra = "" if self.selector == "topk" else f", {self.selector} selector"
        extra += "" if self.feedback else ", no feedback"
        extra += "" if self.encoder_side == "source" else ", encoding the target language"
        return f"Nugget {self.objective.upper()} r={self.ratio:g} l={self.scorer_layer}{extra} [{self.source}]"


def sweep_systems(sweep: NuggetSweep) -> list[System]:
    return [
        System(
            name=f"sweep:{r['trial']}", kind="nugget", model_dir=sweep.model_dir(r),
            objective=r["objective"], source="sweep_nugget", ratio=float(r["ratio"]),
            scorer_layer=int(r["scorer_layer"]), dev_loss=r.get("dev_loss"),
            trained_as=f"{NuggetSweep.STAGE}/{r['trial']}",
        )
        for r in sweep.trials
    ]


def train_nugget_system(trained: TrainedNugget) -> System:
    return System(
        name="train_nugget", kind="nugget", model_dir=trained.model_dir, objective=trained.objective,
        source="train_nugget", ratio=trained.ratio, scorer_layer=trained.scorer_layer,
        selector=trained.selector, feedback=trained.feedback, dev_loss=trained.dev_loss,
        trained_as=TrainedNugget.STAGE,
    )


def baseline_systems(baselines: TrainedBaselines) -> list[System]:
    out = []
    for r in baselines.systems:
        common: dict[str, Any] = dict(
            name=f"baseline:{r['system']}", kind=r["kind"], model_dir=baselines.model_dir(r),
            objective=r["objective"], source="train_baselines", baseline=r["system"],
            dev_loss=r.get("dev_loss"), encoder_side=r.get("encoder_side", "source"),
            trained_as=f"{TrainedBaselines.STAGE}/{r['system']}",
        )
        if r["kind"] == "bottleneck":
            out.append(System(**common, decoder=r["decoder"]))
        else:
            out.append(System(**common, ratio=float(r["ratio"]), scorer_layer=int(r["scorer_layer"]),
                              selector=r["selector"], feedback=bool(r["feedback"])))
    return out


class TrainedSystems(Protocol):
    """The upstream outputs an evaluation takes its systems from (a stage's inputs
    class); None: that stage is not in the run."""

    @property
    def sweep(self) -> NuggetSweep | None: ...

    @property
    def nugget(self) -> TrainedNugget | None: ...

    @property
    def baselines(self) -> TrainedBaselines | None: ...


def collect_systems(trained: TrainedSystems, encoder_side: str | None = "source") -> list[System]:
    """Every system of the ``trained`` outputs whose encoder reads ``encoder_side`` of the
    corpus (the source language by default: the English evaluations; None: every
    system); sweep trials first, then train_nugget, then the baselines."""
    systems: list[System] = []
    if trained.sweep is not None:
        systems += sweep_systems(trained.sweep)
    if trained.nugget is not None:
        systems.append(train_nugget_system(trained.nugget))
    if trained.baselines is not None:
        systems += baseline_systems(trained.baselines)
    systems = [s for s in systems if encoder_side is None or s.encoder_side == encoder_side]
    for s in systems:
        if not s.model_dir.exists():
            raise FileNotFoundError(f"system {s.name}: model dir {s.model_dir} is missing")
    return systems


def training_summaries(trained: TrainedSystems) -> list[TrainingSummary]:
    """The training summary of every model of the ``trained`` outputs, read through their contracts."""
    return [s for output in (trained.sweep, trained.nugget, trained.baselines) if output is not None
            for s in output.training()]


def ignoring_input(systems: Sequence[System], summaries: Iterable[TrainingSummary]) -> dict[str, str]:
    """{system name: why its model ignores its compressed input ("" = it uses it, or was not checked:
    ``input_use`` None)}: each system's own training summary, the one whose ``model`` is its
    `System.trained_as` (`stages.artifacts.trainer_state.InputUse`); a system trained by no stage
    of the run (``trained_as`` "", e.g. a pretrained encoder) has none. A trained system without
    its summary is an error: the summaries are not its training stage's."""
    by_model = {s.model: s for s in summaries}
    missing = sorted(s.name for s in systems if s.trained_as and s.trained_as not in by_model)
    if missing:
        raise ValueError(f"no training summary for {missing} among the training stages' models {sorted(by_model)}")
    out = {}
    for system in systems:
        use = by_model[system.trained_as].input_use if system.trained_as else None
        out[system.name] = use.reason() if use is not None else ""
    return out


def to_record(system: System) -> dict[str, Any]:
    """JSON form (paths dropped: the report identifies systems by their fields)."""
    return {k: v for k, v in system.__dict__.items() if k not in ("model_dir", "trained_as")}
