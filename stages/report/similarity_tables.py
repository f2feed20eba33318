"""Nugget tables 2 and 4 (PI / RR, MRR x 100) from ``eval_similarity``'s `SimilarityResults`.

Each published Nugget row sits beside the learned-selector models it describes: its objective
and ratio at the run's default scorer layer (``nugget.scorer_layer``, as the paper's l = 3);
table 4 is two comparisons of equal budget (the scorer-layer ablation over the sweep /
train_nugget models, and train_baselines' ablations beside their reference ``nugget_mt``).
A system's values carry the training budget of the stage that trained it
(`stages.report.budgets`), so a finding compares systems of one budget only. Each MRR carries its
per-query reciprocal ranks (``units``: the queries are the unit its interval resamples, the same
queries for every system, so a finding pairs two systems), its 95% bootstrap interval over the
queries where the evaluation gave one (from `MIN_UNITS` queries), the random ranking's MRR as its floor and
why the system's model ignores its input (``ignores_input``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stages.common.degenerate import LABEL
from stages.common.floors import Floor
from stages.nugget.artifacts.results import SimilarityResults, units_of
from stages.report.published import PUBLISHED
from stages.report.tables import PAPER_SCORER_LAYER, ReportTable, same_ratio

REFERENCE_ROW = f"l={PAPER_SCORER_LAYER}"  # Nugget table 4's first row: the ablations' reference (= table 2's MT 0.1)


def _is_learned(r: dict[str, Any]) -> bool:
    """A learned-selector Nugget model read through its nuggets: a sweep trial, train_nugget, or train_baselines'
    ``nugget_mt`` (the table-4 ablations' reference); not the ablations, not a ColBART row read from one of them."""
    return (r.get("mode") == "nugget" and r.get("selector") == "topk" and bool(r.get("feedback"))
            and r.get("baseline") in (None, "nugget_mt"))


def _systems(rows: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]) -> dict[str, list[dict[str, Any]]]:
    """{system label: its similarity rows (one per task)} of the rows ``keep`` accepts, in output order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if keep(r):
            out.setdefault(r["label"], []).append(r)
    return out


def _baseline(rows: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The rows of train_baselines' system ``name`` read as itself (ColBART rows read from it are ColBART's)."""
    return [r for r in rows if r.get("baseline") == name and r["mode"] != "colbart"]


def _tasks_n(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Queries behind each task's MRR (the same tasks for every system of a run)."""
    return {r["task"]: r["n_tasks"] for r in rows if "n_tasks" in r}


PAPER_SIMILARITY_DATA = {"pi": "parabank", "rr": "wikitext103"}


def similarity_stand_in(rows: list[dict[str, Any]]) -> str:
    """The PI / RR data of this run that is not the paper's (ParaBank, WikiText-103)."""
    used = {r["task"]: r.get("data", "") for r in rows}
    return "; ".join(f"{task.upper()}: {data}" for task, data in sorted(used.items())
                     if data and PAPER_SIMILARITY_DATA.get(task) not in data)


def _nugget_label(r: dict[str, Any]) -> str:
    return f"Nugget {r['objective'].upper()} r={r['ratio']:g} l={r['scorer_layer']} [{r['label']}]"


@dataclass
class _SimilarityTable(ReportTable):
    """PI / RR tables: every MRR stands on its task's queries; a system's values carry the
    training budget of the stage that trained it (``budgets``: stage -> `stages.report.budgets`)
    and each task's floor (``floors``: `SimilarityResults.floors`)."""

    task_n: dict[str, int] = field(default_factory=dict)
    budgets: dict[str, str] = field(default_factory=dict)
    floors: dict[str, Floor] = field(default_factory=dict)

    def add_system(self, label: str, system: list[dict[str, Any]], row_id: str | None = None) -> None:
        """One system's MRR per task (``system``: its rows; none: not run), with its 95% intervals
        over the queries, its per-query samples, the tasks' floors and its input-use check."""
        source = system[0].get("source", "") if system and system[0]["mode"] != "colbart" else ""
        self.add(label, {r["task"]: r["mrr"] for r in system}, row_id, dict(self.task_n),
                 budget=self.budgets.get(source, ""),
                 bounds={r["task"]: (r["mrr_low"], r["mrr_high"]) for r in system if "mrr_low" in r and "mrr_high" in r},
                 flag="; ".join(f"{r['task'].upper()}: {r[LABEL]}" for r in system if r.get(LABEL)),
                 units={r["task"]: u for r in system if (u := units_of(r).get("mrr")) is not None},
                 floors={task: f for task, f in self.floors.items() if any(r["task"] == task for r in system)},
                 ignores_input=next((r["ignores_input"] for r in system if r.get("ignores_input")), ""))

    def state_budgets(self, rows: list[dict[str, Any]]) -> None:
        """The context names the budget of each training stage behind the table's systems."""
        used = {r.get("source") for r in rows if r["mode"] != "colbart"}
        stated = [f"{stage}: {budget}" for stage, budget in self.budgets.items() if stage in used]
        if stated:
            self.context += "; training budgets (findings compare systems of equal budget): " + "; ".join(stated)


def _similarity_table(table_id: str, title: str, sim: SimilarityResults | None, context: str,
                      budgets: dict[str, str]) -> tuple[_SimilarityTable, list[dict[str, Any]]]:
    rows = sim.rows if sim else []
    t = _SimilarityTable(table_id, title, context, ["pi", "rr"], stand_in=similarity_stand_in(rows),
                         task_n=_tasks_n(rows), budgets=budgets, floors=sim.floors if sim else {})
    t.state_budgets(rows)
    return t, rows


def table2(sim: SimilarityResults | None, context: str, budgets: dict[str, str], layer: int) -> ReportTable:
    """Nugget table 2: each published Nugget row beside every learned-selector model of its objective and
    ratio at the default scorer layer ``layer`` (the paper's l = 3), each with its training stage; the
    models of other layers / ratios follow without a published row."""
    t, rows = _similarity_table("nugget_table2", "Nugget table 2: PI / RR (MRR x 100)", sim, context, budgets)
    learned = _systems(rows, _is_learned)
    shown: set[str] = set()
    for row_id in PUBLISHED["nugget_table2"]:
        if not row_id.startswith("nugget_"):
            continue
        _, objective, ratio = row_id.split("_")
        hits = {label: s for label, s in learned.items() if s[0]["objective"] == objective
                and same_ratio(s[0]["ratio"], float(ratio)) and s[0]["scorer_layer"] == layer}
        for system in hits.values():
            t.add_system(_nugget_label(system[0]), system, row_id)
        if not hits:
            t.add(f"Nugget {objective.upper()} r={ratio} l={layer}", {}, row_id)
        shown |= set(hits)
    for label, system in learned.items():
        if label not in shown:
            t.add_system(_nugget_label(system[0]), system)
    for name, label in (("tsdae_ae", "TSDAE AE (60% deletion)"), ("tsdae_mt", "TSDAE MT"),
                        ("re_cross", "RE single vector, cross decoder (AE)"),
                        ("re_gating", "RE single vector, gating decoder (AE)")):
        t.add_system(label, _baseline(rows, name), name if name in PUBLISHED["nugget_table2"] else None)
    t.add_system(f"ColBART (all encoder states of {sim.colbart_from if sim else '-'})",
                 [r for r in rows if r["mode"] == "colbart"], "colbart")
    return t


def table4(sim: SimilarityResults | None, context: str, budgets: dict[str, str], layer: int) -> ReportTable:
    """Nugget table 4 as two comparisons of equal budget: the scorer-layer ablation (learned MT r = 0.1
    models of the sweep / train_nugget, the default layer ``layer`` as the paper's l = 3), then the
    train_baselines ablations beside their reference ``nugget_mt``, trained with the same job (its l = 3
    row). ColBART is no row of this table."""
    t, rows = _similarity_table("nugget_table4", "Nugget table 4: ablations (MT, MRR x 100)", sim, context, budgets)
    mt01 = _systems(rows, lambda r: _is_learned(r) and r["baseline"] is None and r["objective"] == "mt"
                    and same_ratio(r["ratio"], 0.1))
    default = f": this run's default scorer layer, as the paper's l = {PAPER_SCORER_LAYER}" \
        if layer != PAPER_SCORER_LAYER else ""
    # the paper's order: the reference layer first, then the others
    for x in sorted({s[0]["scorer_layer"] for s in mt01.values()} | {0, 6, 9, layer}, key=lambda x: (x != layer, x)):
        ablation = f"l={x}" if x != PAPER_SCORER_LAYER and f"l={x}" in PUBLISHED["nugget_table4"] else None
        row_id = REFERENCE_ROW if x == layer else ablation
        name = f"Nugget MT r=0.1 (l = {x}{default if x == layer else ''})"
        hits = [(label, s) for label, s in mt01.items() if s[0]["scorer_layer"] == x]
        for label, system in hits:
            t.add_system(f"{name} [{label}]", system, row_id)
        if not hits and row_id:
            t.add(name, {}, row_id)
    reference = _baseline(rows, "nugget_mt")
    what = (f"r={reference[0]['ratio']:g} (l = {reference[0]['scorer_layer']}), learned selector: the ablations' "
            f"reference [{reference[0]['label']}]" if reference else
            "(l = 3), learned selector: the ablations' reference [train_baselines: nugget_mt]")
    t.add_system(f"Nugget MT {what}", reference, REFERENCE_ROW)
    for name, label in (("no_feedback", "No feedback"), ("chunk", "Chunking"),
                        ("nugget_r0033", "Nugget (r = 0.033)"), ("sentence", "Sentence boundary")):
        t.add_system(label, _baseline(rows, name), name)
    return t
