"""Nugget figure 4 (reconstruction BLEU), figure 5 and appendix D (what becomes a nugget) in
numbers, from ``eval_reconstruction``'s `ReconstructionResults` and ``analyze_nuggets``'
`NuggetAnalysis`.

Every number carries what its evaluation stored with it: the per-unit statistics its interval
resamples and a finding pairs (``units``: documents, for a BLEU and for a share alike: the
nugget tokens of one document are not independent), its competence floor where the metric has one
(BLEU: `stages.evaluation.task_floors.reconstruction_floor`) and why the system's model ignores
its input (``ignores_input``). A share of figure 5 / appendix D describes what one model selects;
it is marked with what marks that model's reconstruction: eval_reconstruction's flag
(uninformative decoded texts), its input-use check, and its BLEU not beyond its floor (the model
does not do its task, `stages.report.tables.MeasuredValue.task_floor`).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from stages.common.degenerate import LABEL, combine
from stages.common.resampling import UnitSample
from stages.common.tokens import display_token
from stages.nugget.artifacts.results import NuggetAnalysis, ReconstructionResults, units_of
from stages.report.tables import (
    HIGHEST_RATIO_AE,
    LOWEST_RATIO_AE,
    PAPER_SCORER_LAYER,
    ReportTable,
    same_ratio,
)

SHARES = ("share_nuggets", "share_text")  # the columns of fig. 5 / app. D: % among nuggets, % of the text


def _ratio_ends(rows: list[dict[str, Any]], layer: int, budgets: dict[str, str]) -> dict[int, str]:
    """{index of a row: `LOWEST_RATIO_AE` / `HIGHEST_RATIO_AE`}: among the AE Nugget models (learned selector,
    with feedback) at the default scorer layer ``layer`` (fig. 4's lines), per training budget
    (``budgets``: training stage -> budget) with two ratios or more, those of its lowest and of its highest ratio, so a finding compares two models of
    one budget (the sweep's trials, train_nugget's model where its budget is theirs)."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if (r["kind"] == "nugget" and r["objective"] == "ae" and r.get("scorer_layer") == layer
                and r.get("selector", "topk") == "topk" and r.get("feedback", True)):
            groups.setdefault(budgets.get(r.get("source", ""), ""), []).append(i)
    ends: dict[int, str] = {}
    for members in groups.values():
        ratios = [rows[i]["ratio"] for i in members]
        if max(ratios) > min(ratios):
            ends |= {i: LOWEST_RATIO_AE for i in members if rows[i]["ratio"] == min(ratios)}
            ends |= {i: HIGHEST_RATIO_AE for i in members if rows[i]["ratio"] == max(ratios)}
    return ends


def bleu_table(rec: ReconstructionResults | None, context: str, stand_in: str = "",
               layer: int = PAPER_SCORER_LAYER, budgets: dict[str, str] | None = None) -> ReportTable:
    """Nugget figure 4's claim: the AE models of r >= 0.1 at the default scorer layer ``layer`` (the paper's
    l = 3) beside "> 99"; every other model without a published row. Each BLEU with its 95% bootstrap
    interval over the documents where the evaluation gave one, its per-document statistics, its objective's
    floor and the model's input-use check; each model with the training budget of its stage (``budgets``:
    stage -> `stages.report.budgets`), and the AE models at the lowest / highest ratio of a budget also
    addressed as `LOWEST_RATIO_AE` / `HIGHEST_RATIO_AE` (`_ratio_ends`: the finding that BLEU rises with r)."""
    t = ReportTable("nugget_fig4", "Nugget figure 4: BLEU of texts decoded from nuggets vs ratio r", context, ["bleu"],
                    stand_in=stand_in)
    budgets = budgets or {}
    rows = sorted(rec.rows if rec else [], key=lambda r: (r["kind"], r["objective"], r.get("scorer_layer") or 0, r.get("ratio") or 0))
    ends = _ratio_ends(rows, layer, budgets)
    for i, r in enumerate(rows):
        claimed = (r["kind"] == "nugget" and r["objective"] == "ae" and r["ratio"] >= 0.1
                   and r.get("scorer_layer") == layer)
        bounds = (r["bleu_low"], r["bleu_high"]) if "bleu_low" in r and "bleu_high" in r else None
        floor = rec.floor(r) if rec else None
        t.add(r["label"], {"bleu": r["bleu"]}, "ae_r>=0.1" if claimed else None, n=r.get("n_docs"),
              budget=budgets.get(r.get("source", ""), ""), bounds={"bleu": bounds}, flag=r.get(LABEL) or "",
              also=(ends[i],) if i in ends else (), units=units_of(r),
              floors={"bleu": floor} if floor else {}, ignores_input=r.get("ignores_input", ""))
    if not rows:
        t.add(f"Nugget AE r >= 0.1 (l = {layer})", {}, "ae_r>=0.1")
    return t


class Marks(NamedTuple):
    """What marks every share row of one analysed model (`ReportTable.add`'s keywords of the same names)."""

    flag: str  # its selection's flag and eval_reconstruction's flag of its decoded texts
    ignores_input: str  # its input-use check
    task_floor: str  # its reconstruction BLEU not beyond its objective's floor


def model_marks(system: str, stats: dict[str, Any], rec: ReconstructionResults | None) -> Marks:
    """The `Marks` of the analysed model ``system`` (its `NuggetAnalysis` record ``stats``; ``rec``:
    eval_reconstruction's records). A model eval_reconstruction did not decode (appendix D's,
    encoding the other language) is marked by its own record only."""
    record = rec.record(system) if rec else None
    flag = combine(stats.get(LABEL) or None,
                   f"its reconstruction: {record[LABEL]}" if record and record.get(LABEL) else None) or ""
    ignores = stats.get("ignores_input") or (record.get("ignores_input", "") if record else "")
    floor = rec.floor(record) if rec and record else None
    task_floor = "" if record is None or floor is None or floor.reached_by(record["bleu"]) else (
        f"it does not reconstruct its input: BLEU {record['bleu']:.2f} (eval_reconstruction), not beyond the floor "
        f"{floor.describe()}")
    return Marks(flag, ignores, task_floor)


def _share_row(t: ReportTable, label: str, stats: dict[str, Any], keys: dict[str, str], marks: Marks,
               row_id: str | None = None, shares: dict[str, float] | None = None) -> None:
    """A row of shares (%) of one model (``stats``: its `NuggetAnalysis` record): per column of
    `SHARES` the record's share ``keys[column]`` (or ``shares[column]``), its documents as n, its
    95% interval over the documents (where the record has one) and its sample of documents."""
    values = shares if shares is not None else {c: stats[k] for c, k in keys.items()}
    units: dict[str, UnitSample] = {c: u for c, k in keys.items() if (u := units_of(stats).get(k)) is not None}
    intervals = stats.get("intervals", {})
    bounds = {c: (intervals[k][0], intervals[k][1]) for c, k in keys.items() if k in intervals}
    n = stats.get("n_docs")
    t.add(label, values, row_id, n={c: n for c in values}, units=units,
          bounds={c: b for c, b in bounds.items() if math.isfinite(values[c])}, flag=marks.flag,
          ignores_input=marks.ignores_input, task_floor=marks.task_floor)


def _top_rows(t: ReportTable, stats: dict[str, Any], what: str, marks: Marks, skip: str = "") -> None:
    """The model's three most frequent nugget tokens (not ``skip``, a word with a row of its own) as share rows."""
    shown = 0
    for i, (token, nug, text) in enumerate(stats["top"]):
        if shown == 3 or (skip and display_token(token) == skip):
            continue
        shown += 1
        _share_row(t, f"{display_token(token)!r} ({what}, top nugget token)", stats,
                   {c: f"top/{i}/{c}" for c in SHARES}, marks, shares={"share_nuggets": nug, "share_text": text})


def token_table(analysis: NuggetAnalysis | None, context: str, stand_in: str = "",
                layer: int = PAPER_SCORER_LAYER, rec: ReconstructionResults | None = None) -> ReportTable:
    """Nugget fig. 5 in numbers: shares (%) of 'the' and of punctuation among nuggets vs in
    text (n: the documents counted, the unit their intervals resample), then each model's top nugget
    tokens; every row of a model marked as its reconstruction is (`model_marks`, from ``rec``). The
    paper's 'the' cells describe AE at r = 0.1 (its default l = 3: here ``layer``)."""
    t = ReportTable("nugget_fig5", "Nugget figure 5: what becomes a nugget (% of tokens)", context,
                    list(SHARES), stand_in=stand_in)
    freq = analysis.token_frequency if analysis else {}
    for system, stats in freq.items():
        if stats.get("encoder_side", "source") != "source":
            continue  # another language: `multilingual_token_table`
        described = stats["objective"] == "ae" and same_ratio(stats.get("ratio"), 0.1) and stats.get("scorer_layer") == layer
        marks = model_marks(system, stats, rec)
        _share_row(t, f"'the' ({stats['label']})", stats, {c: f"the_{c}" for c in SHARES}, marks,
                   "the_ae" if described else None)
        _share_row(t, f"punctuation ({stats['label']})", stats, {c: f"punctuation_{c}" for c in SHARES}, marks)
        # 'the' has its row above (the same word, so the same shares): not a second time as a top token
        _top_rows(t, stats, stats["label"], marks, skip="the")
    if not freq:
        t.add("'the' (AE)", {}, "the_ae")
    return t


def multilingual_token_table(analysis: NuggetAnalysis | None, context: str, languages: dict[str, str],
                             stand_in: str = "", rec: ReconstructionResults | None = None) -> ReportTable:
    """Nugget appendix D (fig. 12) in numbers: per language of the corpus (``languages``:
    encoder side -> name) and objective, the punctuation share and the top nugget tokens
    among nuggets vs in text, each model's rows marked as its reconstruction is (`model_marks`).
    The paper gives no numbers for it."""
    t = ReportTable("nugget_appD", "Nugget appendix D: nugget tokens by language (% of tokens)", context,
                    list(SHARES), stand_in=stand_in)
    freq = analysis.token_frequency if analysis else {}
    for system, stats in sorted(freq.items(), key=lambda x: (x[1].get("encoder_side", "source"), x[1]["objective"])):
        language = languages[stats.get("encoder_side", "source")]
        what = f"{language}, {stats['objective'].upper()} r={stats['ratio']:g}"
        marks = model_marks(system, stats, rec)
        _share_row(t, f"punctuation ({what})", stats, {c: f"punctuation_{c}" for c in SHARES}, marks)
        _top_rows(t, stats, what, marks)
    if not any(s.get("encoder_side") == "target" for s in freq.values()):
        t.add(f"{languages['target']} (train_baselines: nugget_ae_tgtlang / nugget_mt_tgtlang)", {})
    return t
