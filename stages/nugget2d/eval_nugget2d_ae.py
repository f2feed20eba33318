"""Stage ``eval_nugget2d_ae``: Nugget2D's autoencoding study (§4): reconstruction BLEU
against document length beside ICAE (fig. 5), and which tokens become nuggets (§4.3).

Reconstruction: for every model of ``train_nugget2d_ae`` (Nugget2D autoencoders per
ratio, ICAE per ratio) and every length ``L`` of ``eval.autoencoding.lengths``, the first
``L`` tokens of each ``split`` continuation window of ``build_lm`` that holds ``L`` (at
most ``max_docs``) are compressed (Nugget2D: ``ceil(r L)`` nuggets; ICAE: its fixed
slots) and decoded greedily after the soft prompt, with theta, until EOS or ``L +
extra_tokens`` tokens. Corpus BLEU (sacrebleu) of the decoded texts against the
documents, per length and over all lengths, and the states kept per layer.

Nugget tokens: the main autoencoder (the first ratio) scores ``analysis_docs`` whole
windows; its selection (`Nugget2DModel.select`) is counted by token text (the text a
token adds, so that ``the`` and its word-start form are one word): the share of nuggets
and of all tokens for punctuation, line breaks and the most frequent nugget tokens.
``nuggets.md`` shows ``highlight_docs`` documents with their nuggets marked (appendix B).

Outputs: the `stages.artifacts.evaluate.EvalTable` (reconstruction rows: ``bleu``,
``bleu_L<L>`` with their 95% bootstrap intervals over documents (``interval``), ``states_L<L>`` with
their documents ``n_bleu_L<L>``, n = all documents;
token rows: ``share_nuggets`` (its n: ``n_share_nuggets``, the nuggets),
``share_text``, n = tokens), ``examples.jsonl`` (per document, length and model: the document,
the decoded text, its sentence BLEU and chrF, the states kept; `reconstruction_samples`) and
``nuggets.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.degenerate import generation_flags
from stages.common.intervals import share_interval
from stages.common.padding import pad
from stages.common.progress import progress_logger
from stages.common.records import batches
from stages.evaluation.analysis import is_punctuation
from stages.evaluation.decoding import decode_ids
from stages.evaluation.metrics import bleu_and_interval, bleu_statistics, sentence_scores
from stages.evaluation.perplexity import token_texts
from stages.evaluation.publish import publish
from stages.evaluation.samples import Sample
from stages.framework.contract import produced_by, section
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import LMRecords, PreparedLM, TrainedNugget2D
from stages.nugget2d.lm.prompted import eos_and_pad

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from nugget_core.nugget2d import ICAEModel, Nugget2DModel
    from stages.nugget2d.config import AutoencodingEval

log = progress_logger("nugget.eval_nugget2d_ae")
TRAIN_STAGE = "train_nugget2d_ae"
HIGHLIGHTS = "nuggets.md"


def length_docs(docs: list[list[int]], lengths: list[int], max_docs: int) -> dict[int, list[list[int]]]:
    """Per length ``L``: the first ``L`` tokens of each document holding ``L`` (at most
    ``max_docs``; 0 = all). A length no document holds is an error naming it."""
    out = {}
    for n in lengths:
        held = [d[:n] for d in docs if len(d) >= n]
        if not held:
            raise ValueError(f"eval.autoencoding.lengths: no document of the split holds {n} tokens "
                             f"(longest: {max(map(len, docs))})")
        out[n] = held[:max_docs] if max_docs else held
    return out


def systems(trained: TrainedNugget2D) -> dict[str, TrainedNugget2D]:
    """Row label -> model: the autoencoders by ratio, then ICAE by ratio."""
    models = [trained, *(trained.variant(name) for name in trained.variants)]
    models.sort(key=lambda m: (m.objective == TrainedNugget2D.ICAE, m.ratio))
    return {f"{'icae' if m.objective == TrainedNugget2D.ICAE else 'nugget2d'} r{m.ratio:g}": m for m in models}


@torch.no_grad()
def reconstruct(model: Nugget2DModel | ICAEModel, docs: list[list[int]], batch_size: int, extra: int,
                eos: int | None, pad_id: int) -> tuple[list[list[int]], list[int]]:
    """Greedy reconstructions of equal-length ``docs`` (EOS cut) and the states each kept."""
    from nugget_core.nugget2d import DECODER, ICAEModel, generate_from_context

    decoder = model.nugget2d if isinstance(model, ICAEModel) else model
    out, kept = [], []
    for chunk in batches(docs, batch_size):
        ids = torch.tensor(chunk, device=decoder.device)
        mask = torch.ones_like(ids)
        context = (model.compress(ids, mask) if isinstance(model, ICAEModel)
                   else model.compress(ids, mask, ratio=model.config.ratio))
        result = generate_from_context(decoder, context, max_new_tokens=ids.shape[1] + extra, eos_token_id=eos,
                                       pad_token_id=pad_id, soft_prompt=True, adapter=DECODER)
        for row, count in zip(result.tokens.tolist(), context.counts.tolist(), strict=True):
            out.append(row[: row.index(eos)] if eos is not None and eos in row else row)
            kept.append(int(count))
    return out, kept


def reconstruction_samples(system: str, length: int, decoded: list[str], references: list[str], kept: list[int]
                           ) -> list[dict[str, Any]]:
    """One sample row (`stages.evaluation.samples`) per document of ``length`` tokens: the
    document (input and target: autoencoding), the decoded text, its sentence BLEU and chrF,
    the states kept; settings: the model's ratio and the length."""
    kind, ratio = system.split(" r")
    return [Sample(f"L{length}-{i}", system, {"document": r}, r, d, {**scores, "states": k},
                   {"model": kind, "ratio": float(ratio), "length": length}).row()
            for i, (d, r, k, scores) in enumerate(zip(decoded, references, kept, sentence_scores(decoded, references),
                                                     strict=True))]


def token_key(text: str) -> str:
    """How a token's text is counted and shown: stripped of the word-start space; a
    whitespace-only token by its escape (``\\n``)."""
    return text.strip() or text.encode("unicode_escape").decode()


@torch.no_grad()
def nugget_tokens(model: Nugget2DModel, tokenizer: PreTrainedTokenizerBase, docs: list[list[int]], batch_size: int
                  ) -> tuple[list[list[str]], list[list[bool]]]:
    """Each document's token texts and the main model's selection of them."""
    texts, selected = [], []
    for chunk in batches(docs, batch_size):
        ids, mask = pad(chunk, 0)
        ids, mask = ids.to(model.device), mask.to(model.device)
        keep = model.select(model.score(ids, mask), mask, model.config.ratio)
        for doc, row in zip(chunk, keep.tolist(), strict=True):
            texts.append(token_texts(tokenizer, doc))
            selected.append(row[: len(doc)])
    return texts, selected


def token_rows(texts: list[list[str]], selected: list[list[bool]], top: int) -> list[TableRow]:
    """Share of nuggets / of all tokens (%) for punctuation, line breaks and the ``top``
    most frequent nugget tokens (counted by `token_key`)."""
    every = Counter(t for doc in texts for t in doc)
    nuggets = Counter(t for doc, sel in zip(texts, selected, strict=True) for t, s in zip(doc, sel, strict=True) if s)
    n_text, n_nuggets = sum(every.values()), sum(nuggets.values())

    def row(label: str, match: Callable[[str], bool], paper_row: str = "") -> TableRow:
        of_nuggets = 100 * sum(c for t, c in nuggets.items() if match(t)) / n_nuggets
        of_text = 100 * sum(c for t, c in every.items() if match(t)) / n_text
        share: dict[str, float | None] = {"share_nuggets": of_nuggets, "share_text": of_text,
                                          "n_share_nuggets": n_nuggets}  # the n of the nugget share (the row's n: tokens)
        ci = {"share_nuggets": share_interval(of_nuggets, n_nuggets),
              "share_text": share_interval(of_text, n_text)}  # Wilson
        return TableRow(label, share, n=n_text, note=f"{n_nuggets} nuggets among {n_text} tokens",
                        paper_row=paper_row, interval={k: v for k, v in ci.items() if v is not None})

    keys: Counter[str] = Counter()
    for t, c in nuggets.items():
        keys[token_key(t)] += c
    rows = [row("tokens: punctuation", is_punctuation, "punctuation"),
            row("tokens: line break", lambda t: "\n" in t, "line_break")]
    return rows + [row(f"token {key!r}", counted_as(key)) for key, _ in keys.most_common(top)]


def counted_as(key: str) -> Callable[[str], bool]:
    """Whether a token's text counts as ``key`` (`token_key`)."""
    return lambda text: token_key(text) == key


def highlight(texts: list[str], selected: list[bool]) -> str:
    """The document with each nugget token marked ``[[token]]``."""
    return "".join(f"[[{t}]]" if s else t for t, s in zip(texts, selected, strict=True))


@dataclass(frozen=True)
class AutoencodingConfig:
    autoencoding: AutoencodingEval = section("eval.autoencoding")
    dtype: str = section("eval.dtype")


@dataclass(frozen=True)
class AutoencodingInputs:
    prepared: PreparedLM
    records: LMRecords
    trained: TrainedNugget2D = produced_by(TRAIN_STAGE)


class EvalNugget2DAE(Stage[AutoencodingConfig, AutoencodingInputs, EvalTable]):
    name = "eval_nugget2d_ae"
    uses_device = True

    def compute(self, ctx: StageContext, config: AutoencodingConfig, inputs: AutoencodingInputs) -> None:
        cfg = config.autoencoding
        docs = inputs.records.continuation_windows(cfg.split)
        by_length = length_docs(docs, cfg.lengths, cfg.max_docs)
        trained = inputs.trained
        rows, examples = [], []
        tokenizer = None
        for label, source in systems(trained).items():
            model, base = source.load_from(inputs.prepared.path, ctx.device, config.dtype)
            tokenizer = base.tokenizer()
            eos, pad_id = eos_and_pad(tokenizer)  # as the QA / summarisation decoding reads them
            metrics: dict[str, float | None] = {}
            interval: dict[str, tuple[float, float]] = {}  # each BLEU's 95% bootstrap interval over documents
            hyps: list[str] = []
            stats: list[list[int]] = []  # per document of every length: its BLEU statistics, tokenised once
            for n, group in by_length.items():
                outputs, kept = reconstruct(model, group, cfg.batch_size, cfg.extra_tokens, eos, pad_id)
                decoded = [decode_ids(tokenizer, o, skip_special_tokens=True) for o in outputs]
                references = [decode_ids(tokenizer, d, skip_special_tokens=True) for d in group]
                group_stats = bleu_statistics(decoded, references)
                stats += group_stats
                metrics[f"bleu_L{n}"], bounds = bleu_and_interval(group_stats)
                interval |= {f"bleu_L{n}": bounds} if bounds else {}
                metrics[f"states_L{n}"] = sum(kept) / len(kept)
                metrics[f"n_bleu_L{n}"] = metrics[f"n_states_L{n}"] = len(group)  # the documents behind them
                hyps += decoded
                examples += reconstruction_samples(label, n, decoded, references, kept)
                log.info("eval_nugget2d_ae: %s L=%d BLEU %.2f (%d documents, %.1f states)", label, n,
                         metrics[f"bleu_L{n}"], len(group), metrics[f"states_L{n}"])
            metrics["bleu"], bounds = bleu_and_interval(stats)
            interval |= {"bleu": bounds} if bounds else {}
            kind, ratio = label.split(" r")
            rows.append(TableRow(label, metrics, n=len(hyps), paper_row=f"{kind}_{ratio}",
                                 flag=generation_flags(hyps) or "", interval=interval))
            if source is trained:  # the main autoencoder: its nugget tokens (§4.3)
                texts, selected = nugget_tokens(model, tokenizer, docs[: cfg.analysis_docs], cfg.batch_size)
                token_table = token_rows(texts, selected, cfg.top_tokens)
                marked = [highlight(t, s) for t, s in zip(texts[: cfg.highlight_docs], selected, strict=False)]
            del model  # one model in memory at a time
        rows += token_table
        (ctx.output_dir / HIGHLIGHTS).write_text(
            f"# Nugget tokens of {trained.objective} r={trained.ratio:g} ([[...]] = a nugget)\n\n"
            + "\n\n---\n\n".join(marked) + "\n")
        ctx.log_artifact(ctx.output_dir / HIGHLIGHTS)
        columns = [Column("bleu", "BLEU (all lengths)"),
                   *(Column(f"bleu_L{n}", f"BLEU L={n}") for n in cfg.lengths),
                   *(Column(f"states_L{n}", f"states/layer L={n}", "{:.1f}") for n in cfg.lengths),
                   Column("share_nuggets", "% of nuggets"), Column("share_text", "% of tokens")]
        counts = ", ".join(f"L={n}: {len(g)}" for n, g in by_length.items())
        notes = [f"Documents: the first L tokens of build_lm's {cfg.split!r} continuation windows (its wiki and pile "
                 "documents; the paper: the Pile) holding L "
                 f"({counts}); greedy decoding after the soft prompt, up to L + {cfg.extra_tokens} tokens or EOS; "
                 "corpus BLEU (sacrebleu 13a) against the documents, [low, high]: its 95% bootstrap interval over "
                 "the documents.",
                 "nugget2d: ceil(r L) nuggets per layer; icae: its fixed memory slots (ceil(r x the longest training "
                 "document)), re-encoded by theta before decoding; states/layer: KV positions the decoder reads.",
                 f"Token rows: the main autoencoder (r = {trained.ratio:g}) on {min(cfg.analysis_docs, len(docs))} "
                 f"whole windows; a token is counted by its text without the word-start space; {HIGHLIGHTS} marks "
                 "the nuggets of a few documents."]
        stand_ins = inputs.records.stand_ins()  # the windows mix build_lm's wiki and pile documents
        stand_in = "; ".join(f"{c}: {stand_ins[c]}" for c in ("wiki", "pile") if c in stand_ins)
        publish(ctx, EvalTable("Nugget2D autoencoding: reconstruction BLEU by length, ICAE, nugget tokens (§4)",
                               columns, rows, notes, stand_in), examples)
