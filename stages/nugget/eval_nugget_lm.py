"""Stage ``eval_nugget_lm``: Nugget table 3, word-level perplexity of the Nugget LMs and
their baselines with ``h`` history segments (§6.2).

Every article of ``eval.nugget_lm.split`` (at most ``max_docs``, the first
``max_doc_tokens`` tokens of each) is read in windows of the system's
``segment_tokens`` starting every ``stride`` tokens (`nugget_core.nugget.windows`): each
token is scored once, with at least ``segment_tokens - stride`` preceding tokens in the
window past the first, and the ``h`` segments before its window in the memory; stride 1
(the paper profile) gives every token as many preceding tokens as a window holds
(appendix B.2: "as many preceding tokens as possible ..., up to 128 tokens"). Every
system with a memory is scored at each ``h`` of ``eval.nugget_lm.histories``, the
transformer at h = 0.

Word-level perplexity as the paper computes it: a word's probability is the product of
its subwords' (footnote 6), so ``ppl = exp(sum of token NLL / words)``; the tokens of
out-of-vocabulary words (WikiText-103's ``<unk>``, the tokenizer's unknown token) are
excluded from both sums ("we exclude all out-of-vocabulary tokens"). Subword perplexity
over the same tokens is reported beside it.

A system whose word perplexity at some h is above a unigram model's (add-one smoothed token
frequencies of the train split, on the same tokens: ``unigram_ppl``) models the text worse
than ignoring it and is flagged uninformative (`stages.common.degenerate`).

The article is the independent unit: every window of an article is summed into its article's
counts (`score`), each perplexity keeps per article its [NLL, words] / [NLL, subwords] (the row's
``units``, unit ids ``<split>/<article>``, the same for every system) and, from `MIN_UNITS` articles, its
95% bootstrap interval over the articles (`stages.common.resampling`).

Competence floor: an interpolated Kneser-Ney trigram model (`stages.common.ngram`) fitted on
build_nugget_lm's train split, on exactly the tokens the systems are scored on (OOV words'
tokens excluded, its word NLL summed per word as theirs), shown as the table's row
`FLOOR_ROW` (the same number at every h: it reads no memory) and as the table's ``floors`` of
every perplexity column: an LM not below it does not model the language. A system's
``ignores_input`` is its model's input-use check from train_nugget_lm's training summary
(`stages.artifacts.trainer_state.InputUse`: every history gives the same dev loss).

Outputs: the `stages.artifacts.evaluate.EvalTable` (one row per system; ``ppl_h<h>``,
``subword_ppl_h<h>`` with their ``interval`` and ``units``, ``n_ppl_h<h>`` = words scored, ``unigram_ppl``;
the row's n = words; MLflow: `publish`'s metrics and the floors ``floor.ppl`` / ``floor.subword_ppl``
with ``_n`` = articles) and
``examples.jsonl`` (per article, system and h: the text scored, its word / subword perplexity,
loss and counts; `article_samples`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import torch

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.degenerate import UnigramModel, above_unigram, combine
from stages.common.device import to_device
from stages.common.floors import Floor
from stages.common.ngram import KneserNeyTrigram
from stages.common.records import batches
from stages.common.resampling import MIN_UNITS, UnitSample
from stages.evaluation.decoding import decode_ids
from stages.evaluation.perplexity import PerplexityCounts, perplexity_units
from stages.evaluation.publish import publish
from stages.evaluation.samples import Sample
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import NuggetLMCorpus, TokenDocuments
from stages.nugget.artifacts.models import TrainedNuggetLM
from stages.nugget.measured import floor_metrics

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    import numpy as np

    from nugget_core.nugget import NuggetLM, SpecialTokens
    from stages.nugget.config import NuggetLMEval


def window_counts(nll: torch.Tensor, starts: np.ndarray, oov: np.ndarray) -> PerplexityCounts:
    """The sums of one window's scored tokens: ``nll [k]`` (float), ``starts`` / ``oov``
    (``[k]`` bool arrays: the tokens' word-start and out-of-vocabulary flags). Word and
    subword NLL are the same sum (over the in-vocabulary tokens), divided by words or
    by tokens."""
    keep = torch.as_tensor(~oov, device=nll.device)
    starts_t = torch.as_tensor(starts, device=nll.device)
    total = float(nll[keep].sum())
    return PerplexityCounts(subword_nll=total, subwords=int(keep.sum()), word_nll=total,
                            words=int((starts_t & keep).sum()), oov_words=int((starts_t & ~keep).sum()))


@torch.no_grad()
def score(lm: NuggetLM, docs: TokenDocuments, lengths: list[int], segment: int, stride: int, history: int,
          batch_size: int, wrap: SpecialTokens, start_id: int, pad_id: int) -> list[PerplexityCounts]:
    """Per article, the perplexity sums of ``lm`` reading it with ``history`` segments of memory."""
    from nugget_core.nugget import collate_windows, windows

    rows = [w for i, n in enumerate(lengths) for w in windows(i, n, segment, stride)]
    tallies = [PerplexityCounts() for _ in lengths]
    for chunk in batches(rows, batch_size):
        batch = to_device(collate_windows(docs, chunk, segment, history, decoder_start_id=start_id, pad_id=pad_id,
                                          wrap_segment=wrap), lm.device)
        labels = batch.pop("labels")  # no HF loss: the NLL is taken per token below
        logits = lm(**batch).logits
        # one row at a time in fp32: [B, T, V] at once would be 4 GB for mBART's 250k types
        nll = torch.stack([torch.nn.functional.cross_entropy(logits[i].float(), labels[i].clamp(min=0),
                                                             reduction="none") for i in range(len(chunk))])
        nll = nll.masked_fill(labels.eq(-100), 0.0).cpu()
        for i, w in enumerate(chunk):
            skip, k = w.score_from - w.start, w.end - w.score_from
            tallies[w.doc].add(window_counts(nll[i, skip : skip + k], docs.word_start(w.doc)[w.score_from : w.end],
                                            docs.oov(w.doc)[w.score_from : w.end]))
    return tallies


FLOOR_ROW = "Kneser-Ney trigram (floor)"  # table 3's row of the language-modelling floor


def reference_counts(token_nll: Callable[[Any], np.ndarray], docs: TokenDocuments, lengths: list[int]
                     ) -> list[PerplexityCounts]:
    """Per article, the perplexity sums of a count-based reference model (``token_nll``: an article's
    ids -> the NLL of each token given the article's tokens before it) on exactly the tokens `score`
    scores: every token of each article's first ``lengths``, OOV words' tokens read as context but
    excluded from the sums, word NLL summed per word as `window_counts` does."""
    out = []
    for i, n in enumerate(lengths):
        keep, starts = ~docs.oov(i)[:n], docs.word_start(i)[:n]
        nll = float(token_nll(docs[i][:n])[keep].sum())
        out.append(PerplexityCounts(subword_nll=nll, subwords=int(keep.sum()), word_nll=nll,
                                    words=int((starts & keep).sum()), oov_words=int((starts & ~keep).sum())))
    return out


def perplexity_columns(h: int, per_doc: Sequence[PerplexityCounts], ids: Sequence[str]
                       ) -> tuple[dict[str, float | None], dict[str, tuple[float, float]], dict[str, UnitSample]]:
    """A row's cells at history ``h``: the metrics ``ppl_h<h>``, ``subword_ppl_h<h>``, ``n_ppl_h<h>``
    (words), ``oov_words_h<h>``, the perplexities' 95% intervals over the articles (from `MIN_UNITS`) and samples."""
    total = PerplexityCounts.total(per_doc)
    units = {f"ppl_h{h}" if k == "word_ppl" else f"subword_ppl_h{h}": u
             for k, u in perplexity_units(per_doc, ids, "article").items()}
    intervals = {k: bounds for k, u in units.items() if (bounds := u.interval()) is not None}
    metrics: dict[str, float | None] = {f"ppl_h{h}": total.word_ppl, f"subword_ppl_h{h}": total.subword_ppl,
                                        f"n_ppl_h{h}": total.words, f"oov_words_h{h}": total.oov_words}
    return metrics, intervals, units


def fit_trigram(corpus: NuggetLMCorpus, vocab: int) -> tuple[KneserNeyTrigram, int]:
    """The Kneser-Ney trigram model of build_nugget_lm's train split (each article on its own) over
    ``vocab`` ids, and the train tokens it was fitted on."""
    tokens = 0

    def counted() -> Iterator[Sequence[int]]:
        nonlocal tokens
        for article in corpus.articles("train"):
            tokens += len(article)
            yield cast("Sequence[int]", article)  # an int64 array: what `fit` reads of a sequence

    model = KneserNeyTrigram.fit(counted(), vocab)
    return model, tokens


def floor_row(model: KneserNeyTrigram, docs: TokenDocuments, lengths: list[int], ids: Sequence[str],
              histories: Sequence[int], trained_on: int) -> tuple[TableRow, dict[str, Floor]]:
    """The Kneser-Ney trigram ``model`` (fitted on ``trained_on`` train tokens) as table 3's `FLOOR_ROW`,
    its perplexities in every column of ``histories`` (it reads no memory), and the floors of those columns."""
    per_doc = reference_counts(model.token_nll, docs, lengths)
    metrics: dict[str, float | None] = {}
    intervals: dict[str, tuple[float, float]] = {}
    units: dict[str, UnitSample] = {}
    for h in histories:
        m, i, u = perplexity_columns(h, per_doc, ids)
        metrics, intervals, units = metrics | m, intervals | i, units | u
    what = (f"interpolated Kneser-Ney trigram fitted on build_nugget_lm's train split ({trained_on:,} tokens), "
            "on the same tokens")
    floors = {k: Floor(float(v), False, what) for k, v in metrics.items() if k.startswith(("ppl_h", "subword_ppl_h"))
              and v is not None}
    total = PerplexityCounts.total(per_doc)
    return TableRow(system=FLOOR_ROW, metrics=metrics, n=total.words, interval=intervals, units=units,
                    note=f"the floor: {what}"), floors


def article_samples(system: str, settings: dict[str, Any], texts: list[str], per_doc: list[PerplexityCounts]
                    ) -> list[dict[str, Any]]:
    """One sample row (`stages.evaluation.samples`) per article as one system scored it: the
    target is the article's text as scored (its first ``max_doc_tokens`` tokens, decoded; the
    model reads it teacher-forced, so it is the input too), no output; metrics: words and
    subwords scored, OOV words left out, word / subword perplexity and the mean subword NLL
    (``loss``); settings: ``h`` and the system's window."""
    return [Sample(i, system, {"article": i}, text, None,
                   {"words": t.words, "tokens": t.subwords, "oov_words": t.oov_words, "word_ppl": t.word_ppl,
                    "subword_ppl": t.subword_ppl, "loss": t.subword_nll / max(t.subwords, 1)}, settings).row()
            for i, (text, t) in enumerate(zip(texts, per_doc, strict=True))]


@dataclass(frozen=True)
class NuggetLMConfig:
    nugget_lm: NuggetLMEval = section("eval.nugget_lm")
    dtype: str = section("eval.dtype")


@dataclass(frozen=True)
class NuggetLMInputs:
    corpus: NuggetLMCorpus
    trained: TrainedNuggetLM


class EvalNuggetLM(Stage[NuggetLMConfig, NuggetLMInputs, EvalTable]):
    name = "eval_nugget_lm"
    uses_device = True

    def compute(self, ctx: StageContext, config: NuggetLMConfig, inputs: NuggetLMInputs) -> None:
        from nugget_core.nugget import SpecialTokens

        cfg = config.nugget_lm
        corpus, trained = inputs.corpus, inputs.trained
        docs = corpus.documents(cfg.split, cfg.max_docs)
        lengths = [min(n, cfg.max_doc_tokens) if cfg.max_doc_tokens else n for n in docs.lengths()]
        ids = [f"{cfg.split}/{i}" for i in range(len(lengths))]  # the article's row in the split: the unit
        ignoring = {s.model: s.input_use.reason() for s in trained.training() if s.input_use is not None}
        rows, examples = [], []
        unigram: dict[int, PerplexityCounts] = {}  # per vocabulary size: the unigram model's sums
        for k, record in enumerate(trained.systems, 1):
            segment = record["segment_tokens"]
            if segment % cfg.stride:
                raise ValueError(f"eval.nugget_lm.stride={cfg.stride} must divide {record['system']}'s "
                                 f"segment_tokens={segment}")
            lm = trained.load(record, ctx.device, config.dtype)
            wrap = SpecialTokens.of(trained.tokenizer(record))
            start_id, pad_id = trained.decoder_token_ids(record)
            metrics: dict[str, float | None] = {}
            interval: dict[str, tuple[float, float]] = {}
            units: dict[str, UnitSample] = {}
            total = PerplexityCounts()
            tokenizer = trained.tokenizer(record)
            texts = [decode_ids(tokenizer, [int(t) for t in docs[i][:n]]) for i, n in enumerate(lengths)]
            for h in [0] if record["memory"] == "none" else cfg.histories:
                tick = time.time()
                per_doc = score(lm, docs, lengths, segment, cfg.stride, h, cfg.batch_size,
                                wrap, start_id, pad_id)
                total = PerplexityCounts.total(per_doc)
                m, i, u = perplexity_columns(h, per_doc, ids)  # intervals: bootstrap over the articles
                metrics, interval, units = metrics | m, interval | i, units | u
                examples += article_samples(record["system"], {"h": h, "segment_tokens": segment, "stride": cfg.stride,
                                                               "memory": record["memory"]}, texts, per_doc)
                print(f"[eval_nugget_lm] {k}/{len(trained.systems)} {record['system']} h={h}: word PPL "
                      f"{total.word_ppl:.2f}, subword PPL {total.subword_ppl:.2f} ({total.words} words, "
                      f"{len(lengths)} articles, {time.time() - tick:.1f}s)", flush=True)
            vocab = len(tokenizer)
            if vocab not in unigram:  # the train split's token frequencies: the context-free reference
                model = UnigramModel.fit(corpus.token_ids("train"), vocab)
                unigram[vocab] = PerplexityCounts.total(reference_counts(model.token_nll, docs, lengths))
            reference = unigram[vocab].word_ppl
            metrics["unigram_ppl"] = reference
            flag = combine(*(above_unigram(metrics[f"ppl_h{h}"], reference, f"word PPL at h={h}")
                             for h in ([0] if record["memory"] == "none" else cfg.histories)))
            rows.append(TableRow(system=record["system"], metrics=metrics, n=total.words,
                                 paper_row=record["paper_row"], flag=flag or "", interval=interval, units=units,
                                 ignores_input=ignoring.get(f"{TrainedNuggetLM.STAGE}/{record['system']}", "")))
        # one id space for every system (they share build_nugget_lm's tokenizer; a larger vocabulary only adds
        # special tokens the corpus never holds): the largest, so every id the corpus holds is in it
        vocab = max(len(trained.tokenizer(r)) for r in trained.systems)
        trigram, trained_on = fit_trigram(corpus, vocab)
        floor, floors = floor_row(trigram, docs, lengths, ids, sorted({0, *cfg.histories}), trained_on)
        rows.append(floor)
        ctx.log_metrics(floor_metrics("floor.ppl", floors["ppl_h0"], len(lengths))
                        | floor_metrics("floor.subword_ppl", floors["subword_ppl_h0"], len(lengths)))
        histories = sorted({0, *cfg.histories})
        table = EvalTable(
            title="Nugget table 3: LM perplexity with h history segments (word level, OOV excluded)",
            columns=[Column(f"ppl_h{h}", f"PPL h={h}") for h in histories]
            + [Column(f"subword_ppl_h{h}", f"subword PPL h={h}") for h in histories]
            + [Column("unigram_ppl", "unigram word PPL")],
            rows=rows, stand_in=corpus.stand_in, floors=floors,
            notes=[f"{len(lengths)} {cfg.split} articles of build_nugget_lm ({sum(lengths)} tokens), windows of the "
                   f"systems' segment length scored every {cfg.stride} tokens",
                   "word PPL: exp(token NLL summed over words / words), out-of-vocabulary words' tokens excluded; "
                   f"[low, high]: its 95% bootstrap interval over the articles (from {MIN_UNITS} articles)",
                   f"{FLOOR_ROW}: the floor every perplexity column is judged against, on the same tokens",
                   "unigram word PPL: add-one smoothed token frequencies of build_nugget_lm's train split on the "
                   "same tokens; a system above it at some h is flagged uninformative"],
        )
        publish(ctx, table, examples)
