"""Stage ``eval_reconstruction``: BLEU of texts decoded from nuggets (Nugget §5.1, fig. 4).

For every Nugget model of the sweep (each objective x ratio x scorer layer) and of
``train_nugget``, and every single-vector baseline (TSDAE, RE cross / gating), decode
the first ``eval.max_examples`` documents of ``build_mt_docs``'s ``eval.nugget_split`` split
(dev, as the paper) from their encoding with beam search (``eval.beam_size``, 5 as in the
paper; up to the longest reference + ``eval.reconstruction_extra_tokens`` new tokens, so whole
documents can be written) and score micro-averaged corpus BLEU (sacrebleu) against the
objective's target: the input document for AE, the translation for MT (sacrebleu's "zh"
tokenizer for Chinese). Each system's record keeps every document's BLEU statistics (``units``,
`stages.common.resampling.UnitSample`, unit ids the documents' ``doc_id``: the same in every
system's sample, so the report compares two systems paired) and, from `MIN_UNITS` documents, the 95%
bootstrap interval over the documents (``bleu_low`` / ``bleu_high``); the recipe per system is
`stages.nugget.reconstruction.reconstruct`. The Nugget ablations of ``train_baselines`` are
similarity systems only (table 4) and are skipped here.

Competence floor (``floors``, per objective): `stages.evaluation.task_floors.reconstruction_floor`
of the objective's references, the same documents: the larger of BLEU 10 and the BLEU of the best
constant output; a system not above it does not reconstruct. Each system's ``ignores_input`` is its
model's input-use check from its own training summary (`stages.nugget.systems.ignoring_input`).

Output: `stages.nugget.artifacts.results.ReconstructionResults` (``reconstruction.json`` /
``.csv`` / ``.md``, ``bleu_vs_ratio.png``: fig. 4, baselines at r = 0, its caption
in ``figures.json``; per system ``uninformative``: why its decoded texts are constant, loops or
empty, `stages.common.degenerate`, "" when they are not) and ``examples.jsonl`` (every decoded
document of every system: the source read, the reference, the decoded text, its sentence BLEU and
chrF and flags, `stages.nugget.reconstruction.decoded_samples`; also the MLflow table ``tables/examples.json``).
MLflow metrics: ``bleu.<system>`` with ``_n`` (documents) and ``_low`` / ``_high``; ``bleu_floor.<objective>``
with ``_n``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pyarrow.parquet as pq

from stages.common.degenerate import LABEL, generation_flags
from stages.common.floors import Floor
from stages.evaluation.metrics import bleu_tokenizer
from stages.evaluation.publish import log_flags
from stages.evaluation.samples import log_samples
from stages.evaluation.task_floors import reconstruction_floor
from stages.framework.contract import optional, section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import MtDocuments
from stages.nugget.artifacts.models import NuggetSweep, TrainedBaselines, TrainedNugget
from stages.nugget.artifacts.results import ReconstructionResults, interval_fields
from stages.nugget.encoders import load_system
from stages.nugget.measured import floor_metrics, sample_metrics
from stages.nugget.plots import bleu_vs_ratio
from stages.nugget.reconstruction import decoded_samples, reconstruct
from stages.nugget.similarity import metric_name
from stages.nugget.systems import (
    System,
    collect_systems,
    ignoring_input,
    to_record,
    training_summaries,
)


def reconstruction_systems(systems: list[System]) -> list[System]:
    """Learned-selector Nugget models and single-vector baselines (not the ablations)."""
    return [s for s in systems if s.kind == "bottleneck" or (s.selector == "topk" and s.baseline is None)]


@dataclass(frozen=True)
class ReconstructionConfig:
    beam_size: int = section("eval.beam_size")
    extra_tokens: int = section("eval.reconstruction_extra_tokens")
    max_examples: int = section("eval.max_examples")
    batch_size: int = section("eval.batch_size")
    dtype: str = section("eval.dtype")
    split: str = section("eval.nugget_split")


@dataclass(frozen=True)
class ReconstructionInputs:
    docs: MtDocuments
    nugget: TrainedNugget
    baselines: TrainedBaselines
    sweep: NuggetSweep | None = optional()


class EvalReconstruction(Stage[ReconstructionConfig, ReconstructionInputs, ReconstructionResults]):
    name = "eval_reconstruction"
    uses_device = True

    def compute(self, ctx: StageContext, config: ReconstructionConfig, inputs: ReconstructionInputs) -> None:
        split = config.split
        table = pq.read_table(inputs.docs.split(split), columns=["doc_id", "source", "target"]).to_pydict()
        cap = config.max_examples
        docs = {k: (v[:cap] if cap else v) for k, v in table.items()}
        if not docs["source"]:
            raise ValueError(f"build_mt_docs split {split!r} (eval.nugget_split) is empty: nothing to reconstruct")
        systems = reconstruction_systems(collect_systems(inputs))
        ignoring = ignoring_input(systems, training_summaries(inputs))
        ids = docs["doc_id"]  # build_mt_docs' id of each document: its unit, the same in every system's sample
        references = {"ae": docs["source"], "mt": docs["target"]}
        rows, samples = [], []
        metrics: dict[str, float] = {}
        flags: dict[str, str] = {}  # system -> why it is uninformative
        floors: dict[str, Floor] = {}  # per objective: what a system that does not reconstruct reaches on its references
        for objective in sorted({s.objective for s in systems}):
            refs = references[objective]
            floors[objective] = reconstruction_floor(refs, bleu_tokenizer(refs))
            metrics |= floor_metrics(metric_name("bleu_floor", objective), floors[objective], len(refs))
        for n, system in enumerate(systems, 1):
            tick = time.time()
            loaded = load_system(system, device=ctx.device, precision=config.dtype)
            refs = references[system.objective]
            hyps, units, tokenize = reconstruct(loaded, docs["source"], refs, ids, config.batch_size,
                                                config.beam_size, config.extra_tokens)
            bleu, bounds = units.value(), units.interval()
            ends = interval_fields("bleu", bounds)
            flag = generation_flags(hyps) or ""
            rows.append({**to_record(system), "bleu": bleu, **ends, "n_docs": units.n, "bleu_tokenize": tokenize,
                         "label": system.describe(), "units": {"bleu": units.to_json()},
                         "ignores_input": ignoring[system.name], LABEL: flag})
            flags |= {system.name: flag} if flag else {}
            samples += decoded_samples(system, docs["source"], refs, hyps, tokenize)
            metrics |= sample_metrics(metric_name("bleu", system.name), units, bounds)  # corpus BLEU over n documents
            interval = f" [{bounds[0]:.2f}, {bounds[1]:.2f}]" if bounds else ""
            print(f"[eval_reconstruction] {n}/{len(systems)} {system.name}: BLEU {bleu:.2f}{interval} "
                  f"({units.n} docs, floor {floors[system.objective].value:.2f}, beam {config.beam_size}, "
                  f"{time.time() - tick:.1f}s)", flush=True)
        written = ReconstructionResults(rows, split, config.beam_size, floors=floors).write(ctx.output_dir)
        log_samples(ctx, ctx.output_dir / ReconstructionResults.EXAMPLES, samples)
        for path in written[1:]:
            ctx.log_artifact(path)
        figure = ctx.output_dir / ReconstructionResults.FIGURES[0]
        bleu_vs_ratio(rows, figure)
        captions = ReconstructionResults.write_captions(ctx.output_dir, {figure.name: (
            f"n = {len(docs['source'])} {split} documents per system, {len(systems)} systems, "
            f"beam {config.beam_size}.")})
        for path in (figure, captions):
            ctx.log_artifact(path)
        ctx.log_metrics(metrics)
        log_flags(ctx, flags)
