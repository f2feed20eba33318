"""Stage ``analyze_nuggets``: what Nugget selects and encodes (Nugget §5.2-5.3).

Models: the AE Nugget model with the ratio closest to 0.1 (the paper's setting) among
the sweep's and ``train_nugget``'s learned-selector models, and likewise an MT model for
the token statistics when one exists. Data: the ``eval.nugget_split`` split of ``build_mt_docs`` (dev, as the paper). For
appendix D (nugget tokens in other languages), ``train_baselines``' Nugget models that
encode the corpus's other language (``nugget_ae_tgtlang``, ``nugget_mt_tgtlang``) get the
same token statistics on that side of the split. Every token is counted as the word it
spells (`readable_token`), so a token and its word-initial variant ('the', 'Ġthe') are one
word and no figure or table shows a BPE marker.

Output: `stages.nugget.artifacts.results.NuggetAnalysis`:
- ``token_frequency.png`` / ``token_frequency.json`` (fig. 5): the 6 most frequent nugget
  tokens, their share among nuggets (AE, MT) vs in text, and the punctuation share; per
  model ``uninformative``: why its selection ignores the document (the same nugget positions
  in most documents, `selection_flag`), "" when it does not; ``ignores_input``: its model's
  input-use check (`stages.nugget.systems.ignoring_input`); every share with its per-document
  counts (``units``, unit ids the documents' ``doc_id``: the nugget tokens of one document are not
  independent, the documents are) and, from `MIN_UNITS` documents, its 95% bootstrap interval over the
  documents (``intervals``; MLflow ``<share>.<objective>`` with ``_n`` documents and ``_low`` /
  ``_high``);
- ``nuggets.html`` (fig. 6): sample documents, text shaded by score, nuggets in green;
- ``probability_gain.png`` (fig. 7: gain vs token index for the paper's 3rd, 6th and 9th
  nuggets), ``nugget_positions.png`` (fig. 7's other curve: where in the document those
  nuggets sit, share of documents per token index), ``probability_gain_relative.png``
  (fig. 8: gain vs index relative to the nugget, for documents of 64, 128 and 256
  tokens, cut from consecutive dev documents; a length above the model's positions is
  skipped and the JSON says so), ``probability_gain.json``;
- ``figures.json``: each figure's caption with this run's n (`figure_details`);
- ``examples.jsonl`` (and the MLflow table ``tables/examples.json``): per model and counted
  document, the document, its nugget tokens, their positions and counts (`selection_samples`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cache, partial
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import torch

from stages.common.degenerate import LABEL
from stages.common.languages import check_writes_its_input
from stages.common.tokens import token_text
from stages.evaluation.analysis import TokenStats, is_punctuation, probability_gain
from stages.evaluation.publish import log_flags
from stages.evaluation.samples import Sample, log_samples
from stages.evaluation.token_frequency import (
    TOP_TOKENS,
    add_selections,
    frequency_summary,
    readable_token,
    selection_flag,
)
from stages.framework.contract import optional, section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import MtDocuments
from stages.nugget.artifacts.models import NuggetSweep, TrainedBaselines, TrainedNugget
from stages.nugget.artifacts.results import NuggetAnalysis
from stages.nugget.encoders import LoadedSystem, batches, load_system
from stages.nugget.highlight import highlight_document, highlight_page
from stages.nugget.measured import sample_metrics
from stages.nugget.plots import probability_gain as plot_gain
from stages.nugget.plots import token_frequencies
from stages.nugget.systems import System, collect_systems, ignoring_input, training_summaries

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

RELATIVE_SPAN = 16  # fig. 8: token indices -16..16 around the nugget
FIG7_NUGGETS = (3, 6, 9)  # paper fig. 7: the 3rd, 6th and 9th nuggets (1-based, in text order)
FIG8_LENGTHS = (64, 128, 256)  # paper fig. 8 (and §5.3's 128): documents force-decoded at these lengths


def mean_curve(by_index: dict[int, list[float]]) -> tuple[list[int], list[float]]:
    """(sorted indices, mean value at each) of per-index samples."""
    xs = sorted(by_index)
    return xs, [sum(by_index[i]) / len(by_index[i]) for i in xs]


def share_curve(positions: list[int], documents: int) -> tuple[list[int], list[float]]:
    """(sorted positions, share of ``documents`` with a nugget there)."""
    counts = Counter(positions)
    xs = sorted(counts)
    return xs, [counts[i] / documents for i in xs]


def fixed_length_documents(tokenizer: PreTrainedTokenizerBase, texts: list[str], length: int, limit: int) -> list[torch.Tensor]:
    """Up to ``limit`` documents of exactly ``length`` tokens (``[1, length]`` ids), each
    cut from consecutive ``texts`` joined until they hold that many tokens."""
    docs, pending = [], []
    for text in texts:
        pending.append(text)
        ids = tokenizer([" ".join(pending)], return_tensors="pt", truncation=True, max_length=length)["input_ids"]
        if ids.shape[1] == length:
            docs.append(ids)
            pending = []
            if len(docs) == limit:
                break
    return docs


def figure_details(frequency: dict[str, dict[str, Any]], gain: dict[str, Any], counted_docs: int,
                   highlighted_docs: int, highlight_model: str) -> dict[str, str]:
    """What this run adds to each figure's caption (`NuggetAnalysis.FIGURE_CAPTIONS`): its
    n (documents, and nuggets / tokens counted) and the models behind it."""
    counted = "; ".join(f"{s['label']}: {s['n_nuggets']} nuggets of {s['n_tokens']} tokens"
                        for s in frequency.values() if s.get("encoder_side", "source") == "source")
    with_nugget = ", ".join(f"nugget {j}: {n}" for j, n in gain["documents_with_nugget"].items()) or "none"
    lengths = "; ".join(f"{length} tokens: n={c['documents']} documents" for length, c in gain["relative"].items())
    skipped = "; ".join(f"{length} tokens left out: {why}" for length, why in gain["relative_skipped"].items())
    probed = f"n = {gain['documents']} documents of model {gain['system']} (documents with each nugget: {with_nugget})."
    return {
        "token_frequency.png": f"n = {counted_docs} documents ({counted}).",
        "probability_gain.png": probed,
        "nugget_positions.png": probed,
        "probability_gain_relative.png": "; ".join(p for p in (lengths, skipped) if p) + ".",
        "nuggets.html": f"n = {highlighted_docs} documents of model {highlight_model}.",
    }


def selection_samples(system: System, texts: list[str], documents: list[tuple[list[str], tuple[int, ...]]]
                      ) -> list[dict[str, Any]]:
    """One sample row (`stages.evaluation.samples`) per document a model encoded: the
    ``document``, its nugget tokens (as words, `readable_token`) in text order as the output (a
    selection, not a generation), their ``nugget_positions``, the counts and the punctuation
    share of the nuggets; settings: the model's objective, ratio, scorer layer and side."""
    settings = {"objective": system.objective, "ratio": system.ratio, "scorer_layer": system.scorer_layer,
                "encoder_side": system.encoder_side}
    rows = []
    for i, (text, (tokens, positions)) in enumerate(zip(texts, documents, strict=True)):
        chosen = [tokens[j] for j in positions]
        rows.append(Sample(i, system.name, {"document": text}, None, chosen,
                           {"tokens": len(tokens), "nuggets": len(chosen), "nugget_positions": list(positions),
                            "punctuation_share": 100.0 * sum(map(is_punctuation, chosen)) / max(len(chosen), 1)},
                           settings, generated=False).row())
    return rows


def pick(systems: list[System], objective: str, layer: int) -> System | None:
    """The learned-selector model of ``objective`` fig. 5 describes: r = 0.1 (or the nearest), at the
    default scorer layer ``layer`` (``nugget.scorer_layer``; the paper's l = 3) where one is trained, so
    the sweep's l = 0 ablation never stands for it."""
    learned = [s for s in systems if s.kind == "nugget" and s.selector == "topk" and s.feedback
               and s.baseline is None and s.objective == objective]
    return min(learned, key=lambda s: (abs((s.ratio or 0) - 0.1), s.scorer_layer != layer, s.scorer_layer or 0,
                                       s.name), default=None)


@dataclass(frozen=True)
class AnalysisConfig:
    analysis_docs: int = section("eval.analysis_docs")
    highlight_docs: int = section("eval.highlight_docs")
    probe_docs: int = section("eval.probe_docs")
    batch_size: int = section("eval.batch_size")
    dtype: str = section("eval.dtype")
    scorer_layer: int = section("nugget.scorer_layer")
    split: str = section("eval.nugget_split")


@dataclass(frozen=True)
class AnalysisInputs:
    docs: MtDocuments
    nugget: TrainedNugget
    sweep: NuggetSweep | None = optional()
    baselines: TrainedBaselines | None = optional()


class AnalyzeNuggets(Stage[AnalysisConfig, AnalysisInputs, NuggetAnalysis]):
    name = "analyze_nuggets"
    uses_device = True

    def compute(self, ctx: StageContext, config: AnalysisConfig, inputs: AnalysisInputs) -> None:
        split = inputs.docs.split(config.split)
        sides = pq.read_table(split, columns=["doc_id", "source", "target"]).to_pydict()
        texts, n_docs = sides["source"], config.analysis_docs
        systems = collect_systems(inputs)
        layer = config.scorer_layer
        ae, mt = pick(systems, "ae", layer), pick(systems, "mt", layer)
        if ae is None:
            raise ValueError("analyze_nuggets needs an AE Nugget model (sweep_nugget or train_nugget with objective ae)")
        samples: list[dict[str, Any]] = []  # per model and document: its selection
        stats = {s.name: self._token_stats(ctx, config, s, texts[:n_docs], samples) for s in (ae, mt) if s}
        # appendix D: train_baselines' models encoding the corpus's other language, on that side
        other = [s for s in collect_systems(inputs, encoder_side="target") if s.kind == "nugget"]
        stats |= {s.name: self._token_stats(ctx, config, s, sides["target"][:n_docs], samples) for s in other}
        log_samples(ctx, ctx.output_dir / NuggetAnalysis.SAMPLES, samples)
        analysed = [s for s in (ae, mt, *other) if s]
        ids = sides["doc_id"][: len(texts[:n_docs])]  # build_mt_docs' id of each counted document: its unit
        frequency = self._frequency_outputs(ctx, stats, {s.name: s for s in analysed}, ids,
                                            ignoring_input(analysed, training_summaries(inputs)))
        highlighted = texts[: config.highlight_docs]
        self._highlight(ctx, config, ae, highlighted)
        gain = self._probe(ctx, config, ae, texts, config.probe_docs)
        NuggetAnalysis(frequency, gain).write(ctx.output_dir)
        details = figure_details(frequency, gain, len(texts[:n_docs]), len(highlighted), ae.describe())
        ctx.log_artifact(NuggetAnalysis.write_captions(ctx.output_dir, details))

    def _token_stats(self, ctx: StageContext, config: AnalysisConfig, system: System, texts: list[str],
                     samples: list[dict[str, Any]]) -> TokenStats:
        """Nugget vs text token counts, each token counted as the word it spells
        (`readable_token`: a token and its word-initial variant are one word, and a
        byte-level BPE token of a Chinese character is not counted as unreadable bytes);
        each document's selection is added to ``samples`` (`selection_samples`)."""
        loaded, stats = load_system(system, device=ctx.device, precision=config.dtype), TokenStats()
        word = cache(partial(readable_token, loaded.tokenizer))  # decoded once per distinct token
        documents: list[tuple[list[str], tuple[int, ...]]] = []  # per document: its words and nugget positions
        for chunk in batches(texts, config.batch_size):
            nuggets, enc = loaded.encode(chunk)
            documents += add_selections(stats, word, loaded.tokenizer, enc["input_ids"], enc["attention_mask"], nuggets)
        samples += selection_samples(system, texts, documents)
        return stats

    def _frequency_outputs(self, ctx: StageContext, stats: dict[str, TokenStats], systems: dict[str, System],
                           ids: list[str], ignoring: dict[str, str]) -> dict:
        first = next(iter(stats.values()))
        top = [t for t, _ in first.nuggets.most_common(TOP_TOKENS)]
        series = {f"nuggets {systems[n].objective.upper()} r={systems[n].ratio:g}": [s.share(s.nuggets, t) for t in top]
                  for n, s in stats.items() if systems[n].encoder_side == "source"}  # fig. 5: English tokens
        series["text"] = [first.share(first.text, t) for t in top]
        flags = {n: selection_flag(s) for n, s in stats.items()}
        report: dict[str, dict[str, Any]] = {}
        metrics: dict[str, float] = {}
        for n, s in stats.items():
            record, units, bounds = frequency_summary(s, ids, TOP_TOKENS)
            report[n] = {**record, "objective": systems[n].objective, "ratio": systems[n].ratio,
                         "scorer_layer": systems[n].scorer_layer, "label": systems[n].describe(),
                         "encoder_side": systems[n].encoder_side, "ignores_input": ignoring[n], LABEL: flags[n]}
            # the report's shares of 'the' and of punctuation, each with its n (documents) and interval ends
            obj = systems[n].objective + ("" if systems[n].encoder_side == "source" else "_tgtlang")
            for key in NuggetAnalysis.SHARE_KEYS:
                metrics |= sample_metrics(f"{key.replace('punctuation', 'punct')}.{obj}", units[key], bounds[key])
        log_flags(ctx, {n: flag for n, flag in flags.items() if flag})
        token_frequencies(top, series, ctx.output_dir / "token_frequency.png")
        ctx.log_artifact(ctx.output_dir / "token_frequency.png")
        ctx.log_metrics(metrics)
        return report

    def _highlight(self, ctx: StageContext, config: AnalysisConfig, system: System, texts: list[str]) -> None:
        loaded, docs = load_system(system, device=ctx.device, precision=config.dtype), []
        for text in texts:
            enc = loaded.tokenize([text])
            with loaded.model.encoder_pass(enc["attention_mask"]) as p:
                loaded.model.base_model.get_encoder()(**enc)
            tokens = [token_text(t) for t in loaded.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())]
            docs.append(highlight_document(tokens, p.scores[0].tolist(), p.selected[0].tolist()))
        page = ctx.output_dir / "nuggets.html"
        page.write_text(highlight_page(f"Nuggets of {system.describe()}", docs))
        ctx.log_artifact(page)

    def _probe(self, ctx: StageContext, config: AnalysisConfig, system: System, dev: list[str], limit: int) -> dict:
        """Figs. 7-8 on up to ``limit`` documents (fig. 8 cuts its fixed-length documents
        from the whole ``dev`` text list)."""
        loaded, texts = load_system(system, device=ctx.device, precision=config.dtype), dev[:limit]
        # eq. 9 teacher-forces the input ids (their language code included) as the labels
        check_writes_its_input(loaded.tokenizer, f"analyze_nuggets' probe of {system.name}")
        by_nugget: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        positions: dict[int, list[int]] = defaultdict(list)
        for n, text in enumerate(texts, 1):  # fig. 7: the documents as built (up to 128 tokens in the paper)
            gains, where = probability_gain(loaded.model, loaded.tokenize([text])["input_ids"])
            for j, (row, pos) in enumerate(zip(gains.tolist(), where, strict=True)):
                positions[j].append(pos)
                for i, g in enumerate(row):
                    by_nugget[j][i].append(g)
            if n % 8 == 0:
                print(f"[analyze_nuggets] probe {n}/{len(texts)} documents", flush=True)
        relative, skipped = self._relative(loaded, dev, limit)
        mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
        shown = [j for j in FIG7_NUGGETS if j - 1 in by_nugget]
        curves = {f"nugget {j}": mean_curve(by_nugget[j - 1]) for j in shown}
        share = {f"nugget {j}": share_curve(positions[j - 1], len(texts)) for j in shown}
        shown_docs = f"n={len(texts)} documents"
        plot_gain(curves, ctx.output_dir / "probability_gain.png",
                  f"Nugget fig. 7: probability gain from one nugget ({shown_docs})", "token index in the document (tokens)")
        plot_gain(share, ctx.output_dir / "nugget_positions.png",
                  f"Nugget fig. 7: where the nuggets sit ({shown_docs})", "token index in the document (tokens)",
                  ylabel="share of documents (fraction, 0-1)")
        plot_gain({f"{length}-token documents (n={c['documents']})": mean_curve(c["gain"]) for length, c in relative.items()},
                  ctx.output_dir / "probability_gain_relative.png",
                  "Nugget fig. 8: probability gain around the nugget", "token index relative to the nugget (tokens)",
                  mark_zero=True)
        pooled: dict[int, list[float]] = defaultdict(list)
        for curve in relative.values():
            for i, gs in curve["gain"].items():
                pooled[i] += gs
        before = [g for i in pooled if -RELATIVE_SPAN <= i <= 0 for g in pooled[i]]
        after = [g for i in pooled if i > 0 for g in pooled[i]]
        gain_before, gain_after = mean(before) if before else 0.0, mean(after) if after else 0.0
        summary = {"system": system.name, "documents": len(texts),
                   "nuggets_shown": shown, "documents_with_nugget": {str(j): len(positions[j - 1]) for j in shown},
                   "mean_gain_at_or_before_nugget": gain_before,
                   "mean_gain_after_nugget": gain_after,
                   "relative": {str(length): {"documents": c["documents"],
                                              "gain": {str(i): g for i, g in zip(*mean_curve(c["gain"]), strict=True)}}
                                for length, c in relative.items()},
                   "relative_skipped": skipped}
        for name in ("probability_gain.png", "nugget_positions.png", "probability_gain_relative.png"):
            ctx.log_artifact(ctx.output_dir / name)
        ctx.log_metrics({"gain_before_nugget": gain_before,
                         "gain_before_nugget_n": len(before),
                         "gain_after_nugget": gain_after,
                         "gain_after_nugget_n": len(after)})
        return summary

    def _relative(self, loaded: LoadedSystem, texts: list[str], limit: int) -> tuple[dict[int, dict], dict[str, str]]:
        """Fig. 8: gain by index relative to its nugget, per document length (every nugget
        of up to ``limit`` documents of that length)."""
        positions = int(getattr(loaded.model.base_model.config, "max_position_embeddings", 1024))
        curves, skipped = {}, {}
        for length in FIG8_LENGTHS:
            if length > positions:
                skipped[str(length)] = f"longer than the model's {positions} positions"
                continue
            docs = fixed_length_documents(loaded.tokenizer, texts, length, limit)
            if not docs:
                skipped[str(length)] = "the dev documents hold fewer tokens"
                continue
            gain: dict[int, list[float]] = defaultdict(list)
            for ids in docs:
                gains, where = probability_gain(loaded.model, ids.to(loaded.device))
                for row, pos in zip(gains.tolist(), where, strict=True):
                    for i, g in enumerate(row):
                        if abs(i - pos) <= RELATIVE_SPAN:
                            gain[i - pos].append(g)
            curves[length] = {"documents": len(docs), "gain": gain}
        return curves, skipped
