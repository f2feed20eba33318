"""Contracts of the Nugget evaluations' outputs: `SimilarityResults` (``eval_similarity``),
`ReconstructionResults` (``eval_reconstruction``), `NuggetAnalysis` (``analyze_nuggets``): per-
system records and figures with their captions.

Every measured number of a record carries, in the record's ``units`` ({metric: `UnitSample.to_json()`}),
the per-unit statistics behind it (`stages.common.resampling`): its 95% interval resamples them, and
two systems scored on the same units (the same unit ids) are compared paired. Each output's
competence floors (`stages.common.floors`, on the same examples) are in its ``floors``. A record's
``ignores_input`` says why the system's model ignores its compressed input ("" = it does not, or it
was not checked; `stages.artifacts.trainer_state.InputUse`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any, ClassVar

from stages.artifacts.base import Location, Source, Stored, field, locate, records, write_json
from stages.common.degenerate import LABEL
from stages.common.floors import Floor
from stages.common.render import csv_text, markdown
from stages.common.resampling import UnitSample


def units_of(record: Mapping[str, Any]) -> dict[str, UnitSample]:
    """A record's ``units`` ({metric: `UnitSample`}; none where the record has none), from a
    record its type's reader checked (`read_units`)."""
    return {k: UnitSample.from_json(v) for k, v in record.get("units", {}).items()}


def read_units(where: Location, name: str, record: Any, what: str) -> dict[str, UnitSample]:
    """{metric: `UnitSample`} of ``record``'s ``units`` (absent: {}); a `ContractError` naming ``what``
    (the record) and the metric when one is malformed."""
    out = {}
    for metric, sample in field(where, name, record, "units", dict, default={}).items():
        try:
            out[metric] = UnitSample.from_json(sample if isinstance(sample, dict) else {})
        except (ValueError, TypeError) as e:
            raise where.error(name, f"is malformed: units {metric!r} of {what}: {e}", "units") from e
    return out


def read_floors(where: Location, name: str, raw: Any) -> dict[str, Floor]:
    """The ``floors`` ({key: `Floor`}) of file ``name``'s object ``raw``, checked."""
    out = {}
    for k, v in field(where, name, raw, "floors", dict, default={}).items():
        try:
            out[k] = Floor.from_json(v)
        except (ValueError, TypeError, AttributeError) as e:
            raise where.error(name, f"is malformed: floor {k!r}: {e}", "floors") from e
    return out


def interval_fields(metric: str, bounds: tuple[float, float] | None) -> dict[str, float]:
    """A record's ``<metric>_low`` / ``<metric>_high``: the ends of the metric's 95% interval
    (`UnitSample.interval`; none where it has none: fewer than `stages.common.resampling.MIN_UNITS` units)."""
    return {} if bounds is None else {f"{metric}_low": bounds[0], f"{metric}_high": bounds[1]}


def _write_records(out: Path, stem: str, rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    cells = [[r.get(c) for c in columns] for r in rows]
    (out / f"{stem}.csv").write_text(csv_text(columns, cells))
    (out / f"{stem}.md").write_text(markdown(columns, cells))


SIMILARITY_COLUMNS = ("label", "mode", "objective", "ratio", "scorer_layer", "selector", "feedback", "task", "mrr",
                      "mrr_low", "mrr_high", "vectors_per_doc", "n_tasks", "ignores_input", LABEL)


@dataclass(frozen=True)
class SimilarityResults:
    """``eval_similarity``: ``similarity.json`` (``rows``: one record per system and task
    with ``label``, ``mode`` nugget | bottleneck | colbart, ``task`` pi | rr, ``mrr``, ``n_tasks``
    (its queries), ``units`` (``mrr``: per query its reciprocal rank x 100, unit ids the query ids,
    the same for every system), from 15 queries on the ends of its 95% bootstrap interval over the
    queries ``mrr_low`` / ``mrr_high``, ``ignores_input``, ``data`` and the system's fields;
    ``colbart_from``; ``floors``: per task a random ranking's expected MRR on the same queries),
    ``.csv`` / ``.md``, and the per-query `EXAMPLES`."""

    STAGE: ClassVar[str] = "eval_similarity"
    FILE: ClassVar[str] = "similarity.json"
    EXAMPLES: ClassVar[str] = "ranks.jsonl"  # per system, task and query: the answer's reciprocal rank
    rows: list[dict[str, Any]]
    colbart_from: str | None = None
    floors: dict[str, Floor] = dc_field(default_factory=dict)  # per task (pi, rr)

    def write(self, out: Path) -> list[Path]:
        write_json(out / self.FILE, {"rows": self.rows, "colbart_from": self.colbart_from,
                                     "floors": {k: f.to_json() for k, f in self.floors.items()}})
        _write_records(out, "similarity", self.rows, SIMILARITY_COLUMNS)
        return [out / self.FILE, out / "similarity.csv", out / "similarity.md"]

    @classmethod
    def read(cls, source: Source) -> SimilarityResults:
        where = locate(source, cls.STAGE)
        raw = where.json(cls.FILE)
        rows = records(where, cls.FILE, field(where, cls.FILE, raw, "rows", list),
                       [("label", str), ("mode", str), ("task", str), ("mrr", float), ("n_tasks", int), ("data", str)])
        for r in rows:
            read_units(where, cls.FILE, r, f"system {r['label']!r} on {r['task']!r}")
            field(where, cls.FILE, r, "ignores_input", str, default="")
        return cls(rows, field(where, cls.FILE, raw, "colbart_from", (str, type(None)), default=None),
                   read_floors(where, cls.FILE, raw))


CAPTIONS_FILE = "figures.json"  # {figure file name: caption}, beside the figures


def write_captions(out: Path, static: dict[str, str], details: dict[str, str]) -> Path:
    """``figures.json``: each figure's fixed caption (``static``) followed by what this run
    adds to it (``details``: n, data source); a detail for a figure with no caption is an error."""
    unknown = sorted(set(details) - set(static))
    if unknown:
        raise ValueError(f"captions for unknown figures {unknown}; figures: {sorted(static)}")
    return write_json(out / CAPTIONS_FILE,
                      {name: f"{caption} {details[name]}" if details.get(name) else caption
                       for name, caption in static.items()})


def read_captions(path: Path | None, stage: str, static: dict[str, str]) -> dict[str, str]:
    """Each figure's caption: the run's ``figures.json`` where the output has one (an output
    written before captions existed has none), else the fixed caption."""
    if path is None or not (path / CAPTIONS_FILE).is_file():
        return dict(static)
    where = locate(path, stage)
    raw = where.json(CAPTIONS_FILE)
    if not isinstance(raw, dict):
        raise where.error(CAPTIONS_FILE, "is malformed: expected {figure file name: caption}")
    for name, caption in raw.items():
        if name not in static or not isinstance(caption, str):
            raise where.error(CAPTIONS_FILE, f"is malformed: {name!r} -> {caption!r} is not a caption of one of "
                                             f"the figures {sorted(static)}")
    return {name: raw.get(name, caption) for name, caption in static.items()}


class WithFigures:
    """The figures of an evaluation output (`FIGURES`, in its folder ``path``) and their
    captions (`FIGURE_CAPTIONS`, completed by the run's ``figures.json``)."""

    STAGE: ClassVar[str]
    FIGURES: ClassVar[tuple[str, ...]]
    FIGURE_CAPTIONS: ClassVar[dict[str, str]]
    path: Path | None

    def figures(self) -> list[Path]:
        """The figures present (drawing one is optional)."""
        return [self.path / n for n in self.FIGURES if self.path and (self.path / n).is_file()]

    @classmethod
    def write_captions(cls, out: Path, details: dict[str, str]) -> Path:
        """``figures.json``: `FIGURE_CAPTIONS` with this run's ``details`` (n, data) appended."""
        return write_captions(out, cls.FIGURE_CAPTIONS, details)

    def captions(self) -> dict[str, str]:
        """{figure file name: caption} for every figure of `FIGURES` (`read_captions`)."""
        return read_captions(self.path, self.STAGE, self.FIGURE_CAPTIONS)


RECONSTRUCTION_COLUMNS = ("label", "kind", "objective", "ratio", "scorer_layer", "decoder", "bleu", "bleu_low",
                          "bleu_high", "n_docs", "ignores_input", LABEL)


@dataclass(frozen=True)
class ReconstructionResults(WithFigures):
    """``eval_reconstruction``: ``reconstruction.json`` (``rows``: one record per system with
    ``label``, ``name``, ``kind``, ``objective``, ``ratio``, ``bleu``, ``n_docs``, ``units``
    (``bleu``: per document its BLEU statistics, unit ids build_mt_docs' ``doc_id``, the same for every
    system), from 15 documents on the ends of its 95% bootstrap interval over the documents
    ``bleu_low`` / ``bleu_high``, ``ignores_input``; ``split``, ``beam_size``, ``floors``: per
    objective the BLEU floor of its references, `stages.evaluation.task_floors.reconstruction_floor`),
    ``.csv`` / ``.md``, the figure ``bleu_vs_ratio.png`` with its caption in ``figures.json`` and
    `EXAMPLES`."""

    STAGE: ClassVar[str] = "eval_reconstruction"
    FILE: ClassVar[str] = "reconstruction.json"
    # per system and document (every one decoded): the source, the reference, the decoded text and
    # its sentence BLEU / chrF (`stages.evaluation.samples` rows)
    EXAMPLES: ClassVar[str] = "examples.jsonl"
    FIGURES: ClassVar[tuple[str, ...]] = ("bleu_vs_ratio.png",)
    FIGURE_CAPTIONS: ClassVar[dict[str, str]] = {
        "bleu_vs_ratio.png": "Nugget fig. 4: corpus BLEU (sacrebleu, 0-100) of documents of build_mt_docs "
                             "decoded by beam search from each model's encoding, against the model's compression "
                             "ratio r; one line per objective (AE: the reference is the input document, MT: its "
                             "translation) and scorer layer; single-vector baselines (one vector per document) "
                             "drawn at r = 0.",
    }
    rows: list[dict[str, Any]]
    split: str
    beam_size: int
    path: Path | None = None
    floors: dict[str, Floor] = dc_field(default_factory=dict)  # per objective (ae, mt): its references' floor

    def write(self, out: Path) -> list[Path]:
        write_json(out / self.FILE, {"rows": self.rows, "split": self.split, "beam_size": self.beam_size,
                                     "floors": {k: f.to_json() for k, f in self.floors.items()}})
        _write_records(out, "reconstruction", self.rows, RECONSTRUCTION_COLUMNS)
        return [out / self.FILE, out / "reconstruction.csv", out / "reconstruction.md"]

    @classmethod
    def read(cls, source: Source) -> ReconstructionResults:
        where = locate(source, cls.STAGE)
        raw = where.json(cls.FILE)
        rows = records(where, cls.FILE, field(where, cls.FILE, raw, "rows", list),
                       [("label", str), ("kind", str), ("objective", str), ("bleu", float), ("n_docs", int)])
        for r in rows:
            read_units(where, cls.FILE, r, f"system {r['label']!r}")
            field(where, cls.FILE, r, "ignores_input", str, default="")
        return cls(rows, field(where, cls.FILE, raw, "split", str), field(where, cls.FILE, raw, "beam_size", int),
                   where.path, read_floors(where, cls.FILE, raw))

    def floor(self, row: Mapping[str, Any]) -> Floor | None:
        """The BLEU floor of ``row``'s references (its objective's); None where none was computed."""
        return self.floors.get(row["objective"])

    def record(self, name: str) -> dict[str, Any] | None:
        """The record of system ``name`` (`stages.nugget.systems.System.name`); None where it was not reconstructed."""
        return next((r for r in self.rows if r.get("name") == name), None)


@dataclass(frozen=True)
class NuggetAnalysis(WithFigures):
    """``analyze_nuggets``: ``token_frequency.json`` ({system: shares (%) of 'the', of
    punctuation and of the top nugget tokens among nuggets vs in text, ``label``, ``objective``,
    ``ratio``, ``n_docs``, ``units`` (per share, `SHARE_KEYS` and ``top/<i>/share_nuggets`` /
    ``top/<i>/share_text`` of the i-th ``top`` token: per document [100 x its count of the token, its
    nuggets / tokens], unit ids build_mt_docs' ``doc_id``: the documents are the independent unit, not the
    tokens), ``intervals`` (the same keys: their 95% bootstrap intervals over the documents, from 15
    documents), ``ignores_input``}), ``probability_gain.json``, the figures and their captions
    (``figures.json``) and the per-document selections `SAMPLES`."""

    SHARE_KEYS: ClassVar[tuple[str, ...]] = ("the_share_nuggets", "the_share_text", "punctuation_share_nuggets",
                                             "punctuation_share_text")

    STAGE: ClassVar[str] = "analyze_nuggets"
    FREQUENCY: ClassVar[str] = "token_frequency.json"
    GAIN: ClassVar[str] = "probability_gain.json"
    EXAMPLES: ClassVar[str] = "nuggets.html"  # documents with their nuggets highlighted, per model
    # per model and counted document: its nugget tokens and their positions (`stages.evaluation.samples` rows)
    SAMPLES: ClassVar[str] = "examples.jsonl"
    FIGURES: ClassVar[tuple[str, ...]] = ("token_frequency.png", "probability_gain.png", "nugget_positions.png",
                                          "probability_gain_relative.png", "nuggets.html")
    FIGURE_CAPTIONS: ClassVar[dict[str, str]] = {
        "token_frequency.png": "Nugget fig. 5: the 6 most frequent nugget tokens of the first (AE) model, and their "
                               "share (%) among the nuggets of each model encoding English (AE, MT) and in the "
                               "text, on the source side of build_mt_docs' eval.nugget_split split (dev, as the "
                               "paper); a token and its word-initial variant (the same word after a space) count as one word.",
        "probability_gain.png": "Nugget fig. 7: mean probability gain p(y_i | y_<i, z_j) - p(y_i | y_<i) (eq. 9, "
                                "teacher-forced AE decoding that sees only nugget j) at each token index i of the "
                                "document, for the 3rd, 6th and 9th nuggets in text order; documents of "
                                "build_mt_docs' eval.nugget_split split.",
        "nugget_positions.png": "Nugget fig. 7 (positions): share of the documents whose 3rd, 6th or 9th nugget "
                                "sits at each token index; the documents of probability_gain.png.",
        "probability_gain_relative.png": "Nugget fig. 8: mean probability gain (eq. 9) at each token index relative "
                                         "to its nugget (0: the nugget's own token; ±16 tokens), over every nugget "
                                         "of documents of 64, 128 and 256 tokens cut from consecutive build_mt_docs "
                                         "dev documents; a length above the model's positions is left out.",
        "nuggets.html": "Nugget fig. 6: build_mt_docs dev documents, each token shaded by the AE model's nugget "
                        "score, nuggets in green.",
    }
    token_frequency: dict[str, dict[str, Any]]
    probability_gain: dict[str, Any]
    path: Path | None = None

    def write(self, out: Path) -> list[Path]:
        return [write_json(out / self.FREQUENCY, self.token_frequency), write_json(out / self.GAIN, self.probability_gain)]

    @classmethod
    def read(cls, source: Source) -> NuggetAnalysis:
        where = locate(source, cls.STAGE)
        freq = where.json(cls.FREQUENCY)
        if not isinstance(freq, dict):
            raise where.error(cls.FREQUENCY, "is malformed: expected {system: statistics}")
        for system, stats in freq.items():
            for key, kind in (("label", str), ("objective", str), ("top", list), ("the_share_nuggets", float),
                              ("the_share_text", float), ("punctuation_share_nuggets", float),
                              ("punctuation_share_text", float)):
                field(where, cls.FREQUENCY, stats, key, kind)
            read_units(where, cls.FREQUENCY, stats, f"system {system!r}")
            field(where, cls.FREQUENCY, stats, "ignores_input", str, default="")
            for key, bounds in field(where, cls.FREQUENCY, stats, "intervals", dict, default={}).items():
                if not (isinstance(bounds, list) and len(bounds) == 2 and all(isinstance(x, int | float) for x in bounds)):
                    raise where.error(cls.FREQUENCY, f"is malformed: interval {key!r} of system {system!r} is {bounds!r}",
                                      "intervals")
        return cls(freq, where.json(cls.GAIN), where.path)


@dataclass(frozen=True)
class StoredSimilarityResults(Stored[SimilarityResults]):
    @classmethod
    def read(cls, source: Source) -> StoredSimilarityResults:
        return cls(SimilarityResults.read(source), locate(source, SimilarityResults.STAGE))


@dataclass(frozen=True)
class StoredReconstructionResults(Stored[ReconstructionResults]):
    @classmethod
    def read(cls, source: Source) -> StoredReconstructionResults:
        return cls(ReconstructionResults.read(source), locate(source, ReconstructionResults.STAGE))


@dataclass(frozen=True)
class StoredNuggetAnalysis(Stored[NuggetAnalysis]):
    @classmethod
    def read(cls, source: Source) -> StoredNuggetAnalysis:
        return cls(NuggetAnalysis.read(source), locate(source, NuggetAnalysis.STAGE))
