"""Stage ``eval_harness``: the trained Nugget2D models and the training-free baselines as
EleutherAI lm-evaluation-harness models, on the harness's tasks (docs/harness.md).

On only where ``eval.harness.enabled`` is true (``Stage.switch``: off, the DAG has no such stage
and nothing imports lm_eval); on without lm_eval installed, the preflight stops the run with one
line naming the extra. Tasks (``eval.harness.tasks``): the local ones, written by this stage into
its output (``tasks/``: JSON lines + YAML, `stages.nugget2d.harness.tasks`) from build_lm's
records, one or more per request type of the harness: ``nugget_qa`` (generate_until),
``nugget_qa_choice`` and ``nugget_cloze`` (multiple_choice), ``nugget_lm_<corpus>``
(loglikelihood_rolling); any other name is a task the
harness registers (its dataset comes from the hub: a user with network).

Systems (``eval.harness.systems``), each `stages.nugget2d.harness.lm.Nugget2DHarnessLM` at the
KV budget of ``eval.harness.ratio``: for loglikelihood / generate_until requests the
``train_nugget2d`` compressor (as eval_qa reads it) and, for the baselines (Full, the presses,
NoDoc), its base LM; for loglikelihood_rolling the ``train_nugget2d_ar`` model with Lambda from
``calibrate_threshold`` (as eval_lm reads them). A system that cannot answer a task's request
type gets a row saying so, with the reason. Each model is loaded once.

Outputs: the `stages.artifacts.evaluate.EvalTable` (a row per task and system: every metric of
the harness with n and its 95% interval: Wilson for a proportion, a bootstrap over the documents for
a perplexity, else ± 1.96 · the harness's stderr, `stages.nugget2d.harness.results`; the report
collects it),
``examples.jsonl`` (one row per example and system: the request as the model read it, the
target, the output, the per-sample metrics; MLflow table ``tables/examples.json``), the harness's
own results JSON per system (``harness/``), the local tasks (``tasks/``), and the stderrs as
MLflow metrics ``<task> <system>/<metric>_stderr``.
"""

from __future__ import annotations

import functools
import json
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from stages.artifacts.evaluate import EvalTable, TableRow
from stages.common.progress import fmt_duration, progress_logger
from stages.common.records import read_records
from stages.evaluation.publish import publish
from stages.framework import quiet
from stages.framework.contract import produced_by, section
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import CalibratedThreshold, LMRecords, PreparedLM, TrainedNugget2D
from stages.nugget2d.config import LOCAL_HARNESS_TASKS, WHOLE_CONTEXT, HarnessEval, PressSection
from stages.nugget2d.harness.results import (
    INTERVAL_NOTE,
    columns,
    flags,
    not_applicable_row,
    sample_rows,
    stderr_metrics,
    system_rows,
)
from stages.nugget2d.harness.run import evaluate, harness_missing, request_types, task_manager
from stages.nugget2d.harness.settings import ROLLING_SYSTEMS
from stages.nugget2d.harness.tasks import (
    LocalTask,
    cloze_task,
    qa_choice_task,
    qa_task,
    rolling_task,
    write_tasks,
    write_yamls,
)
from stages.nugget2d.lm.presses import press_config
from stages.nugget2d.lm.segments import read_segments

LOG = progress_logger("nugget.eval_harness")
COMPRESSOR_STAGE = "train_nugget2d"
AR_STAGE = "train_nugget2d_ar"
ROLLING = "loglikelihood_rolling"


@dataclass(frozen=True)
class HarnessConfig:
    harness: HarnessEval = section("eval.harness")
    presses: PressSection = section("eval.presses")
    dtype: str = section("eval.dtype")
    seed: int = section("run.seed")


@dataclass(frozen=True)
class HarnessInputs:
    prepared: PreparedLM
    records: LMRecords
    calibrated: CalibratedThreshold
    compressor: TrainedNugget2D = produced_by(COMPRESSOR_STAGE)
    autoregressive: TrainedNugget2D = produced_by(AR_STAGE)


def local_tasks(cfg: HarnessEval, records: LMRecords, decode: Any, seed: int) -> list[LocalTask]:
    """The local tasks ``cfg.tasks`` names, from build_lm's ``records`` of ``cfg.split`` (each at
    most ``cfg.limit`` documents); ``decode`` turns LM segment ids into text."""
    stand_ins = records.stand_ins()
    limit = cfg.limit
    # every record of the split, each file read once (three tasks read the QA records)
    split_records = functools.cache(lambda task: read_records(records.records(task), cfg.split, 0))
    out = []
    for name in (n for n in cfg.tasks if n in LOCAL_HARNESS_TASKS):
        if name == "nugget_qa":
            qa = split_records("qa")
            out.append(qa_task(qa[:limit] if limit else qa, stand_ins.get("qa", "build_lm's QA records")))
        elif name == "nugget_qa_choice":  # the wrong answers come from every record of the split
            out.append(qa_choice_task(split_records("qa"), stand_ins.get("qa", "build_lm's QA records"),
                                      cfg.cloze_choices, seed, limit))
        elif name == "nugget_cloze":
            texts = {r["document"]: r["id"] for task in ("qa", "summarization") for r in split_records(task)}
            documents = [(i, t) for t, i in texts.items()]
            out.append(cloze_task(documents, cfg.cloze_choices, seed, limit))
        else:
            corpus = name.removeprefix("nugget_lm_")
            segments = read_segments(records.segments(corpus), cfg.split, limit)
            out.append(rolling_task(corpus, [(f"{corpus}-{i}", decode(distant + recent))
                                             for i, (distant, recent) in enumerate(segments)],
                                    stand_ins.get(corpus, "build_lm segments")))
    return out


def unanswerable(system: str, request_type: str) -> str:
    """Why ``system`` cannot answer ``request_type`` ("" when it can): SnapKV has no
    token-by-token form (the harness model raises for it, `settings.check_rolling`)."""
    if request_type == ROLLING and system not in ROLLING_SYSTEMS:
        return (f"{system} ranks the context by the attention of a prompt's last tokens, which a token-by-token "
                "stream (loglikelihood_rolling) does not have")
    return ""


class EvalHarness(Stage[HarnessConfig, HarnessInputs, EvalTable]):
    name = "eval_harness"
    uses_device = True
    switch = "eval.harness.enabled"

    @classmethod
    def config_errors(cls, sections: dict[str, Any]) -> list[str]:
        if not sections["eval.harness"].enabled:  # off: not in the DAG, nothing to run
            return []
        missing = harness_missing()
        return [f"eval.harness.enabled is true but {missing} (or set eval.harness.enabled=false)"] if missing else []

    def compute(self, ctx: StageContext, config: HarnessConfig, inputs: HarnessInputs) -> None:
        from stages.nugget2d.harness.lm import Nugget2DHarnessLM

        cfg = config.harness
        # the tasks first, checked before any model loads: build_lm's segments are the LM role's tokens
        segment_tokenizer = inputs.prepared.base().tokenizer()
        tasks = local_tasks(cfg, inputs.records,
                            lambda ids: segment_tokenizer.decode(ids, skip_special_tokens=True), config.seed)
        task_dir = ctx.output_dir / "tasks"
        write_tasks(task_dir, tasks)
        with tempfile.TemporaryDirectory() as run_dir:  # the YAMLs naming this folder's data files
            write_yamls(Path(run_dir), tasks, task_dir)
            manager = task_manager(Path(run_dir), cfg.tasks, LOCAL_HARNESS_TASKS)
            types = request_types(cfg.tasks, manager)
            rolling = [n for n in cfg.tasks if ROLLING in types[n]]
            if any(types[n] - {ROLLING} and ROLLING in types[n] for n in cfg.tasks):
                raise ValueError("eval.harness.tasks: a group mixing loglikelihood_rolling with other request types "
                                 f"({[n for n in rolling if types[n] != {ROLLING}]}); name its tasks instead")
            contextual = [n for n in cfg.tasks if n not in rolling]
            calibrated = inputs.calibrated
            groups = []  # (model, tokenizer, tasks, soft prompt): each model loaded once
            for source, names, soft in ((inputs.compressor, contextual, inputs.compressor.soft_prompt),
                                        (inputs.autoregressive, rolling, False)):
                if names:
                    model, base = source.load_from(inputs.prepared.path, ctx.device, config.dtype)
                    groups.append((model, base.tokenizer(), names, soft))
            rows: list[TableRow] = []
            examples: list[dict[str, Any]] = []
            stderrs: dict[str, float] = {}
            harness_dir = ctx.output_dir / "harness"
            harness_dir.mkdir()
            # (row label, system, KV budget): the configured systems at ratio, then Full on everything
            runs = [(s, s, cfg.ratio) for s in cfg.systems] + ([(WHOLE_CONTEXT, "full", 1.0)] if cfg.whole_context else [])
            # one line per system and model group: lm_eval's own bars are off in a stage (quiet), and a
            # small profile's harness runs for half an hour
            done, total, started = 0, len(runs) * len(groups), time.monotonic()
            for label, system, ratio in runs:
                for model, tok, names, soft in groups:
                    answerable = []
                    for n in names:
                        reasons = sorted({r for t in types[n] for r in [unanswerable(system, t)] if r})
                        if reasons:
                            rows.append(not_applicable_row(n, label, "; ".join(reasons)))
                        else:
                            answerable.append(n)
                    done += 1
                    if not answerable:
                        continue
                    lm = Nugget2DHarnessLM.from_model(
                        model, tok, system=system, ratio=ratio, context=cfg.context,
                        recent_tokens=cfg.recent_tokens, threshold=calibrated.threshold if names is rolling else None,
                        batch_size=cfg.batch_size, max_gen_toks=cfg.max_gen_toks, soft_prompt=soft,
                        press=press_config(config.presses), progress=quiet.is_verbose())
                    result = evaluate(lm, answerable, manager, num_fewshot=cfg.num_fewshot, limit=cfg.limit,
                                      bootstrap_iters=cfg.bootstrap_iters, seed=config.seed)
                    group = "rolling" if names is rolling else "context"
                    (harness_dir / f"{label}_{group}.json").write_text(
                        json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=2, default=str))
                    rows += system_rows(label, result)
                    stderrs |= stderr_metrics(label, result)
                    elapsed = time.monotonic() - started
                    LOG.info("[eval_harness] %d/%d %s: %s done (%s, eta %s)", done, total, label, ", ".join(answerable),
                             fmt_duration(elapsed), fmt_duration(elapsed / done * (total - done)))
                    settings = {"ratio": ratio, "context": cfg.context, "recent_tokens": cfg.recent_tokens}
                    for task, samples in result.get("samples", {}).items():
                        kind = result["configs"][task]["output_type"]
                        examples += sample_rows(label, task, kind, samples, settings)
        flagged = flags(examples)
        rows = [replace(r, flag=flagged[r.system]) if r.system in flagged else r for r in rows]
        order = {n: i for i, n in enumerate(cfg.tasks)}
        rows.sort(key=lambda r: order.get(r.system.rsplit(" ", 1)[0], len(order)))  # by task, systems in order
        table = EvalTable(
            f"lm-evaluation-harness: Nugget2D vs the baselines at r = {cfg.ratio:g}", columns(rows), rows,
            notes=self.notes(cfg, calibrated, rolling, tasks), stand_in="; ".join(t.stand_in for t in tasks))
        ctx.set_tags({"stand_in": table.stand_in or "none", "harness_tasks": ",".join(cfg.tasks)})
        publish(ctx, table, examples)
        ctx.log_metrics(stderrs)
        for path in sorted(harness_dir.iterdir()):
            ctx.log_artifact(path)

    @staticmethod
    def notes(cfg: HarnessEval, calibrated: CalibratedThreshold, rolling: list[str],
              tasks: list[LocalTask]) -> list[str]:
        """What the table's numbers are: the interval, the budget, the models, the stand-ins."""
        notes = [
            INTERVAL_NOTE,
            f"Every system at the KV budget of r = {cfg.ratio:g}: ceil(r n) positions for the n tokens it compresses; "
            + ("the context is compressed but its last token" if cfg.context == "whole" else
               f"the context is compressed but its last {cfg.recent_tokens} tokens, read as plain tokens")
            + f"; nugget2d: {COMPRESSOR_STAGE}'s model, full / presses / nodoc: its base LM.",
        ]
        if cfg.whole_context:
            notes.append(f"{WHOLE_CONTEXT}: Full at r = 1, the base LM reading the whole context: the reference a "
                         "budgeted system is compared to (with nodoc, the other end: no context)"
                         + (f"; on {', '.join(rolling)} the whole document, as lm_eval's hf model scores it (every "
                            "earlier token in view up to the base LM's max length, that model's windows past it)"
                            if rolling else "") + ".")
        if rolling:
            notes.append(f"{', '.join(rolling)}: loglikelihood_rolling, each system's stream as eval_lm's; nugget2d: "
                         f"{AR_STAGE}'s model with Lambda = {calibrated.threshold:.4f} from calibrate_threshold "
                         f"(calibrated for r = {calibrated.ratio:g}).")
        notes += [f"{t.name}: {t.stand_in}." for t in tasks]
        return notes
