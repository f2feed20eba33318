"""Stage ``eval_re_restoration``: how well each RE system restores a text from its one
vector (RE §4.2-4.3, tables 2, 3, 8).

For every system of ``train_re``, the dev texts of its sentence count (``build_re_data``,
at most ``eval.re.max_examples``) are encoded to one vector each and restored two ways:

- teacher-forced perplexity of the text given the vector (eq. 6): ``exp`` of the summed
  token NLL over the summed target tokens (the model tokenizer's target encoding, EOS
  included) — the paper's PPL;
- beam search (``eval.re.beam_size``, RE table 6: 4 beams, early stopping) up to the
  text's own token length plus ``eval.re.extra_tokens``, then ROUGE-1 / 2 / L F1 (x 100,
  `rouge-score` with stemming, per text, averaged; standard error over texts) of the
  restored text against the original.

Outputs: the `EvalTable` (one row per system: ``ppl`` (n_ppl = target tokens),
``rouge1``, ``rouge2``, ``rougeL`` with standard errors, ``distinct`` (different restored
texts: 1 when the decoder ignores the vector), n = texts; ``paper_row`` its RE table 8
row) and ``examples.jsonl`` (per system and text: the text encoded, the original, the restored
text, its ROUGE, perplexity, loss and tokens, the system's settings; `restoration_samples`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.degenerate import generation_flags
from stages.common.device import to_device
from stages.common.intervals import means_and_errors
from stages.common.padding import pad
from stages.common.records import batches
from stages.evaluation.publish import publish
from stages.evaluation.rouge import ROUGE_TYPES, rouge_per_example
from stages.evaluation.samples import Sample
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.restorable.artifacts import RestorationTexts, TrainedRestorable

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from nugget_core.restorable import RestorableModel
    from stages.restorable.config import REEval


def encode(tokenizer: PreTrainedTokenizerBase, texts: list[str], limit: int) -> tuple[list[list[int]], list[list[int]]]:
    """Encoder ids and target ids of ``texts`` (the text is both, eq. 6), truncated as in training."""
    sources = tokenizer(texts, truncation=True, max_length=limit)["input_ids"]
    targets = tokenizer(text_target=texts, truncation=True, max_length=limit)["input_ids"]
    return sources, targets


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


def system_row(record: dict[str, Any], nll: list[float], counts: list[int], rouge: list[dict[str, float]],
               restored: list[str]) -> TableRow:
    """The table row of one system from its per-text results. ``distinct``: how many
    different texts it restored (not in the paper): a decoder that ignores the vector
    restores every text to the same one, and is flagged uninformative
    (`stages.common.degenerate.generation_flags`: constant, looping or empty restorations)."""
    tokens = sum(counts)
    means, errors = means_and_errors({t: [r[t] for r in rouge] for t in ROUGE_TYPES})
    metrics: dict[str, float | None] = {"ppl": math.exp(sum(nll) / tokens), "n_ppl": tokens, **means,
                                        "distinct": len(set(restored))}
    return TableRow(system=record["system"], metrics=metrics, n=len(rouge), paper_row=record["paper_row"],
                    stderr=errors, flag=generation_flags(restored) or "")


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


@dataclass(frozen=True)
class RestorationConfig:
    re: REEval = section("eval.re")
    dtype: str = section("eval.dtype")


@dataclass(frozen=True)
class RestorationInputs:
    texts: RestorationTexts
    trained: TrainedRestorable


class EvalRERestoration(Stage[RestorationConfig, RestorationInputs, EvalTable]):
    name = "eval_re_restoration"
    uses_device = True

    def compute(self, ctx: StageContext, config: RestorationConfig, inputs: RestorationInputs) -> None:
        cfg = config.re
        texts, trained = inputs.texts, inputs.trained
        rows, examples = [], []
        for k, record in enumerate(trained.systems, 1):
            tick = time.time()
            model = trained.load(record, ctx.device, config.dtype)
            tokenizer = trained.tokenizer(record)
            limit = record["max_tokens"]  # the truncation of its training texts
            dev = texts.texts(record["sentences"], "dev", cfg.max_examples)
            nll, counts, restored = restore(model, tokenizer, dev, limit, cfg.batch_size, cfg.beam_size,
                                            cfg.extra_tokens, ctx.device)
            rouge = rouge_per_example(restored, dev)
            row = system_row(record, nll, counts, rouge, restored)
            rows.append(row)
            examples += restoration_samples(record, tokenizer, dev, limit, nll, counts, restored, rouge)
            print(f"[eval_re_restoration] {k}/{len(trained.systems)} {record['system']}: PPL {row.metrics['ppl']:.2f}, "
                  f"R-1/2/L {row.metrics['rouge1']:.1f} / {row.metrics['rouge2']:.1f} / {row.metrics['rougeL']:.1f} "
                  f"({len(dev)} texts, {time.time() - tick:.1f}s)", flush=True)
        table = EvalTable(
            title="RE tables 2, 3, 8: restoration of 1 / 3 / 5 sentences from one vector",
            columns=[Column("ppl", "PPL"), Column("rouge1", "R-1"), Column("rouge2", "R-2"), Column("rougeL", "R-L"),
                     Column("distinct", "distinct restorations", "{:.0f}")],
            rows=rows, stand_in=texts.stand_in,
            notes=[f"dev texts of build_re_data per sentence count (at most {cfg.max_examples or 'all'}); beam "
                   f"{cfg.beam_size}; PPL: exp(target NLL / target tokens), teacher-forced; ROUGE F1 x 100 "
                   "(rouge-score, stemmed) of the restored text vs the original"],
        )
        publish(ctx, table, examples)
