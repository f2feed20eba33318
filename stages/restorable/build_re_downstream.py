"""Stage ``build_re_downstream``: the sentence-classification tasks of RE table 10 (appendix E).

``data.re_downstream.source``:

- ``published`` (profile=paper): GLUE SST-2, SST fine-grained and TREC (coarse and fine labels)
  in their published splits, from local copies in their published layouts (``sst2_dir``,
  ``sst5_dir``, ``trec_dir``; `stages.restorable.downstream_data`) or, where a field is
  empty, from the hub by name (glue/sst2, SetFit/sst5, CogComp/trec). GLUE's SST-2 test
  labels are unpublished: its dev split is our test split and a seeded share of train
  (``sst2_dev_fraction``) is dev. TREC publishes no dev split: the probe's regularisation is
  picked by cross-validation on train (``selection: cv``, SentEval's protocol).
- ``stand_in`` (profile=tiny): sentences of the offline corpora labelled by source (coarse)
  and by group of documents (fine) in TREC's two columns (`stages.restorable.downstream_stand_in`).

Output: `stages.restorable.artifacts.DownstreamTasks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stages.common.records import write_jsonl
from stages.framework.contract import NoInputs, section
from stages.framework.stage import Stage, StageContext
from stages.restorable.artifacts import DownstreamTasks
from stages.restorable.downstream_data import Task, hub_task, read_sst2, read_sst5, read_trec
from stages.restorable.downstream_stand_in import stand_in_tasks

if TYPE_CHECKING:
    from stages.restorable.config import REDownstreamData


def published_tasks(cfg: REDownstreamData, seed: int) -> dict[str, Task]:
    """The tasks of ``cfg.tasks`` from local folders in their layouts, or the hub where a folder is empty."""
    out: dict[str, Task] = {}
    if "sst2" in cfg.tasks:
        out |= ({"sst2": read_sst2(Path(cfg.sst2_dir), cfg.sst2_dev_fraction, seed)} if cfg.sst2_dir
                else hub_task("sst2", cfg.sst2_dev_fraction, seed))
    if "sst5" in cfg.tasks:
        out |= {"sst5": read_sst5(Path(cfg.sst5_dir))} if cfg.sst5_dir else hub_task("sst5", 0.0, seed)
    if any(t.startswith("trec") for t in cfg.tasks):
        out |= read_trec(Path(cfg.trec_dir)) if cfg.trec_dir else hub_task("trec", 0.0, seed)
    return {t: out[t] for t in cfg.tasks}


def write_tasks(out: Path, tasks: dict[str, Task]) -> dict[str, dict[str, Any]]:
    """Each task's splits as `DownstreamTasks` files; its ``stats.json`` entry. An empty split,
    or a label of dev / test that train never shows, is an error naming the task."""
    entries = {}
    for name, task in tasks.items():
        counts = {}
        for split, rows in task.splits.items():
            if not rows:
                raise ValueError(f"build_re_downstream: task {name!r} has no {split} rows ({task.origin})")
            unknown = sorted({label for _, label in rows} - set(task.labels))
            if unknown:
                raise ValueError(f"build_re_downstream: task {name!r} {split} has labels {unknown[:5]} outside "
                                 f"its label set ({task.origin})")
            path = DownstreamTasks.file_of(out, name, split)
            path.parent.mkdir(parents=True, exist_ok=True)
            counts[split] = write_jsonl(path, ({"id": f"{name}:{split}:{i}", "text": text, "label": label}
                                               for i, (text, label) in enumerate(rows)))
        entries[name] = {"labels": task.labels, "selection": task.selection, "origin": task.origin, "counts": counts}
    return entries


@dataclass(frozen=True)
class REDownstreamConfig:
    downstream: REDownstreamData = section("data.re_downstream")
    seed: int = section("data.seed")


class BuildREDownstream(Stage[REDownstreamConfig, NoInputs, DownstreamTasks]):
    name = "build_re_downstream"
    external_paths = ("data.re_downstream.sst2_dir", "data.re_downstream.sst5_dir", "data.re_downstream.trec_dir")

    @classmethod
    def offline_sources(cls, sections: dict[str, Any]) -> tuple[str, ...]:
        cfg = sections["data.re_downstream"]
        return tuple(cfg.stand_in_sources) if cfg.source == "stand_in" else ()

    def compute(self, ctx: StageContext, config: REDownstreamConfig, inputs: NoInputs) -> None:
        cfg = config.downstream
        if cfg.source == "stand_in":
            tasks = {t: task for t, task in stand_in_tasks(cfg, ctx.sources_dir, config.seed).items() if t in cfg.tasks}
            stand_in = next(iter(tasks.values())).origin + "; stand-in for TREC"
        else:
            tasks, stand_in = published_tasks(cfg, config.seed), ""
        entries = write_tasks(ctx.output_dir, tasks)
        ctx.log_artifact(ctx.write_json(DownstreamTasks.STATS, {"source": cfg.source, "stand_in": stand_in,
                                                                "tasks": entries}))
        metrics: dict[str, float] = {}
        for name, entry in entries.items():
            metrics[f"{name}.labels"] = len(entry["labels"])
            metrics |= {f"{name}.{split}_examples": n for split, n in entry["counts"].items()}
            print(f"[build_re_downstream] {name}: {len(entry['labels'])} labels, " + ", ".join(
                f"{n} {split}" for split, n in entry["counts"].items()) + f" ({entry['origin']})", flush=True)
        ctx.set_tags({"stand_in": stand_in or "none"})
        ctx.log_metrics(metrics)
