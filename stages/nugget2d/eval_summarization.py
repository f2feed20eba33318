"""Stage ``eval_summarization``: CNN/DailyMail-style summarisation (Nugget2D §6.3, table 4).

Systems, all with the appendix-C prompt ("... Please summarize the above document in
one sentence.") and greedy decoding capped at ``eval.summarization.max_new_tokens``:

- ``full_zs``: the base LM, zero-shot, reading the whole document part;
- ``full_ft``: the base LM fine-tuned on the task (``train_full_ft``: one LoRA adapter,
  merged for decoding), reading the whole document part;
- ``nugget2d_ft``: Nugget2D at ``nugget_ratio`` (10x): ``train_nugget2d``'s compressor
  fine-tuned on the task (``train_nugget2d_ft``, objective ``finetune``, no soft prompt);
- ``streaming_llm`` / ``snapkv`` / ``key_norm``: training-free KV presses of the base
  LM's document KV at Nugget2D's budget (``nugget_ratio``; settings ``eval.presses``).

The two fine-tuning stages tokenise the records as this stage does
(`stages.common.prompts`). The procedure is the recipe
`stages.nugget2d.lm.summarization.evaluate_summarization` (``nugget eval --task
summarization`` calls it too); this stage reads its inputs, calls it and publishes the result.
ROUGE-1/2/L and ROUGE-Lsum F1 x 100 with stemming and the decoding cost per system, scored by
`stages.nugget2d.lm.scoring`, each ROUGE with its per-article statistics (``units``: every system
is scored on the same articles, so two pair) and its 95% bootstrap interval over articles; the
lead-3 summary on the same references is each ROUGE's competence floor (``floors``) and a row; a
row of a trained model (``nugget2d_ft``: train_nugget2d_ft's, ``full_ft``: train_full_ft's) whose
fit found it ignores its input carries why (``ignores_input``).
Outputs: the `stages.artifacts.evaluate.EvalTable` (ROUGE with its interval, n per
row, each system's table-4 row; a system whose summaries are constant, loops or empty flagged
uninformative, `stages.common.degenerate`) and ``examples.jsonl`` (also the MLflow table
``tables/examples.json``): per document and system, the document, the instruction, the
``context`` and ``prompt`` text decoded from the ids fed, the reference summary (``target``), the
output, ROUGE-1/2/L, the decoding cost, the ratio and the flags (`stages.evaluation.samples`). On
profile=tiny the data is a labelled stand-in (lead sentence of a real news article as
the summary of the rest).
"""

from __future__ import annotations

from dataclasses import dataclass

from nugget_core.nugget2d.prompts import PromptFormat
from stages.artifacts.evaluate import EvalTable
from stages.common.records import read_records
from stages.config.schema import PromptSection
from stages.evaluation.publish import publish
from stages.framework.contract import produced_by, reading, section
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import (
    BaseLM,
    FullFinetunedLM,
    LMRecords,
    TrainedNugget2D,
)
from stages.nugget2d.config import PressSection, SummarizationEval
from stages.nugget2d.lm.evaluation import ignores_input
from stages.nugget2d.lm.summarization import evaluate_summarization

MODELS_NOTE = ("full_ft: train_full_ft (base LM + LoRA, merged); nugget2d_ft: train_nugget2d_ft "
               "(train_nugget2d's compressor fine-tuned on the task); full_zs: the base LM.")


@dataclass(frozen=True)
class SummarizationConfig:
    summarization: SummarizationEval = section("eval.summarization")
    presses: PressSection = section("eval.presses")
    dtype: str = section("eval.dtype")
    prompts: PromptSection = section("prompts")


@dataclass(frozen=True)
class SummarizationInputs:
    base: BaseLM = reading(role="chat")  # the QA / summarisation base (Nugget2D §3)
    # reading() on the rest too: to mypy a plain field may not follow one declared with "= ..."
    records: LMRecords = reading()
    full_ft: FullFinetunedLM = reading()
    nugget2d: TrainedNugget2D = produced_by("train_nugget2d_ft")


class EvalSummarization(Stage[SummarizationConfig, SummarizationInputs, EvalTable]):
    name = "eval_summarization"
    uses_device = True

    @staticmethod
    def input_use(systems: list[str], inputs: SummarizationInputs) -> dict[str, str]:
        """Per trained system, why its model ignores its input (`ignores_input` of its fit's
        summary): ``nugget2d_ft`` is train_nugget2d_ft's model, ``full_ft`` train_full_ft's adapter;
        the others decode with the base LM."""
        summaries = {"nugget2d_ft": lambda: inputs.nugget2d.summary("train_nugget2d_ft"),
                     "full_ft": lambda: inputs.full_ft.training()[0]}
        return {s: reason for s, summary in summaries.items() if s in systems and (reason := ignores_input(summary()))}

    def compute(self, ctx: StageContext, config: SummarizationConfig, inputs: SummarizationInputs) -> None:
        cfg = config.summarization
        records = read_records(inputs.records.records("summarization"), cfg.split, cfg.max_examples)
        base = inputs.base
        tokenizer = base.tokenizer()
        placement = (ctx.device, config.dtype)
        nugget2d = inputs.nugget2d.load(base, *placement)
        result = evaluate_summarization(
            nugget2d, tokenizer, records, cfg, prompt_format=PromptFormat(config.prompts.format, tokenizer),
            presses=config.presses, models_note=MODELS_NOTE,
            full_ft=lambda: inputs.full_ft.load(base, nugget2d.config, *placement),
            ignores_input=self.input_use(cfg.systems, inputs))
        ctx.set_tags({"stand_in": result.table.stand_in or "none"})
        publish(ctx, result.table, result.examples)
