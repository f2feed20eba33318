"""Stage ``train_full_ft``: the "Full fine-tuned" baseline of the summarisation table
(Nugget2D §6.3, table 4).

The base LM from ``prepare_lm`` reads the whole appendix-C prompt and learns to produce
the answer, through one LoRA adapter with Nugget2D's rank, alpha and target modules
(``nugget2d.lora_rank`` / ``lora_alpha`` / ``lora_dropout`` / ``lora_target_modules``), so Full and Nugget2D fine-tune the
same number of LM parameters. Data: ``build_lm``'s ``<train.full_ft.finetune_task>.jsonl``
(`stages.nugget2d.full_ft_task`). Training runs on Ray Train with the shared loop
(DDP or DeepSpeed ZeRO-2, checkpoints, restarts, MLflow metrics from rank 0).

Output: `stages.nugget2d.artifacts.FullFinetunedLM` (``lm_lora/``: peft adapter + tokenizer;
its ``load`` merges it into the base LM), ``trainer_state.json`` and the probe logits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import FullFinetunedLM, LMRecords, PreparedLM
from stages.nugget2d.full_ft_task import FullFinetuneTask
from stages.training.launch import train_into_stage_output

if TYPE_CHECKING:
    from stages.config.schema import CausalLM, PromptSection
    from stages.nugget2d.config import FinetuneJob

JOB_KEY = "train.full_ft"


@dataclass(frozen=True)
class FullFTConfig:
    # Nugget2D's LoRA settings only (not its whole section): Full shares them, nothing else
    lora_rank: int = section("nugget2d.lora_rank")
    lora_alpha: int = section("nugget2d.lora_alpha")
    lora_dropout: float = section("nugget2d.lora_dropout")
    lora_target_modules: list[str] = section("nugget2d.lora_target_modules")
    lm: CausalLM = section("model.lm")
    job: FinetuneJob = section(JOB_KEY)
    prompts: PromptSection = section("prompts")
    seed: int = section("run.seed")


@dataclass(frozen=True)
class FullFTInputs:
    prepared: PreparedLM
    records: LMRecords


class TrainFullFT(Stage[FullFTConfig, FullFTInputs, FullFinetunedLM]):
    name = "train_full_ft"
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs
    train_job = JOB_KEY  # the executor reserves its workers

    @staticmethod
    def task(config: FullFTConfig, inputs: FullFTInputs) -> FullFinetuneTask:
        """The fine-tuning task of ``config`` on ``inputs`` (what the Ray Train workers run)."""
        job = config.job
        return FullFinetuneTask(
            data=inputs.records,
            base_dir=str(inputs.prepared.base("chat").path),  # the summarisation base (§3)
            finetune_task=job.finetune_task,
            lora_rank=config.lora_rank,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            lora_target_modules=list(config.lora_target_modules),
            max_doc_tokens=job.max_doc_tokens,
            prompt_format=config.prompts.format,
            attn_implementation=config.lm.attn_implementation,
            dev_examples=job.dev_examples,
            seed=config.seed,
        )

    def compute(self, ctx: StageContext, config: FullFTConfig, inputs: FullFTInputs) -> None:
        job = config.job
        train_into_stage_output(ctx, self.task(config, inputs), job, JOB_KEY, FullFinetunedLM.DIR, config.seed,
                                config.lm)
        FullFinetunedLM(FullFinetunedLM.folder(ctx.output_dir), job.finetune_task).write(ctx.output_dir)
