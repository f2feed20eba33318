"""Stage ``train_nugget_lm``: the language models of Nugget table 3 (§6.2, appendix B.2).

Each system is the seq2seq model's decoder used as an LM over windows of
``train.nugget_lm.segment_tokens`` tokens, reading the ``h`` segments before the window
through its cross-attention memory (`nugget_core.NuggetLM`):

=================  =============================================================================
``nugget_r<r>``    Nugget at ratio ``r`` (one per ``ratios``; paper: 0.05 and 0.1)
``tsdae``          TSDAE: one mean-pooled vector per segment
``compressive``    Compressive-Transformer-style memory: encoder states mean-pooled in chunks
                   of ``compressive_chunk`` tokens of the segment's text, its special tokens
                   left out (paper: 512 tokens into 32 vectors, the memory of r = 0.05 at h = 4)
``transformer``    no memory: the plain Transformer LM, table 3's h = 0 row
=================  =============================================================================

Every system starts from an autoencoder (appendix B.2): the Nugget LMs, the compressive
and the transformer baselines from ``train_nugget``'s AE model (the paper starts each
Nugget LM from the AE model of its own ratio, and the baselines from r = 0.1's; one AE
model at ``nugget.ratio`` serves all here, its scorer reused at each ratio), TSDAE from
``train_baselines``' ``tsdae_ae``. One Ray Train fit trains them in turn
(`stages.training.sequence`), with the job settings ``train.nugget_lm``.

Output: `stages.nugget.artifacts.models.TrainedNuggetLM`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import NuggetLMCorpus, TokenizerFolder
from stages.nugget.artifacts.models import (
    TrainedBaselines,
    TrainedNugget,
    TrainedNuggetLM,
    decoder_token_ids,
)
from stages.nugget.nugget_lm_task import NuggetLMTask
from stages.training.launch import check_resources, export_finished, final_metrics, fit_sequence
from stages.training.model_card import document_models
from stages.training.storage import clear_storage

if TYPE_CHECKING:
    from stages.config.schema import Seq2SeqModel
    from stages.nugget.config import NuggetLMJob

MEMORY = {"tsdae": "mean", "compressive": "chunk_mean", "transformer": "none"}


def system_specs(job: NuggetLMJob) -> list[dict[str, Any]]:
    """One record per system of ``train.nugget_lm``: name, memory, ratio, its table-3 row."""
    specs = [{"system": f"nugget_r{r:g}", "memory": "nugget", "ratio": float(r), "paper_row": f"nugget_{r:g}"}
             for r in job.ratios]
    specs += [{"system": name, "memory": MEMORY[name], "ratio": None, "paper_row": name} for name in job.baselines]
    return specs


@dataclass(frozen=True)
class NuggetLMConfig:
    job: NuggetLMJob = section("train.nugget_lm")
    seq2seq: Seq2SeqModel = section("model.seq2seq")
    seed: int = section("run.seed")
    # what the autoencoders it starts from are (checked by config_errors)
    nugget_objective: str = section("train.nugget.objective")
    baseline_systems: list[str] = section("eval.baselines.systems")


@dataclass(frozen=True)
class NuggetLMInputs:
    tokenizer: TokenizerFolder
    corpus: NuggetLMCorpus
    nugget: TrainedNugget  # the AE model every system but TSDAE starts from
    baselines: TrainedBaselines  # its tsdae_ae: where TSDAE starts


class TrainNuggetLM(Stage[NuggetLMConfig, NuggetLMInputs, TrainedNuggetLM]):
    name = "train_nugget_lm"
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs
    train_job = "train.nugget_lm"  # the executor reserves its workers (one fit at a time)

    @classmethod
    def config_errors(cls, sections: dict[str, Any]) -> list[str]:
        """Every system starts from an autoencoder (Nugget app. B.2)."""
        found = []
        if sections["train.nugget.objective"] != "ae":
            found.append(f"train.nugget.objective: value {sections['train.nugget.objective']!r}; train_nugget_lm "
                         "starts its Nugget LMs from train_nugget's model, which must be the AE one (or leave "
                         "train_nugget_lm out: run.targets)")
        if "tsdae" in sections["train.nugget_lm"].baselines and "tsdae_ae" not in sections["eval.baselines.systems"]:
            found.append("train.nugget_lm.baselines: 'tsdae' starts from train_baselines' tsdae_ae; add it to "
                         "eval.baselines.systems or drop 'tsdae'")
        return found

    def compute(self, ctx: StageContext, config: NuggetLMConfig, inputs: NuggetLMInputs) -> None:
        job = config.job
        check_resources(job, "train.nugget_lm")
        nugget = inputs.nugget
        if nugget.objective != "ae":  # the config check catches this first; an edited artifact would not
            raise ValueError(f"train_nugget's model is {nugget.objective!r}; the Nugget LMs start from an AE model")
        specs = system_specs(job)
        inits = {s["system"]: nugget.model_dir for s in specs}
        origin = dict.fromkeys(inits, f"train_nugget (AE, r={nugget.ratio:g})")
        if "tsdae" in inits:
            tsdae = [r for r in inputs.baselines.systems if r["system"] == "tsdae_ae"]
            if not tsdae:
                raise ValueError("train.nugget_lm.baselines has 'tsdae' but train_baselines trained no tsdae_ae")
            inits["tsdae"] = inputs.baselines.model_dir(tsdae[0])
            origin["tsdae"] = "train_baselines (tsdae_ae)"
        start, pad = decoder_token_ids(nugget.model_dir)
        tokenizer_dir = str(inputs.tokenizer.path)
        models = []
        for i, spec in enumerate(specs, 1):
            print(f"[train_nugget_lm] system {i}/{len(specs)}: {spec['system']} (memory {spec['memory']}, "
                  f"starts from {origin[spec['system']]})", flush=True)
            models.append((spec["system"], NuggetLMTask(
                corpus=inputs.corpus, tokenizer_dir=tokenizer_dir, init_dir=str(inits[spec["system"]]),
                memory=spec["memory"], ratio=spec["ratio"], chunk_tokens=job.compressive_chunk,
                segment_tokens=job.segment_tokens, histories=list(job.histories), decoder_start_id=start, pad_id=pad,
                dev_examples=job.dev_examples, seed=config.seed,
                attn_implementation=config.seq2seq.attn_implementation,
            )))
        if ctx.forced:  # never resume a forced recompute from an older attempt
            clear_storage(ctx.work_uri, "nugget_lm")
        finished = fit_sequence(models, job, ctx.work_uri, "nugget_lm", config.seed, ctx.logger)
        records = []
        for spec in specs:
            name = spec["system"]
            state = export_finished(finished[name], TrainedNuggetLM.system_dir(ctx.output_dir, name))
            records.append({**spec, "segment_tokens": job.segment_tokens,
                            "histories": [] if spec["memory"] == "none" else list(job.histories),
                            "init": origin[name], "model_dir": f"systems/{name}/model",
                            "dev_loss": state["best_dev_loss"]})
            ctx.log_metrics(final_metrics(state, prefix=name))
        clear_storage(ctx.work_uri, "nugget_lm")
        document_models(ctx, job, {TrainedNuggetLM.system_dir(ctx.output_dir, name) / "model": task
                                   for name, task in models})
        TrainedNuggetLM(ctx.output_dir, records).write(ctx.output_dir)
        ctx.log_metrics({"systems": len(records)})
