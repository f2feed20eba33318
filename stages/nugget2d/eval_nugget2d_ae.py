"""Stage ``eval_nugget2d_ae``: Nugget2D's autoencoding study (§4): reconstruction BLEU
against document length beside ICAE (fig. 5), and which tokens become nuggets (§4.3).

Reconstruction: for every model of ``train_nugget2d_ae`` (Nugget2D autoencoders per
ratio, ICAE per ratio) and every length ``L`` of ``eval.autoencoding.lengths``, the first
``L`` tokens of each ``split`` continuation window of ``build_lm`` that holds ``L`` (at
most ``max_docs``, taken across the source documents: every document's first window, then
every document's second, ...; `spread`) are compressed (Nugget2D: ``ceil(r L)`` nuggets; ICAE:
its fixed slots) and decoded greedily after the soft prompt, with theta, until EOS or ``L +
extra_tokens`` tokens. Corpus BLEU (sacrebleu) of the decoded texts against the
documents, per length and over all lengths, and the states kept per layer.

The unit every interval resamples is the source document (``build_lm``'s ``document_id``, the
article the windows were cut from): a window at L = 16 is the prefix of the same window at
L = 48, and the windows of one article share its topic and words, so all of a document's rows
(every window, every length) are one unit of the `UnitSample` (``units``) behind each BLEU, and
every model is scored on the same documents (the report pairs Nugget2D and ICAE on them). Each
BLEU's competence floor (``floors``) is `stages.evaluation.task_floors.reconstruction_floor` of its
references. A row of a model whose fit found it ignores its input carries why
(``ignores_input``, from the model's own training summary).

Nugget tokens: the main autoencoder (the first ratio) scores ``analysis_docs`` whole
windows (spread across documents as above); its selection (`Nugget2DModel.select`) is counted by
token text (the text a token adds, so that ``the`` and its word-start form are one word): the share
of nuggets and of all tokens for punctuation, line breaks and the most frequent nugget tokens,
each with its `UnitSample` over documents (per document its count and its nuggets / tokens).
``nuggets.md`` shows ``highlight_docs`` documents with their nuggets marked (appendix B).

Outputs: the `stages.artifacts.evaluate.EvalTable` (reconstruction rows: ``bleu``,
``bleu_L<L>`` with their units and 95% bootstrap intervals over documents (``interval``), their
documents ``n_bleu_L<L>``, ``states_L<L>`` with their windows ``n_states_L<L>``, n = documents;
token rows: ``share_nuggets``, ``share_text``, n = documents), ``examples.jsonl`` (per window,
length and model: the document and its id, the decoded text, its sentence BLEU and chrF, the
states kept; `reconstruction_samples`) and ``nuggets.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.degenerate import generation_flags
from stages.common.floors import Floor
from stages.common.padding import pad
from stages.common.progress import progress_logger
from stages.common.records import batches
from stages.common.resampling import MIN_UNITS, UnitSample
from stages.evaluation.analysis import is_punctuation
from stages.evaluation.decoding import decode_ids
from stages.evaluation.metrics import bleu_statistics, sentence_scores
from stages.evaluation.perplexity import token_texts
from stages.evaluation.publish import publish
from stages.evaluation.samples import Sample
from stages.evaluation.task_floors import reconstruction_floor
from stages.framework.contract import produced_by, section
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import LMRecords, PreparedLM, TrainedNugget2D
from stages.nugget2d.lm.evaluation import ignores_input
from stages.nugget2d.lm.prompted import eos_and_pad
from stages.nugget2d.lm.segments import across_documents

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from nugget_core.nugget2d import ICAEModel, Nugget2DModel
    from stages.nugget2d.config import AutoencodingEval

log = progress_logger("nugget.eval_nugget2d_ae")
TRAIN_STAGE = "train_nugget2d_ae"
HIGHLIGHTS = "nuggets.md"


UNIT = "document"  # what every interval resamples: the source document (article) of the windows
Window = tuple[str, list[int]]  # a window's document id and its token ids


def spread(windows: list[Window]) -> list[Window]:
    """``windows`` (in file order: each document's windows in text order) with every document's
    first window first, then every document's second, ... (`across_documents`)."""
    return [windows[i] for i in across_documents([document for document, _ in windows])]


def length_docs(docs: list[Window], lengths: list[int], max_docs: int) -> dict[int, list[Window]]:
    """Per length ``L``: the first ``L`` tokens of each window holding ``L``, with its document id
    (at most ``max_docs``; 0 = all). A length no window holds is an error naming it."""
    out = {}
    for n in lengths:
        held = [(document, d[:n]) for document, d in docs if len(d) >= n]
        if not held:
            raise ValueError(f"eval.autoencoding.lengths: no document of the split holds {n} tokens "
                             f"(longest: {max(len(d) for _, d in docs)})")
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


def reconstruction_samples(system: str, length: int, decoded: list[str], references: list[str], kept: list[int],
                           documents: list[str]) -> list[dict[str, Any]]:
    """One sample row (`stages.evaluation.samples`) per window of ``length`` tokens: the
    document (input and target: autoencoding) and the id of the document it was cut from
    (``documents``), the decoded text, its sentence BLEU and chrF, the states kept; settings:
    the model's ratio and the length."""
    kind, ratio = system.split(" r")
    return [Sample(f"L{length}-{i}", system, {"document": r, "document_id": doc}, r, d, {**scores, "states": k},
                   {"model": kind, "ratio": float(ratio), "length": length}).row()
            for i, (d, r, k, doc, scores) in enumerate(zip(decoded, references, kept, documents,
                                                          sentence_scores(decoded, references), strict=True))]


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


def token_rows(texts: list[list[str]], selected: list[list[bool]], top: int, documents: list[str]
               ) -> list[TableRow]:
    """Share of nuggets / of all tokens (%) for punctuation, line breaks and the ``top``
    most frequent nugget tokens (counted by `token_key`), each with its `UnitSample` over the
    documents (``documents[i]``: the document window ``i`` was cut from; a document's nugget
    tokens are not independent of each other): per document, 100 x the matching tokens among its
    nuggets / of its text and its nuggets / tokens (statistic "ratio")."""
    every = Counter(t for doc in texts for t in doc)
    nuggets = Counter(t for doc, sel in zip(texts, selected, strict=True) for t, s in zip(doc, sel, strict=True) if s)
    n_text, n_nuggets = sum(every.values()), sum(nuggets.values())

    def row(label: str, match: Callable[[str], bool], paper_row: str = "") -> TableRow:
        hits = [[match(t) for t in doc] for doc in texts]
        units = {"share_nuggets": UnitSample.of(UNIT, "ratio", documents, [
                     [100.0 * sum(h for h, s in zip(doc, sel, strict=True) if s), sum(sel)]
                     for doc, sel in zip(hits, selected, strict=True)]),
                 "share_text": UnitSample.of(UNIT, "ratio", documents, [[100.0 * sum(doc), len(doc)] for doc in hits])}
        share: dict[str, float | None] = {k: u.value() for k, u in units.items()}
        return TableRow(label, share, n=units["share_text"].n, paper_row=paper_row, units=units,
                        note=f"{n_nuggets} nuggets among {n_text} tokens of {units['share_text'].n} documents",
                        interval={k: b for k, u in units.items() if (b := u.interval()) is not None})

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
        docs = spread(inputs.records.continuation_documents(cfg.split))
        by_length = length_docs(docs, cfg.lengths, cfg.max_docs)
        trained = inputs.trained
        rows, examples = [], []
        references: dict[int, list[str]] = {}  # per length: the documents as text, the same for every model
        for label, source in systems(trained).items():
            model, base = source.load_from(inputs.prepared.path, ctx.device, config.dtype)
            tokenizer = base.tokenizer()
            eos, pad_id = eos_and_pad(tokenizer)  # as the QA / summarisation decoding reads them
            decoded: dict[int, list[str]] = {}
            metrics: dict[str, float | None] = {}
            for n, group in by_length.items():
                outputs, kept = reconstruct(model, [ids for _, ids in group], cfg.batch_size, cfg.extra_tokens, eos,
                                            pad_id)
                decoded[n] = [decode_ids(tokenizer, o, skip_special_tokens=True) for o in outputs]
                refs = references.setdefault(n, [decode_ids(tokenizer, d, skip_special_tokens=True) for _, d in group])
                metrics[f"states_L{n}"] = sum(kept) / len(kept)
                metrics[f"n_states_L{n}"] = len(group)  # the windows the mean is over
                examples += reconstruction_samples(label, n, decoded[n], refs, kept, [d for d, _ in group])
                log.info("eval_nugget2d_ae: %s L=%d (%d windows, %.1f states)", label, n, len(group),
                         metrics[f"states_L{n}"])
            cells, units, interval = bleu_cells(decoded, references, {n: [d for d, _ in g] for n, g in by_length.items()})
            kind, ratio = label.split(" r")
            rows.append(TableRow(label, {**metrics, **cells}, n=units["bleu"].n, paper_row=f"{kind}_{ratio}",
                                 flag=generation_flags([t for texts in decoded.values() for t in texts]) or "",
                                 interval=interval, units=units,
                                 ignores_input=ignores_input(source.summary(TRAIN_STAGE))))
            log.info("eval_nugget2d_ae: %s BLEU %.2f over %d documents", label, cells["bleu"], units["bleu"].n)
            if source is trained:  # the main autoencoder: its nugget tokens (§4.3)
                analysed = docs[: cfg.analysis_docs]
                texts, selected = nugget_tokens(model, tokenizer, [ids for _, ids in analysed], cfg.batch_size)
                token_table = token_rows(texts, selected, cfg.top_tokens, [d for d, _ in analysed])
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
        counts = ", ".join(f"L={n}: {len(g)} windows of {len({d for d, _ in g})} documents"
                           for n, g in by_length.items())
        notes = [f"Documents: the first L tokens of build_lm's {cfg.split!r} continuation windows (its wiki and pile "
                 "documents; the paper: the Pile) holding L, taken across the source documents (each document's "
                 f"first window, then each one's second, ...) ({counts}); greedy decoding after the soft prompt, up "
                 f"to L + {cfg.extra_tokens} tokens or EOS; corpus BLEU (sacrebleu 13a) against the documents, "
                 "[low, high]: its 95% percentile bootstrap interval over the source documents (a document's "
                 f"windows at every length are one unit: L = 16 is a prefix of L = 48; none from fewer than {MIN_UNITS}).",
                 "nugget2d: ceil(r L) nuggets per layer; icae: its fixed memory slots (ceil(r x the longest training "
                 "document)), re-encoded by theta before decoding; states/layer: KV positions the decoder reads.",
                 f"Token rows: the main autoencoder (r = {trained.ratio:g}) on {min(cfg.analysis_docs, len(docs))} "
                 f"whole windows; a token is counted by its text without the word-start space; shares with their "
                 f"interval over documents; {HIGHLIGHTS} marks the nuggets of a few documents."]
        stand_ins = inputs.records.stand_ins()  # the windows mix build_lm's wiki and pile documents
        stand_in = "; ".join(f"{c}: {stand_ins[c]}" for c in ("wiki", "pile") if c in stand_ins)
        publish(ctx, EvalTable("Nugget2D autoencoding: reconstruction BLEU by length, ICAE, nugget tokens (§4)",
                               columns, rows, notes, stand_in, reconstruction_floors(references)), examples)


def bleu_cells(decoded: dict[int, list[str]], references: dict[int, list[str]], documents: dict[int, list[str]]
               ) -> tuple[dict[str, float], dict[str, UnitSample], dict[str, tuple[float, float]]]:
    """Per length ``L`` (``bleu_L<L>``) and over all lengths (``bleu``): the corpus BLEU of
    ``decoded[L]`` against ``references[L]``, its `UnitSample` over documents (``documents[L][i]``:
    the document window ``i`` was cut from; its windows at every length are summed into one unit)
    and its 95% interval where it has one; each BLEU's n (``n_bleu_L<L>``: documents)."""
    cells: dict[str, float] = {}
    units: dict[str, UnitSample] = {}
    every_id: list[str] = []
    every_stats: list[list[int]] = []
    for n, texts in decoded.items():
        stats = bleu_statistics(texts, references[n])  # per window, tokenised once
        units[f"bleu_L{n}"] = UnitSample.of(UNIT, "bleu", documents[n], stats)
        every_id += documents[n]
        every_stats += stats
    units["bleu"] = UnitSample.of(UNIT, "bleu", every_id, every_stats)
    for key, u in units.items():
        cells[key] = u.value()
        if key != "bleu":
            cells[f"n_{key}"] = u.n
    return cells, units, {k: b for k, u in units.items() if (b := u.interval()) is not None}


def reconstruction_floors(references: dict[int, list[str]]) -> dict[str, Floor]:
    """Each BLEU's competence floor on its own references (`reconstruction_floor`): per length and
    over all lengths."""
    floors = {f"bleu_L{n}": reconstruction_floor(refs) for n, refs in references.items()}
    return {"bleu": reconstruction_floor([r for refs in references.values() for r in refs]), **floors}
