"""Stage ``eval_qa``: SQuAD-style question answering (Nugget2D §6.2, table 3).

Zero-shot systems on ``build_lm``'s ``qa.jsonl`` (on profile=tiny a labelled stand-in:
cloze questions cut from real Wikipedia sentences), all with the appendix-C prompt and
greedy decoding capped at ``eval.qa.max_new_tokens`` (64 in the paper):
Full, NoDoc, LMSumm (the base LM summarises the document to ~``lmsumm_ratio`` of its
words, then answers from the summary; the realised summary ratio is reported),
Nugget2D at each ratio of ``eval.qa.nugget_ratios`` (5x, 10x) from ``train_nugget2d``:
the model trained at that ratio when the stage trained one (``train.nugget2d.extra_ratios``;
paper §6.2), else its main model compressing at that ratio; the table notes say which,
and the training-free KV presses (StreamingLLM, SnapKV, key-norm; ``eval.presses``) at
each of those ratios: the base LM's KV of the document, keeping per layer and KV head as
many positions as Nugget2D keeps per layer (`stages.nugget2d.lm.prompted`).

The procedure is the recipe `stages.nugget2d.lm.qa.evaluate_qa` (``nugget eval --task qa``
calls it too); this stage reads its inputs, calls it and publishes the result.
Accuracy: the appendix-D normalised output contains the normalised answer
(`stages.nugget2d.lm.normalize`), scored by `stages.nugget2d.lm.scoring`. Decoding cost per system: attended states per generated
token, KV bytes, ms per decoding step, time before decoding. Outputs: the
`stages.artifacts.evaluate.EvalTable` (accuracy with its 95% interval (Wilson's over independent
questions; over their documents where several questions share one: `stages.nugget2d.lm.scoring`)
and its per-document statistics (``units``: the same documents for every system, so two pair),
n per row; each system's id and the table-3 row it reproduces; a system whose answers are
constant, loops or empty, or that answers 0 of n where NoDoc also does, flagged uninformative:
`qa_flag`; a Nugget2D row whose model's fit found it ignores its input carries why; the accuracy's
competence floor: NoDoc's accuracy on the same questions) and
``examples.jsonl`` (also the MLflow table ``tables/examples.json``): per question and system, the
document, the question, the ``context`` and ``prompt`` text decoded from the ids fed, the answer
(``target``, and every gold answer), the output, correct, the decoding cost, the ratio and the
flags (`stages.evaluation.samples`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nugget_core.nugget2d.prompts import PromptFormat
from stages.artifacts.evaluate import EvalTable
from stages.common.records import read_records
from stages.config.schema import PromptSection
from stages.evaluation.publish import publish
from stages.framework.contract import produced_by, section
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import LMRecords, PreparedLM, TrainedNugget2D
from stages.nugget2d.config import PressSection, QAEval
from stages.nugget2d.lm.evaluation import ignores_input
from stages.nugget2d.lm.qa import RatioModel, evaluate_qa

COMPRESSOR_STAGE = "train_nugget2d"


@dataclass(frozen=True)
class QAConfig:
    qa: QAEval = section("eval.qa")
    presses: PressSection = section("eval.presses")
    dtype: str = section("eval.dtype")
    prompts: PromptSection = section("prompts")


@dataclass(frozen=True)
class QAInputs:
    prepared: PreparedLM
    records: LMRecords
    compressor: TrainedNugget2D = produced_by(COMPRESSOR_STAGE)


class EvalQA(Stage[QAConfig, QAInputs, EvalTable]):
    name = "eval_qa"
    uses_device = True

    @staticmethod
    def ratio_model(compressor: TrainedNugget2D, ratio: float, main: Any,
                    load: Callable[[TrainedNugget2D], Any]) -> RatioModel:
        """The model train_nugget2d trained at ``ratio`` (its main one, ``main`` loaded, or a variant,
        ``load``-ed), else its main one, with why that very model ignores its input (its own fit's
        summary, `ignores_input`)."""
        trained = compressor.at_ratio(ratio)
        if trained is None:
            return RatioModel(main, compressor.ratio, ignores_input(compressor.summary(COMPRESSOR_STAGE)))
        own = trained.path != compressor.path
        return RatioModel(load(trained) if own else main, trained.ratio,
                          ignores_input(trained.summary(COMPRESSOR_STAGE)))

    def compute(self, ctx: StageContext, config: QAConfig, inputs: QAInputs) -> None:
        cfg = config.qa
        records = read_records(inputs.records.records("qa"), cfg.split, cfg.max_examples)
        compressor = inputs.compressor
        placement = (ctx.device, config.dtype)
        model, base = compressor.load_from(inputs.prepared.path, *placement)
        tokenizer = base.tokenizer()

        def at_ratio(ratio: float) -> RatioModel:
            return self.ratio_model(compressor, ratio, model,
                                    lambda trained: trained.load_from(inputs.prepared.path, *placement)[0])

        result = evaluate_qa(model, tokenizer, records, cfg, prompt_format=PromptFormat(config.prompts.format, tokenizer),
                             presses=config.presses, soft_prompt=compressor.soft_prompt, at_ratio=at_ratio,
                             compressor=f"{COMPRESSOR_STAGE} checkpoint")
        ctx.set_tags({"stand_in": result.table.stand_in or "none"})
        publish(ctx, result.table, result.examples)
