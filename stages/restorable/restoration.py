"""The restoration recipe of ``eval_re_restoration`` (RE §4.2-4.3) for one system, callable
outside the stage (``nugget eval --task restoration``): `restore` each text from its one
vector (teacher-forced NLL and beam search), make the system's table row (`system_row`) and
its per-text sample rows (`restoration_samples`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from stages.artifacts.evaluate import TableRow
from stages.common.degenerate import generation_flags
from stages.common.device import to_device
from stages.common.padding import pad
from stages.common.records import batches
from stages.common.resampling import UnitSample
from stages.evaluation.rouge import ROUGE_TYPES
from stages.evaluation.samples import Sample

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from nugget_core.restorable import RestorableModel


def target_ids(tokenizer: PreTrainedTokenizerBase, texts: list[str], limit: int) -> list[list[int]]:
    """The target ids of ``texts`` (what the decoder restores and the perplexity scores), truncated
    as in training."""
    return tokenizer(text_target=texts, truncation=True, max_length=limit)["input_ids"]


def encode(tokenizer: PreTrainedTokenizerBase, texts: list[str], limit: int) -> tuple[list[list[int]], list[list[int]]]:
    """Encoder ids and target ids of ``texts`` (the text is both, eq. 6), truncated as in training."""
    sources = tokenizer(texts, truncation=True, max_length=limit)["input_ids"]
    return sources, target_ids(tokenizer, texts, limit)


@torch.no_grad()
def restore(model: RestorableModel, tokenizer: PreTrainedTokenizerBase, texts: list[str], limit: int,
            batch_size: int, beams: int, extra_tokens: int, device: torch.device | str
            ) -> tuple[list[float], list[int], list[str]]:
    """Per text: summed target NLL, target tokens, and the restored text."""
    sources, targets = encode(tokenizer, texts, limit)
    nll, counts, restored = [], [], []
    for chunk in batches(list(range(len(texts))), batch_size):
        ids, mask = pad([sources[i] for i in chunk], tokenizer.pad_token_id)
        labels, _ = pad([targets[i] for i in chunk], -100)
        ids, mask, labels = to_device((ids, mask, labels), device)
        logits = model(input_ids=ids, attention_mask=mask, labels=labels).logits
        token_nll = torch.nn.functional.cross_entropy(
            logits.float().transpose(1, 2), labels.clamp(min=0), reduction="none").masked_fill(labels.eq(-100), 0.0)
        nll += token_nll.sum(dim=1).tolist()
        counts += labels.ne(-100).sum(dim=1).tolist()
        longest = max(len(targets[i]) for i in chunk)
        # never past the truncation of its training texts (positions - 1): the longest reference + the margin
        # can run off the decoder's position table on texts near the limit (docs/reliability.md)
        out = model.generate(ids, mask, num_beams=beams, max_new_tokens=min(longest + extra_tokens, limit))
        restored += tokenizer.batch_decode(out, skip_special_tokens=True)
    return nll, counts, [" ".join(t.split()) for t in restored]


def restoration_units(nll: list[float], counts: list[int], rouge: list[dict[str, float]],
                      documents: Sequence[str] | None = None) -> dict[str, UnitSample]:
    """Per metric, its per-unit statistics (`stages.common.resampling`): the texts of one document
    (``documents[i]``: the document text i was cut from, `restoration_texts.document_of`) are one
    unit, since windows of one article are not independent; without ``documents`` each text is one.
    ``ppl``: [target NLL, target tokens] (a perplexity of the summed NLL); ROUGE: [F1, texts]
    (the mean over texts, whichever unit holds them)."""
    unit, ids = ("document", list(documents)) if documents is not None else ("text", [str(i) for i in range(len(nll))])
    if not len(ids) == len(nll) == len(counts) == len(rouge):
        raise ValueError(f"restoration_units: {len(ids)} unit ids for {len(nll)} NLLs, {len(counts)} token counts "
                         f"and {len(rouge)} ROUGE scores")
    return {"ppl": UnitSample.of(unit, "exp_ratio", ids, [[x, n] for x, n in zip(nll, counts, strict=True)]),
            **{t: UnitSample.of(unit, "ratio", ids, [[r[t], 1.0] for r in rouge]) for t in ROUGE_TYPES}}


def system_row(record: dict[str, Any], nll: list[float], counts: list[int], rouge: list[dict[str, float]],
               restored: list[str], documents: Sequence[str] | None = None) -> TableRow:
    """The table row of one system from its per-text results: PPL and ROUGE with their per-unit
    statistics (`restoration_units`) and the 95% bootstrap interval over those units (none below
    `stages.common.resampling.MIN_UNITS`); n = texts. ``distinct``: how many different texts it
    restored (not in the paper): a decoder that ignores the vector restores every text to the same
    one, and is flagged uninformative (`stages.common.degenerate.generation_flags`: constant,
    looping or empty restorations)."""
    units = restoration_units(nll, counts, rouge, documents)
    metrics: dict[str, float | None] = {"ppl": math.exp(sum(nll) / sum(counts)), "n_ppl": sum(counts),
                                        **{t: units[t].value() for t in ROUGE_TYPES}, "distinct": len(set(restored))}
    intervals = {m: ci for m, u in units.items() if (ci := u.interval()) is not None}
    return TableRow(system=record["system"], metrics=metrics, n=len(rouge), paper_row=record["paper_row"],
                    interval=intervals, flag=generation_flags(restored) or "", units=units)


SETTINGS = ("sentences", "config", "pooling", "decoder", "extra_layers", "max_tokens", "paper_row")  # of a system


def restoration_samples(record: dict[str, Any], tokenizer: PreTrainedTokenizerBase, texts: list[str], limit: int,
                        nll: list[float], counts: list[int], restored: list[str], rouge: list[dict[str, float]]
                        ) -> list[dict[str, Any]]:
    """One sample row (`stages.evaluation.samples`) per text: the ``encoded`` text (the encoder's
    ids decoded: the text as truncated to ``limit``), the original as target, the restored text;
    metrics: ROUGE-1/2/L, the teacher-forced ``ppl`` with its ``loss`` (mean target NLL) and
    ``tokens``; settings: the system's `SETTINGS`."""
    sources, _ = encode(tokenizer, texts, limit)
    settings = {k: record.get(k) for k in SETTINGS}
    return [Sample(i, record["system"], {"encoded": tokenizer.decode(ids, skip_special_tokens=True)}, text, out,
                   {**scores, "ppl": math.exp(total / n), "loss": total / n, "tokens": n}, settings).row()
            for i, (ids, text, out, scores, total, n) in enumerate(zip(sources, texts, restored, rouge, nll, counts,
                                                                     strict=True))]
