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

Each perplexity has its 95% bootstrap interval over the articles (`stages.evaluation.perplexity`).

Outputs: the `stages.artifacts.evaluate.EvalTable` (one row per system; ``ppl_h<h>``,
``subword_ppl_h<h>`` with their ``interval``, ``n_ppl_h<h>`` = words scored, ``unigram_ppl``; the row's
n = words) and
``examples.jsonl`` (per article, system and h: the text scored, its word / subword perplexity,
loss and counts; `article_samples`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.degenerate import UnigramModel, above_unigram, combine
from stages.common.device import to_device
from stages.common.records import batches
from stages.evaluation.decoding import decode_ids
from stages.evaluation.perplexity import PerplexityCounts, perplexity_intervals
from stages.evaluation.publish import publish
from stages.evaluation.samples import Sample
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import NuggetLMCorpus, TokenDocuments
from stages.nugget.artifacts.models import TrainedNuggetLM

if TYPE_CHECKING:
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


def unigram_counts(model: UnigramModel, docs: TokenDocuments, lengths: list[int]) -> PerplexityCounts:
    """The perplexity sums of the unigram ``model`` on exactly the tokens `score` scores
    (every token of each article's first ``lengths``, OOV words' tokens excluded)."""
    total = PerplexityCounts()
    for i, n in enumerate(lengths):
        keep = ~docs.oov(i)[:n]
        nll = model.nll(docs[i][:n][keep])
        total.add(PerplexityCounts(subword_nll=nll, subwords=int(keep.sum()), word_nll=nll,
                                   words=int((docs.word_start(i)[:n] & keep).sum())))
    return total


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
            total = PerplexityCounts()
            tokenizer = trained.tokenizer(record)
            texts = [decode_ids(tokenizer, [int(t) for t in docs[i][:n]]) for i, n in enumerate(lengths)]
            for h in [0] if record["memory"] == "none" else cfg.histories:
                tick = time.time()
                per_doc = score(lm, docs, lengths, segment, cfg.stride, h, cfg.batch_size,
                                wrap, start_id, pad_id)
                total = PerplexityCounts.total(per_doc)
                # their 95% intervals: bootstrap over the articles (`perplexity_intervals`)
                column = {"word_ppl": f"ppl_h{h}", "subword_ppl": f"subword_ppl_h{h}"}
                interval |= {column[k]: v for k, v in perplexity_intervals(per_doc).items()}
                metrics.update({f"ppl_h{h}": total.word_ppl, f"subword_ppl_h{h}": total.subword_ppl,
                                f"n_ppl_h{h}": total.words, f"oov_words_h{h}": total.oov_words})
                examples += article_samples(record["system"], {"h": h, "segment_tokens": segment, "stride": cfg.stride,
                                                               "memory": record["memory"]}, texts, per_doc)
                print(f"[eval_nugget_lm] {k}/{len(trained.systems)} {record['system']} h={h}: word PPL "
                      f"{total.word_ppl:.2f}, subword PPL {total.subword_ppl:.2f} ({total.words} words, "
                      f"{len(lengths)} articles, {time.time() - tick:.1f}s)", flush=True)
            vocab = len(trained.tokenizer(record))
            if vocab not in unigram:  # the train split's token frequencies: the context-free reference
                unigram[vocab] = unigram_counts(UnigramModel.fit(corpus.token_ids("train"), vocab), docs, lengths)
            reference = unigram[vocab].word_ppl
            metrics["unigram_ppl"] = reference
            flag = combine(*(above_unigram(metrics[f"ppl_h{h}"], reference, f"word PPL at h={h}")
                             for h in ([0] if record["memory"] == "none" else cfg.histories)))
            rows.append(TableRow(system=record["system"], metrics=metrics, n=total.words,
                                 paper_row=record["paper_row"], flag=flag or "", interval=interval))
        histories = sorted({0, *cfg.histories})
        table = EvalTable(
            title="Nugget table 3: LM perplexity with h history segments (word level, OOV excluded)",
            columns=[Column(f"ppl_h{h}", f"PPL h={h}") for h in histories]
            + [Column(f"subword_ppl_h{h}", f"subword PPL h={h}") for h in histories]
            + [Column("unigram_ppl", "unigram word PPL")],
            rows=rows, stand_in=corpus.stand_in,
            notes=[f"{len(lengths)} {cfg.split} articles of build_nugget_lm ({sum(lengths)} tokens), windows of the "
                   f"systems' segment length scored every {cfg.stride} tokens",
                   "word PPL: exp(token NLL summed over words / words), out-of-vocabulary words' tokens excluded; "
                   "[low, high]: its 95% bootstrap interval over the articles",
                   "unigram word PPL: add-one smoothed token frequencies of build_nugget_lm's train split on the "
                   "same tokens; a system above it at some h is flagged uninformative"],
        )
        publish(ctx, table, examples)
