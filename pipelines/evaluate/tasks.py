"""Each ``nugget eval`` task as a call of its evaluation stage's own recipe on one checkpoint,
so a checkpoint scores here as in the pipeline:

- ``qa`` / ``summarization`` (Nugget2D): `stages.nugget2d.lm.qa.evaluate_qa` /
  `stages.nugget2d.lm.summarization.evaluate_summarization` with the Nugget2D system only;
- ``reconstruction`` (Nugget): `stages.nugget.reconstruction.reconstruct` (eval_reconstruction's
  recipe: beam search, corpus BLEU with its bootstrap interval);
- ``restoration`` (RE): `stages.restorable.restoration.restore` and ``system_row``
  (eval_re_restoration's recipe: teacher-forced perplexity, beam search, ROUGE);
- ``lm`` (Nugget2D): `stages.nugget2d.lm.language_modelling.evaluate_lm` (eval_lm's recipe:
  perplexity per corpus and context configuration, Lambda from calibrate_threshold);
- ``pi`` / ``rr`` (Nugget): `stages.nugget.similarity.task_vectors` and ``task_reciprocal_ranks``
  (eval_similarity's recipe: mean-MaxSim over nuggets, MRR x 100).

A task returns a `Scored`: the system's table row, its per-example rows (each with the
generated ``output``), its settings for the summary and a line saying what ran.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pipelines.cli import EXIT_CONFIG
from pipelines.command import CommandError, stage_output
from pipelines.evaluate.checkpoints import TRAINED_FILE, Checkpoint
from pipelines.evaluate.data import Data
from stages.artifacts.evaluate import TableRow
from stages.config import PipelineConfig
from stages.nugget2d.loading import load_nugget2d

NUGGET_CONFIG = "nugget_config.json"  # a Nugget model folder's settings (its ratio)
MAX_TOKENS = 512  # a RE model without its training record: texts truncated here at most


@dataclass(frozen=True)
class Scored:
    """One checkpoint's result on one task."""

    row: TableRow  # metrics with their n and 95% interval / standard error, the recipe's flag
    metrics: tuple[str, ...]  # the task's quality metrics, printed in this order
    examples: list[dict[str, Any]]  # per example: id, output, reference / answer, its scores
    header: str  # what ran, for people
    settings: dict[str, Any] = field(default_factory=dict)  # what the summary records of the run
    stand_in: str = ""
    more_rows: list[TableRow] = field(default_factory=list)  # further rows (lm: one per context configuration)
    outputs: str = "text"  # what an example holds: text (``output``) | ranking (``ranking``) | none (`summary.degenerate`)

    @property
    def rows(self) -> list[TableRow]:
        return [self.row, *self.more_rows]


def soft_prompt(args: argparse.Namespace, model: Any) -> bool:
    """``--soft-prompt`` / ``--no-soft-prompt``, else what the checkpoint's usage.json
    records (continuation / autoencoding models read it, fine-tuned ones do not), else off."""
    if args.soft_prompt is not None:
        return bool(args.soft_prompt)
    return bool(model.usage.soft_prompt) if model.usage is not None else False


def _loaded(what: str, load: Any) -> Any:
    """``load()``; a loader's error (a missing base LM, a broken folder) is one line, exit 2."""
    try:
        return load()
    except (OSError, ValueError, KeyError) as exc:
        raise CommandError(EXIT_CONFIG, f"cannot load {what}: {type(exc).__name__}: {exc}") from None


def _nugget2d(ckpt: Checkpoint, cfg: PipelineConfig, args: argparse.Namespace) -> tuple[Any, Any]:
    """The Nugget2D model and tokenizer of ``ckpt``; a checkpoint inside the config's artifact
    root finds its base LM there (base_model.json's relative path)."""
    root = Path(cfg.run.artifact_root).resolve()
    within = str(root) if ckpt.path.resolve().is_relative_to(root) else None
    return _loaded(str(ckpt.path), lambda: load_nugget2d(ckpt.path, args.base_model, args.device, within))


def run_nugget2d(ckpt: Checkpoint, task: str, records: list[dict], cfg: PipelineConfig,
                 args: argparse.Namespace) -> Scored:
    """``qa`` / ``summarization``: the stage's recipe with the Nugget2D system only, at
    ``--ratio`` (default: the checkpoint's), with the prompt format it was trained with; a
    summarisation result also shows the lead-3 floor's row on the same records."""
    from nugget_core.nugget2d.prompts import PromptFormat
    from stages.common.progress import progress_logger
    from stages.evaluation.rouge import SUMMARY_ROUGE_TYPES
    from stages.nugget2d.lm import qa, summarization
    from stages.nugget2d.lm.scoring import QA_QUALITY

    model, tokenizer = _nugget2d(ckpt, cfg, args)
    # a fine-tuned checkpoint records the prompt format it was trained with; that one wins
    layout = model.usage.prompt_format if model.usage is not None and model.usage.prompt_format else cfg.prompts.format
    ratio = args.ratio or model.config.ratio
    fmt, soft, log = PromptFormat(layout, tokenizer), soft_prompt(args, model), progress_logger("nugget.eval")
    if task == "qa":
        section = replace(cfg.eval.qa, systems=["nugget2d"], nugget_ratios=[ratio])
        result = qa.evaluate_qa(model, tokenizer, records, section, prompt_format=fmt, soft_prompt=soft, log=log)
        metrics: tuple[str, ...] = QA_QUALITY
    else:
        summary = replace(cfg.eval.summarization, systems=["nugget2d_ft"], nugget_ratio=ratio)
        result = summarization.evaluate_summarization(model, tokenizer, records, summary, prompt_format=fmt,
                                                      soft_prompt=soft, log=log)
        metrics = SUMMARY_ROUGE_TYPES
    row, *floor = result.table.rows  # summarisation: the lead-3 summary's row on the same records follows
    return Scored(row, metrics, result.examples, f"Nugget2D at r = {ratio:g}, prompts {layout}",
                  {"ratio": ratio, "prompt_format": layout, "soft_prompt": soft}, result.table.stand_in, floor)


def run_reconstruction(ckpt: Checkpoint, records: list[dict], cfg: PipelineConfig,
                       args: argparse.Namespace) -> Scored:
    """``reconstruction``: eval_reconstruction's recipe on the Nugget model; the reference is the
    source for an AE model and the target for an MT one (the objective its training stage
    recorded, ``--objective`` to say it for a folder without that record)."""
    from stages.nugget.encoders import load_system
    from stages.nugget.reconstruction import decoded_samples, reconstruct
    from stages.nugget.systems import System

    objective = args.objective or ckpt.record(TRAINED_FILE).get("objective") or "ae"
    ev = cfg.eval  # the settings eval_reconstruction reads (its ReconstructionConfig)
    system = System(name="checkpoint", kind="nugget", model_dir=ckpt.path, objective=objective, source="nugget eval")
    loaded = _loaded(str(ckpt.path), lambda: load_system(system, device=args.device, precision=ev.dtype))
    sources = [r["source"] for r in records]
    refs = sources if objective == "ae" else [r["target"] for r in records]
    result = reconstruct(loaded, sources, refs, [r["id"] for r in records], ev.batch_size, ev.beam_size,
                         ev.reconstruction_extra_tokens)
    bounds = result.units.interval()  # the bootstrap over the documents, as eval_reconstruction's
    row = TableRow("nugget", {"bleu": result.units.value()}, n=result.units.n,
                   interval={"bleu": bounds} if bounds else {}, units={"bleu": result.units})
    examples = [{**row, "id": r["id"]} for r, row in
                zip(records, decoded_samples(system, sources, refs, result.decoded, result.tokenize), strict=True)]
    ratio = ckpt.record(NUGGET_CONFIG).get("ratio")
    return Scored(row, ("bleu",), examples,
                  f"Nugget {objective.upper()}" + (f" r = {ratio:g}" if ratio else "")
                  + f", beam {ev.beam_size}, corpus BLEU ({result.tokenize})",
                  {"objective": objective, "beam_size": ev.beam_size, "bleu_tokenize": result.tokenize})


def run_restoration(ckpt: Checkpoint, records: list[dict], cfg: PipelineConfig,
                    args: argparse.Namespace) -> Scored:
    """``restoration``: eval_re_restoration's recipe on the RE model, its texts truncated as in
    its training (train_re's ``max_tokens``; without that record, the tokenizer's limit)."""
    from transformers import AutoTokenizer

    from nugget_core.restorable import RestorableModel
    from stages.common.device import place_model
    from stages.common.resampling import UnitSample
    from stages.evaluation.rouge import ROUGE_TYPES, rouge_per_example
    from stages.restorable.restoration import restoration_samples, restore, system_row

    record = ckpt.system_record()
    section = cfg.eval.re
    model = _loaded(str(ckpt.path), lambda: place_model(RestorableModel.from_pretrained(ckpt.path), args.device,
                                                         cfg.eval.dtype))
    tokenizer = _loaded(str(ckpt.path), lambda: AutoTokenizer.from_pretrained(str(ckpt.path),
                                                                              trust_remote_code=False))
    limit = int(record.get("max_tokens") or min(tokenizer.model_max_length, MAX_TOKENS))
    texts = [r["text"] for r in records]
    nll, counts, restored = restore(model, tokenizer, texts, limit, section.batch_size, section.beam_size,
                                    section.extra_tokens, args.device)
    rouge = rouge_per_example(restored, texts)
    row = system_row({"system": record.get("system", "re"), "paper_row": record.get("paper_row", "")},
                     nll, counts, rouge, restored)
    # the table gives PPL no interval; a corpus perplexity's is the bootstrap over texts (as eval_lm's)
    bounds = UnitSample.of("text", "exp_ratio", range(len(nll)), [[x, c] for x, c in zip(nll, counts, strict=True)]
                           ).interval()
    row = replace(row, interval={**row.interval, "ppl": bounds}) if bounds else row
    name = record.get("system", ckpt.path.name)
    samples = restoration_samples({**record, "system": name}, tokenizer, texts, limit, nll, counts, restored, rouge)
    examples = [{**row, "id": r["id"]} for r, row in zip(records, samples, strict=True)]
    return Scored(row, ("ppl", *ROUGE_TYPES), examples,
                  f"RE system {name}, beam {section.beam_size}, texts truncated at {limit} tokens",
                  {"system": name, "beam_size": section.beam_size, "max_tokens": limit,
                   "sentences": record.get("sentences")})


def run_similarity(ckpt: Checkpoint, task: str, data: Data, cfg: PipelineConfig,
                   args: argparse.Namespace) -> Scored:
    """``pi`` / ``rr``: eval_similarity's recipe on the Nugget model: its nuggets of every
    query and candidate (`stages.nugget.similarity.task_vectors`), candidates ranked by
    mean-MaxSim, the answer's reciprocal rank x 100 per task (their mean: MRR)."""
    from stages.nugget.encoders import load_system
    from stages.nugget.similarity import (
        query_units,
        ranking_samples,
        task_reciprocal_ranks,
        task_vectors,
    )
    from stages.nugget.systems import System

    ev = cfg.eval  # the settings eval_similarity reads (its SimilarityConfig)
    system = System(name="checkpoint", kind="nugget", model_dir=ckpt.path, objective="none", source="nugget eval")
    loaded = _loaded(str(ckpt.path), lambda: load_system(system, device=args.device, precision=ev.dtype))
    ranked = [r["task"] for r in data.records]
    per_task, rankings = task_reciprocal_ranks(task_vectors(loaded, ranked, data.docs, ev.batch_size), ranked,
                                               multi=True)
    units = query_units(ranked, per_task)  # the bootstrap over the queries, as eval_similarity's
    bounds = units.interval()
    row = TableRow("nugget", {"mrr": units.value()}, n=units.n, interval={"mrr": bounds} if bounds else {},
                   units={"mrr": units})
    settings = {"ratio": ckpt.record(NUGGET_CONFIG).get("ratio")}
    samples = ranking_samples("nugget", settings, ranked, data.docs, per_task, rankings)
    examples = [{**row, "id": r["id"]} for r, row in zip(data.records, samples, strict=True)]
    return Scored(row, ("mrr",), examples, f"Nugget nuggets by mean-MaxSim, MRR x 100 over {task.upper()} tasks",
                  settings, outputs="ranking")


def run_lm(ckpt: Checkpoint, data: Data, cfg: PipelineConfig, args: argparse.Namespace) -> Scored:
    """``lm``: eval_lm's recipe (`stages.nugget2d.lm.language_modelling.evaluate_lm`) with the
    Nugget2D system only, selecting with calibrate_threshold's Lambda for this config, under
    every context configuration of ``eval.lm.contexts`` (one row each), each perplexity with
    its bootstrap interval over the segments' documents and flagged above the corpus's unigram
    reference (no trigram floor: that fit is eval_lm's)."""
    from stages.nugget2d.artifacts import CalibratedThreshold
    from stages.nugget2d.lm.language_modelling import evaluate_lm
    from stages.nugget2d.lm.segments import unigram_models

    calibrated = CalibratedThreshold.read(stage_output(cfg, "calibrate_threshold"))
    model, tokenizer = _nugget2d(ckpt, cfg, args)
    section = replace(cfg.eval.lm, systems=["nugget2d"])
    segments: dict[str, list[Any]] = {c: [] for c in section.corpora}
    documents: dict[str, list[str]] = {c: [] for c in section.corpora}
    for r in data.records:
        segments[r["corpus"]].append(r["segment"])
        documents[r["corpus"]].append(r["document"])
    unigrams, notes = _loaded("the unigram references", lambda: unigram_models(data.segment_files, len(tokenizer)))
    result = evaluate_lm(model, tokenizer, segments, section, threshold=calibrated.threshold, ratio=calibrated.ratio,
                         unigrams=unigrams, documents=documents, presses=cfg.eval.presses, unigram_notes=notes)
    first, *more = result.table.rows
    metrics = tuple(f"{c}_{kind}_ppl" for c in section.corpora for kind in ("subword", "word"))
    return Scored(first, metrics, result.examples,
                  f"Nugget2D at Lambda = {calibrated.threshold:.4g} (calibrate_threshold, r = {calibrated.ratio:g})",
                  {"lambda": calibrated.threshold, "ratio": calibrated.ratio, "corpora": list(section.corpora)},
                  result.table.stand_in, more, outputs="none")


def run_task(ckpt: Checkpoint, task: str, data: Data, cfg: PipelineConfig,
             args: argparse.Namespace) -> Scored:
    """``task`` on ``ckpt``: the recipe of its evaluation stage."""
    if task in ("qa", "summarization"):
        return run_nugget2d(ckpt, task, data.records, cfg, args)
    if task == "reconstruction":
        return run_reconstruction(ckpt, data.records, cfg, args)
    if task == "restoration":
        return run_restoration(ckpt, data.records, cfg, args)
    if task in ("pi", "rr"):
        return run_similarity(ckpt, task, data, cfg, args)
    if task == "lm":
        return run_lm(ckpt, data, cfg, args)
    raise CommandError(EXIT_CONFIG, f"no recipe for task {task!r}")
