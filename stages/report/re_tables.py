"""The RE paper's tables in the report: restoration (table 8, which holds tables 2 and 3),
passage retrieval (table 9, which holds table 4) and sentence-level tasks (table 10), measured
beside published.

The evaluation stages ``eval_re_restoration`` and ``eval_re_retrieval`` write an `EvalTable`
whose rows name the published row they reproduce (``paper_row``): restoration
``"{sentences}|{configuration}|{cls|mean}|{decoder}"``, retrieval and the sentence-level tasks
(``eval_re_downstream``) ``"pretrained|{layers}"`` (the paper's 'random initialize' rows) or
``"{freeze|grad}|{sentences}|{layers}"``. Rows are shown in
the paper's order, so every published cell stands beside its measured one (or `NOT_RUN`, the
whole table when the stage is not part of this run). Table 8 is shown as one report table per
sentence count (24 rows each); table 9 as one.

A recall@k whose k is at least the candidates a query ranks is 100 by construction: the
evaluation does not write it, and the report says why the cell is empty ("not measurable: ...").

Every measured cell carries what the findings judge it by: the per-unit statistics behind it
(documents for restoration, queries for retrieval, test sentences for table 10; the same ids for
every system scored on the same units, so two systems' difference is a paired one), the metric's
competence floor on the same examples (restoration: that sentence count's, `restoration_floor_key`)
and, where the system's model ignores its input, why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stages.artifacts.evaluate import EvalTable, StoredEvalTable, TableRow
from stages.common.floors import Floor
from stages.report.published import PUBLISHED, RE_COLUMNS, RE_RECALL, RE_TASKS
from stages.report.tables import ReportTable, add_eval_row, examples, measured_by, seq2seq_base
from stages.restorable.artifacts import restoration_floor_key

if TYPE_CHECKING:
    from stages.report.contract import ReportConfig

RESTORATION_STAGE, RETRIEVAL_STAGE, DOWNSTREAM_STAGE = "eval_re_restoration", "eval_re_retrieval", "eval_re_downstream"
TABLE8, TABLE9, TABLE10 = "re_table8", "re_table9", "re_table10"
RETRIEVAL_COLUMNS = (*RE_RECALL, "mrr")
# + how many different texts a system restored (not in the paper: 1 = its decoder ignores the vector)
RESTORATION_COLUMNS = (*RE_COLUMNS, "distinct")

# RE table 1: (pretrained layers frozen, randomly initialised layers added)
CONFIGURATIONS = {"a": (False, False), "b": (True, False), "c": (False, True), "d": (True, True)}
POOLINGS = {"cls": "[CLS]", "mean": "mean pooling"}
DECODERS = ("input", "cross", "gating")


def restoration_table_id(sentences: int) -> str:
    return f"{TABLE8}_k{sentences}"


def _restoration_key(system: str, paper_row: str) -> tuple[int, str, str, str]:
    """``paper_row`` of a restoration system as (sentences, configuration, pooling, decoder)."""
    parts = paper_row.split("|")
    if (len(parts) != 4 or not parts[0].isdigit() or int(parts[0]) < 1 or parts[1] not in CONFIGURATIONS
            or parts[2] not in POOLINGS or parts[3] not in DECODERS):
        raise ValueError(f"{RESTORATION_STAGE}: system {system!r} has paper_row {paper_row!r}; expected "
                         f"'<sentences>|<{'/'.join(CONFIGURATIONS)}>|<{'/'.join(POOLINGS)}>|<{'/'.join(DECODERS)}>'")
    return int(parts[0]), parts[1], parts[2], parts[3]


def _order(key: tuple[int, str, str, str]) -> tuple[int, str, int, int]:
    k, config, pooling, decoder = key
    return k, config, list(POOLINGS).index(pooling), DECODERS.index(decoder)


def _restoration_label(paper_row: str) -> str:
    _, config, pooling, decoder = paper_row.split("|")
    return f"({config}) {POOLINGS[pooling]}, {decoder} decoder"


def _retrieval_label(system: str, paper_row: str, stage: str = RETRIEVAL_STAGE) -> str:
    """The encoder a retrieval (or table 10) row stands for, in RE table 1's and table 9's words; an
    id that is neither ``pretrained|<layers>`` nor ``<freeze|grad>|<sentences>|<layers>`` is an error."""
    parts = paper_row.split("|")
    if parts[0] == "pretrained" and len(parts) == 2 and parts[1].isdigit():
        added = f" + {parts[1]} untrained new layers" if int(parts[1]) else ""
        return f"pretrained encoder{added}, no restoration training ('random initialize')"
    if len(parts) == 3 and parts[0] in ("freeze", "grad") and parts[1].isdigit() and parts[2].isdigit():
        frozen, layers = parts[0] == "freeze", int(parts[2])
        config = next(c for c, spec in CONFIGURATIONS.items() if spec == (frozen, layers > 0))
        what = "frozen" if frozen else "updated"
        added = f" + {layers} new layers" if layers else ""
        return f"({config}) pretrained layers {what}{added}, restoration-trained on {parts[1]} sentences"
    raise ValueError(f"{stage}: system {system!r} has paper_row {paper_row!r}; expected "
                     "'pretrained|<layers>' or '<freeze|grad>|<sentences>|<layers>'")


def _fill(t: ReportTable, published_rows: list[str], rows: list[TableRow], columns: dict[str, str],
          label: dict[str, str], floors: dict[str, Floor], unmeasurable: dict[str, dict[str, str]] | None = None
          ) -> None:
    """Each published row in the paper's order, with the systems that reproduce it (``label``:
    paper row -> its description), or `NOT_RUN` where none did; then the systems of no published row.
    ``floors``: the competence floor of each metric key on these rows' examples (`EvalTable.floors`)."""
    for row_id in published_rows:
        systems = [r for r in rows if r.paper_row == row_id]
        for r in systems:
            add_eval_row(t, f"{label[row_id]} [{r.system}]", r, columns, row_id, (unmeasurable or {}).get(r.system),
                         floors)
        if not systems:
            t.add(label[row_id], {}, row_id)
    for r in rows:
        if r.paper_row not in published_rows:
            add_eval_row(t, f"{label[r.paper_row]} [{r.system}]", r, columns, None,
                         (unmeasurable or {}).get(r.system), floors)


def _restoration_title(sentences: int) -> str:
    if sentences not in (1, 3, 5):
        return f"RE restoration of {sentences} sentences (not in the paper): PPL and ROUGE x 100"
    table3 = ("= RE table 2; its (c) / (d) mean-pooling cross and gating rows are RE table 3's 1-sentence rows"
              if sentences == 1 else "its (c) / (d) mean-pooling cross and gating rows are RE table 3's "
              f"{sentences}-sentence rows")
    noun = "sentence" if sentences == 1 else "sentences"
    return f"RE table 8, {sentences} {noun} ({table3}): restoration, PPL and ROUGE x 100"


def restoration_tables(stored: StoredEvalTable | None, context: str) -> list[ReportTable]:
    """RE table 8 from ``eval_re_restoration``'s output (None: not in this run): one report
    table per sentence count (the paper's 1, 3, 5 and any other this run measured)."""
    table, where = (stored.output, stored.where) if stored else (None, None)
    rows = table.rows if table else []
    keys = {r.system: _restoration_key(r.system, r.paper_row) for r in rows}
    # per configuration the [CLS] rows, then the mean-pooled ones (the paper's two column groups), decoders in order
    published = sorted(PUBLISHED[TABLE8], key=lambda row_id: _order(_restoration_key(row_id, row_id)))
    columns = {c: c for c in RESTORATION_COLUMNS}
    label = {row_id: _restoration_label(row_id) for row_id in [*published, *(r.paper_row for r in rows)]}
    out = []
    for sentences in sorted({1, 3, 5} | {k[0] for k in keys.values()}):
        t = ReportTable(restoration_table_id(sentences), _restoration_title(sentences),
                        measured_by(context, where, RESTORATION_STAGE), list(RESTORATION_COLUMNS),
                        stand_in=table.stand_in if table else "", published_as=TABLE8)
        # the floors of this sentence count's texts (each count has its own)
        floors = {m: f for m in RESTORATION_COLUMNS
                  if table and (f := table.floors.get(restoration_floor_key(sentences, m))) is not None}
        _fill(t, [p for p in published if p.startswith(f"{sentences}|")],
              [r for r in rows if keys[r.system][0] == sentences], columns, label, floors)
        t.examples = examples(where, EvalTable.EXAMPLES)
        out.append(t)
    return out


# what bounds a retrieval's ranks (a metric of its row) -> how the report says it: candidates ranked per query
# (reranking tasks) or the passages of the whole collection
RANK_BOUNDS = {"candidates": "{n:g} candidates per query", "passages": "{n:g} passages in the collection"}


def not_measurable(row: TableRow) -> dict[str, str]:
    """The recall cells of ``row`` that are 100 by construction: R@k of a k at least the
    candidates a query ranks."""
    out: dict[str, str] = {}
    for key, what in RANK_BOUNDS.items():
        bound = row.metrics.get(key)
        if bound is not None:
            out |= {c: f"not measurable: {what.format(n=bound)}" for c in RE_RECALL if int(c.split("@")[1]) >= bound}
    return out


def retrieval_table(stored: StoredEvalTable | None, context: str) -> ReportTable:
    """RE table 9 (R@20 / R@100: table 4) from ``eval_re_retrieval``'s output (None: not in
    this run), plus the MRR it also measures."""
    table, where = (stored.output, stored.where) if stored else (None, None)
    rows = table.rows if table else []
    published = list(PUBLISHED[TABLE9])
    label = {row_id: _retrieval_label(row_id, row_id) for row_id in published}
    label |= {r.paper_row: _retrieval_label(r.system, r.paper_row) for r in rows}
    t = ReportTable(TABLE9, "RE table 9 (its R@20 / R@100 columns are RE table 4): passage retrieval, recall@k and "
                    "MRR x 100", measured_by(context, where, RETRIEVAL_STAGE), list(RETRIEVAL_COLUMNS),
                    stand_in=table.stand_in if table else "")
    _fill(t, published, rows, {c: c for c in RETRIEVAL_COLUMNS}, label, table.floors if table else {},
          {r.system: not_measurable(r) for r in rows})
    t.examples = examples(where, EvalTable.EXAMPLES)
    return t


def downstream_table(stored: StoredEvalTable | None, context: str) -> ReportTable:
    """RE table 10's SST-2 / SST / TREC columns from ``eval_re_downstream``'s output (None: not in
    this run): accuracy x 100 with its n and Wilson 95% interval per encoder; a task this run did
    not build (the stand-in has no SST) is `NOT_RUN` in its column."""
    table, where = (stored.output, stored.where) if stored else (None, None)
    rows = table.rows if table else []
    published = list(PUBLISHED[TABLE10])
    label = {row_id: _retrieval_label(row_id, row_id, DOWNSTREAM_STAGE) for row_id in published}
    label |= {r.paper_row: _retrieval_label(r.system, r.paper_row, DOWNSTREAM_STAGE) for r in rows}
    t = ReportTable(TABLE10, "RE table 10 (SST-2 / SST / TREC half): sentence-level tasks on the frozen "
                    "embeddings, accuracy x 100 (linear probe; the paper states no protocol)",
                    measured_by(context, where, DOWNSTREAM_STAGE), list(RE_TASKS),
                    stand_in=table.stand_in if table else "")
    _fill(t, published, rows, {c: c for c in RE_TASKS}, label, table.floors if table else {})
    t.examples = examples(where, EvalTable.EXAMPLES)
    return t


def re_context(cfg: ReportConfig) -> str:
    """Profile, base encoder-decoder and restoration data behind the RE tables."""
    model = cfg.re
    base = (model.name_or_path if model.source == "pretrained" else
            f"{seq2seq_base(cfg.seq2seq)}, trained by train_nugget (AE), used as the pretrained "
            "encoder-decoder")
    return f"profile {cfg.profile}; base model: {base}; restoration texts: data.re.source = {cfg.re_data.source}"


def re_tables(cfg: ReportConfig, restoration: StoredEvalTable | None, retrieval: StoredEvalTable | None,
              downstream: StoredEvalTable | None = None) -> list[ReportTable]:
    """The RE tables from the outputs of ``eval_re_restoration``, ``eval_re_retrieval`` and
    ``eval_re_downstream`` (every cell `NOT_RUN` where the stage is absent: None)."""
    context = re_context(cfg)
    job, probe = cfg.train_re_retrieval, cfg.eval.re_downstream
    return [*restoration_tables(restoration, context),
            retrieval_table(retrieval, f"{context}; bi-encoders from train_re's {job.pooling}-pooling / "
                                       f"{job.decoder}-decoder encoders (train_re_retrieval)"),
            downstream_table(downstream, f"{context}; train_re's {probe.pooling}-pooling / {probe.decoder}-decoder "
                                         f"encoders, frozen; tasks: data.re_downstream.source = "
                                         f"{cfg.re_downstream_data.source}")]
