"""Stage ``eval_efficiency``: Nugget2D's decoding cost beside Full's and the presses' (Nugget2D
abstract: "drastically reducing the overhead during decoding in terms of time and space").

On the run's device and ``eval.dtype``, in one process: the memory bandwidth (a STREAM-like copy,
`stages.common.bandwidth`), then per context length of ``eval.efficiency.contexts`` and per system
(Full; the trained compressor of ``train_nugget2d`` at each of ``eval.efficiency.ratios``; each
press of ``eval.efficiency.presses`` at the same budgets) the document pass, the time per generated
token over interleaved repeats, the document's KV and the cache a step reads, each beside its
bound (`stages.nugget2d.lm.efficiency`); then one training step of Nugget2D and of Full FT on the
same tokens (`stages.nugget2d.lm.train_cost`). The context is build_lm's QA documents of
``split`` concatenated (the same tokens for every system), the prompt its first question's, as
eval_qa lays it out. Outputs: the `EvalTable` (`stages.nugget2d.lm.efficiency_table`) and
``examples.jsonl`` (every repeat's ms per token, per system and context).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from nugget_core.nugget2d.prompts import PromptFormat, encode
from stages.artifacts.evaluate import EvalTable
from stages.common.bandwidth import copy_bandwidth
from stages.common.device import place_model
from stages.common.progress import progress_logger
from stages.common.records import read_records
from stages.config.schema import PromptSection
from stages.evaluation.publish import publish
from stages.framework.contract import produced_by, section
from stages.framework.resources import WHOLE, Demand
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import LMRecords, PreparedLM, TrainedNugget2D
from stages.nugget2d.config import EfficiencyEval, PressSection
from stages.nugget2d.lm.efficiency import DecodeCost, decode_systems, measure_context
from stages.nugget2d.lm.efficiency_table import efficiency_table
from stages.nugget2d.lm.presses import press_config
from stages.nugget2d.lm.prompted import eos_and_pad
from stages.nugget2d.lm.train_cost import train_costs

COMPRESSOR_STAGE = "train_nugget2d"
KEY = "eval.efficiency"
log = progress_logger("nugget.eval_efficiency")


@dataclass(frozen=True)
class EfficiencyConfig:
    efficiency: EfficiencyEval = section(KEY)
    presses: PressSection = section("eval.presses")
    dtype: str = section("eval.dtype")
    prompts: PromptSection = section("prompts")


@dataclass(frozen=True)
class EfficiencyInputs:
    prepared: PreparedLM
    records: LMRecords
    compressor: TrainedNugget2D = produced_by(COMPRESSOR_STAGE)


def check_lengths(cfg: EfficiencyEval, prompt: int, positions: int, available: int, source: str) -> None:
    """Refuse, before any measurement, a context that does not fit the LM or the text."""
    longest = max(cfg.contexts)
    if (need := longest + prompt + cfg.warmup_tokens + cfg.steps) > positions:
        raise ValueError(f"{KEY}.contexts: {longest} document tokens + a {prompt}-token prompt + "
                         f"{cfg.warmup_tokens + cfg.steps} generated = {need} positions, more than the base LM's "
                         f"{positions} (max_position_embeddings); lower the context")
    train = cfg.train_batch * (cfg.train_tokens + prompt + cfg.train_answer_tokens) if cfg.train_tokens else 0
    if max(longest, train) > available:
        raise ValueError(f"{KEY}.contexts / train_tokens: {max(longest, train)} tokens needed, but {source} holds "
                         f"{available}; lower them or use a split with more documents ({KEY}.split)")
    if cfg.train_tokens and cfg.train_tokens + prompt + cfg.train_answer_tokens > positions:
        raise ValueError(f"{KEY}.train_tokens: {cfg.train_tokens} + prompt {prompt} + answer "
                         f"{cfg.train_answer_tokens} exceeds the base LM's {positions} positions")


def _samples(costs: list[DecodeCost]) -> list[dict]:
    return [{"system": c.system.label, "context": c.context, "repeat": i, "ms_per_token": ms}
            for c in costs for i, ms in enumerate(c.ms)]


class EvalEfficiency(Stage[EfficiencyConfig, EfficiencyInputs, EvalTable]):
    name = "eval_efficiency"
    uses_device = True

    @classmethod
    def demand(cls, sections: dict[str, Any]) -> Demand:
        """Every CPU of the cluster (`resources.WHOLE`): its timings are taken alone, so the stage
        starts only when no other stage runs, and none starts beside it."""
        return Demand({**super().demand(sections), "CPU": WHOLE}, lower="")

    def compute(self, ctx: StageContext, config: EfficiencyConfig, inputs: EfficiencyInputs) -> None:
        # the stage holds every CPU (`demand`); its task was started with one thread (Ray's OMP_NUM_THREADS)
        threads = torch.get_num_threads()
        torch.set_num_threads(len(os.sched_getaffinity(0)))
        try:
            self._measure(ctx, config, inputs)
        finally:
            torch.set_num_threads(threads)  # a Ray worker process runs other tasks after this one

    def _measure(self, ctx: StageContext, config: EfficiencyConfig, inputs: EfficiencyInputs) -> None:
        cfg = config.efficiency
        records = read_records(inputs.records.records("qa"), cfg.split, 0)
        model, base = inputs.compressor.load_from(inputs.prepared.path, ctx.device, config.dtype)
        tokenizer = base.tokenizer()
        _, pad_id = eos_and_pad(tokenizer)
        fmt = PromptFormat(config.prompts.format, tokenizer)
        stream = encode(tokenizer, ["\n\n".join(r["document"] for r in records)])[0]
        prompt = encode(tokenizer, [fmt.parts(records[0]["document"], records[0]["instruction"])[1]])[0]
        positions = int(model.lm.config.max_position_embeddings)
        check_lengths(cfg, len(prompt), positions, len(stream), f"qa.jsonl's {cfg.split} documents")
        bandwidth = copy_bandwidth(model.device, cfg.bandwidth_mb)
        log.info("eval_efficiency: memory bandwidth %s", bandwidth.describe())
        systems = decode_systems(cfg.ratios, cfg.presses)
        prompt_ids = torch.tensor([prompt], device="cpu")  # host tokens; measure_context places them
        soft, presses = inputs.compressor.soft_prompt, press_config(config.presses)
        decode: list[DecodeCost] = []
        for n in sorted(cfg.contexts):
            log.info("eval_efficiency: context %d tokens, %d systems x %d repeats", n, len(systems), cfg.repeats)
            decode += measure_context(model, torch.tensor([stream[:n]], device="cpu"), prompt_ids, systems,
                                      warmup=cfg.warmup_tokens, steps=cfg.steps, repeats=cfg.repeats,
                                      prefill_repeats=cfg.prefill_repeats, press_config=presses,
                                      soft_prompt=soft, pad_id=pad_id)
        train = []
        if cfg.train_tokens:
            width = cfg.train_tokens + len(prompt) + cfg.train_answer_tokens
            ids = torch.tensor([stream[i * width : (i + 1) * width] for i in range(cfg.train_batch)], device="cpu")
            base_lm = place_model(base.causal_lm(config.dtype), ctx.device, config.dtype)
            log.info("eval_efficiency: training steps, %d x %d tokens", cfg.train_batch, width)
            train = train_costs(model, base_lm, ids, len(prompt), cfg.train_answer_tokens, cfg.train_steps)
        where = torch.cuda.get_device_name(model.device) if model.device.type == "cuda" else \
            f"CPU, {torch.get_num_threads()} threads"
        setting = f"train_nugget2d's compressor on {base.path.name}, {config.dtype}, {where}"
        table = efficiency_table(decode, train, bandwidth, setting, cfg.warmup_tokens, cfg.steps)
        ctx.log_metrics({"bandwidth_gbs": bandwidth.gbs})
        publish(ctx, table, _samples(decode))
