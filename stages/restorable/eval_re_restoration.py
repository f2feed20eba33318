"""Stage ``eval_re_restoration``: how well each RE system restores a text from its one
vector (RE §4.2-4.3, tables 2, 3, 8).

For every system of ``train_re``, the dev texts of its sentence count (``build_re_data``,
at most ``eval.re.max_examples``) are encoded to one vector each and restored two ways:

- teacher-forced perplexity of the text given the vector (eq. 6): ``exp`` of the summed
  token NLL over the summed target tokens (the model tokenizer's target encoding, EOS
  included) — the paper's PPL;
- beam search (``eval.re.beam_size``, RE table 6: 4 beams, early stopping) up to the
  text's own token length plus ``eval.re.extra_tokens``, then ROUGE-1 / 2 / L F1 (x 100,
  `rouge-score` with stemming, per text, averaged) of the restored text against the original.

The independent unit is the document a text was cut from (a document's windows of k sentences
are not independent): each metric's per-document statistics (``units``: [NLL, tokens] for PPL,
[F1 sum, texts] for ROUGE) carry the document's id, the same for every system scored on the
texts of one sentence count, so the report pairs systems over the same documents; every
interval is the percentile bootstrap over documents (`stages.common.resampling`; none below `MIN_UNITS`).

Outputs: the `EvalTable` (one row per system: ``ppl`` (n_ppl = target tokens),
``rouge1``, ``rouge2``, ``rougeL`` with their intervals and units, ``distinct`` (different restored
texts: 1 when the decoder ignores the vector), n = texts; ``paper_row`` its RE table 8 row;
``ignores_input``: why its model ignores the embedding, from its trainer state; the table's
``floors``, per sentence count k, ``n<k>/<metric>``: `stages.restorable.restoration_floors`) and
``examples.jsonl`` (per system and text: the text encoded, the original, the restored
text, its ROUGE, perplexity, loss and tokens, the system's settings; `restoration_samples`).
The recipe per system (`restore`, `system_row`, `restoration_samples`) is in
`stages.restorable.restoration` (also ``nugget eval``'s).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from stages.artifacts.evaluate import Column, EvalTable
from stages.evaluation.publish import publish
from stages.evaluation.rouge import rouge_per_example
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.restorable.artifacts import RestorationTexts, TrainedRestorable, ignored_inputs
from stages.restorable.restoration import restoration_samples, restore, system_row
from stages.restorable.restoration_floors import RestorationFloors
from stages.restorable.restoration_texts import document_of

if TYPE_CHECKING:
    from stages.restorable.config import REEval


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
        ignoring = ignored_inputs(trained)
        rows, examples = [], []
        floors = RestorationFloors(texts)
        for k, record in enumerate(trained.systems, 1):
            tick = time.time()
            model = trained.load(record, ctx.device, config.dtype)
            tokenizer = trained.tokenizer(record)
            limit, sentences = record["max_tokens"], record["sentences"]  # max_tokens: its training texts' truncation
            scored = list(texts.examples(sentences, "dev", cfg.max_examples))
            dev = [ex["text"] for ex in scored]
            floors.add(sentences, dev, tokenizer, limit)
            nll, counts, restored = restore(model, tokenizer, dev, limit, cfg.batch_size, cfg.beam_size,
                                            cfg.extra_tokens, ctx.device)
            rouge = rouge_per_example(restored, dev)
            row = system_row(record, nll, counts, rouge, restored, [document_of(ex["id"]) for ex in scored])
            rows.append(replace(row, ignores_input=ignoring.get(record["system"], "")))
            examples += restoration_samples(record, tokenizer, dev, limit, nll, counts, restored, rouge)
            print(f"[eval_re_restoration] {k}/{len(trained.systems)} {record['system']}: PPL {row.metrics['ppl']:.2f}, "
                  f"R-1/2/L {row.metrics['rouge1']:.1f} / {row.metrics['rouge2']:.1f} / {row.metrics['rougeL']:.1f} "
                  f"({len(dev)} texts, {time.time() - tick:.1f}s)", flush=True)
        table = EvalTable(
            title="RE tables 2, 3, 8: restoration of 1 / 3 / 5 sentences from one vector",
            columns=[Column("ppl", "PPL"), Column("rouge1", "R-1"), Column("rouge2", "R-2"), Column("rougeL", "R-L"),
                     Column("distinct", "distinct restorations", "{:.0f}")],
            rows=rows, stand_in=texts.stand_in, floors=floors.floors,
            notes=[f"dev texts of build_re_data per sentence count (at most {cfg.max_examples or 'all'}); beam "
                   f"{cfg.beam_size}; PPL: exp(target NLL / target tokens), teacher-forced; ROUGE F1 x 100 "
                   "(rouge-score, stemmed) of the restored text vs the original; intervals: the percentile "
                   "bootstrap over the documents the texts were cut from (windows of one document are one unit); "
                   "floors per sentence count (n<k>/<metric>): the best constant output's ROUGE, a Kneser-Ney "
                   "trigram LM's PPL", *floors.notes],
        )
        publish(ctx, table, examples)
