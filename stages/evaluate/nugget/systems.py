"""Which trained models an evaluation covers, read from upstream artifacts.

Sources (each optional except where a stage requires it):

- ``sweep_nugget``: ``results.json`` records ``{trial, objective, ratio, scorer_layer,
  dev_loss, model_dir}`` (model_dir relative to the artifact);
- ``train_nugget``: ``model/``, with objective / ratio / layer from its manifest config;
- ``train_baselines``: ``systems.json`` records (TSDAE, RE, Nugget ablations).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stages.framework.stage import Artifact


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

    def describe(self) -> str:
        if self.kind == "bottleneck":
            return f"{self.baseline} ({self.decoder} decoder, {self.objective.upper()}, single vector)"
        extra = "" if self.selector == "topk" else f", {self.selector} selector"
        extra += "" if self.feedback else ", no feedback"
        return f"Nugget {self.objective.upper()} r={self.ratio:g} l={self.scorer_layer}{extra} [{self.source}]"


def sweep_systems(art: Artifact) -> list[System]:
    records = json.loads(art.file("results.json").read_text())
    return [
        System(
            name=f"sweep:{r['trial']}", kind="nugget", model_dir=art.path / r["model_dir"],
            objective=r["objective"], source="sweep_nugget", ratio=float(r["ratio"]),
            scorer_layer=int(r["scorer_layer"]), dev_loss=r.get("dev_loss"),
        )
        for r in records
    ]


def train_nugget_system(art: Artifact) -> System:
    config = art.manifest.get("config", {})
    nugget, job = config.get("nugget", {}), config.get("train.nugget", {})
    if not nugget or not job:
        raise ValueError(f"train_nugget artifact {art.key} has no nugget / train.nugget config in its manifest")
    state = json.loads(art.file("trainer_state.json").read_text())
    return System(
        name="train_nugget", kind="nugget", model_dir=art.file("model"), objective=job["objective"],
        source="train_nugget", ratio=float(nugget["ratio"]), scorer_layer=int(nugget["scorer_layer"]),
        selector=nugget["selector"], feedback=bool(nugget["feedback"]), dev_loss=state.get("best_dev_loss"),
    )


def baseline_systems(art: Artifact) -> list[System]:
    out = []
    for r in json.loads(art.file("systems.json").read_text()):
        common: dict[str, Any] = dict(
            name=f"baseline:{r['system']}", kind=r["kind"], model_dir=art.path / r["model_dir"],
            objective=r["objective"], source="train_baselines", baseline=r["system"],
            dev_loss=r.get("dev_loss"),
        )
        if r["kind"] == "bottleneck":
            out.append(System(**common, decoder=r["decoder"]))
        else:
            out.append(System(**common, ratio=float(r["ratio"]), scorer_layer=int(r["scorer_layer"]),
                              selector=r["selector"], feedback=bool(r["feedback"])))
    return out


def collect_systems(inputs: dict[str, Artifact]) -> list[System]:
    """Every system of the upstream artifacts present in ``inputs``."""
    systems: list[System] = []
    if "sweep_nugget" in inputs:
        systems += sweep_systems(inputs["sweep_nugget"])
    if "train_nugget" in inputs:
        systems.append(train_nugget_system(inputs["train_nugget"]))
    if "train_baselines" in inputs:
        systems += baseline_systems(inputs["train_baselines"])
    for s in systems:
        if not s.model_dir.exists():
            raise FileNotFoundError(f"system {s.name}: model dir {s.model_dir} is missing")
    return systems


def to_record(system: System) -> dict[str, Any]:
    """JSON form (paths dropped: the report identifies systems by their fields)."""
    return {k: v for k, v in system.__dict__.items() if k != "model_dir"}
