"""Stage ``train_full_ft``: the "Full fine-tuned" baseline of the summarisation table
(Nugget2D §6.3, table 4).

The base LM from ``prepare_lm`` reads the whole appendix-C prompt and learns to produce
the answer, through one LoRA adapter with Nugget2D's rank, alpha and target modules
(``nugget2d.lora_rank`` / ``lora_alpha`` / ``lora_dropout`` / ``lora_target_modules``), so Full and Nugget2D fine-tune the
same number of LM parameters. Data: ``build_lm``'s ``<train.full_ft.finetune_task>.jsonl``
(`stages.train.full_ft_task`). Training runs on Ray Train with the shared loop
(DDP or DeepSpeed ZeRO-2, checkpoints, restarts, MLflow metrics from rank 0).

Output: `stages.artifacts.train.FullFinetunedLM` (``lm_lora/``: peft adapter + tokenizer;
its ``load`` merges it into the base LM), ``trainer_state.json`` and the probe logits.
"""

from __future__ import annotations

from stages.artifacts.data import BaseLM, LMRecords
from stages.artifacts.train import FullFinetunedLM
from stages.framework.stage import Stage, StageContext
from stages.train.full_ft_task import FullFinetuneTask
from stages.train.launch import train_into_stage_output


class TrainFullFT(Stage):
    name = "train_full_ft"
    upstream = ("prepare_lm", "build_lm")
    config_keys = ("nugget2d.lora_rank", "nugget2d.lora_alpha", "nugget2d.lora_dropout",
                   "nugget2d.lora_target_modules", "model.lm", "train.full_ft", "prompts", "run.seed")
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs
    train_job = "train.full_ft"  # the executor reserves its workers

    def run(self, ctx: StageContext) -> None:
        job = ctx.cfg("train.full_ft")
        task = FullFinetuneTask(
            data=LMRecords.read(ctx.inputs["build_lm"]),
            base_dir=str(BaseLM.read(ctx.inputs["prepare_lm"], "chat").path),  # the summarisation base (§3)
            finetune_task=job.finetune_task,
            lora_rank=ctx.cfg("nugget2d.lora_rank"),
            lora_alpha=ctx.cfg("nugget2d.lora_alpha"),
            lora_dropout=ctx.cfg("nugget2d.lora_dropout"),
            lora_target_modules=list(ctx.cfg("nugget2d.lora_target_modules")),
            max_doc_tokens=job.max_doc_tokens,
            prompt_format=ctx.cfg("prompts").format,
            attn_implementation=ctx.cfg("model.lm").attn_implementation,
            dev_examples=job.dev_examples,
            seed=ctx.cfg("run.seed"),
        )
        train_into_stage_output(ctx, task, job, "train.full_ft", FullFinetunedLM.DIR)
        FullFinetunedLM(FullFinetunedLM.folder(ctx.output_dir), job.finetune_task).write(ctx.output_dir)
