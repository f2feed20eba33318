"""A rehearsal changes a profile's sizes only: which fields it may change, and the check.

``rehearsal=true`` merges ``conf/rehearsal/<profile>.yaml`` over the profile (before the
command line's overrides), so that a profile meant for GPUs runs its whole DAG on CPU in
minutes: the same stages, objectives, backends, precisions, tokenizer families, prompt
formats and cross-stage relations, with tiny models, 2-3 steps per training job and a
handful of examples per evaluation. Whatever the rehearsal does not exercise is a bug a
cluster user meets after hours of GPU time, so the overlay is held to sizes: the loader
compares the rehearsed config with the profile's own (same command line) and refuses any
difference outside the fields below.

A field may differ when it is
- a **size** (:data:`SIZE_FIELDS`): steps, batches, counts of examples / documents /
  workers, generation lengths of the evaluation, the width of a from-scratch model;
- **placement** (:data:`PLACEMENT_FIELDS`): GPU or CPU, CPUs of a local Ray;
- a **label** (:data:`LABEL_FIELDS`): the report's title, which says it is a rehearsal;
- a **grid sample** (:data:`SUBSET_FIELDS`): a sweep axis keeping a non-empty subset of
  the profile's values (each rehearsed trial is one the profile runs; a full grid is a
  size: each trial is a Ray Train fit with a fixed cost of its own, docs/performance.md).

External inputs (datasets, checkpoints) are not in the overlay: ``make rehearse`` points
them at local fixtures on the command line, which applies to both sides of the check.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

SIZE_FIELDS: tuple[str, ...] = (
    # training budgets
    "train.*.max_steps", "train.*.batch_size", "train.*.grad_accum", "train.*.num_workers",
    "train.*.eval_every", "train.*.checkpoint_every", "train.*.warmup_steps", "train.*.dev_examples",
    "train.*.early_stopping_patience", "train.sweep.max_concurrent_trials",
    # how much data is built and evaluated
    "data.max_docs", "data.*.max_docs", "data.*.max_train_examples", "data.*.max_dev_examples",
    "data.*.punkt_train_documents",
    "eval.max_examples", "eval.max_tasks", "eval.batch_size", "eval.analysis_docs", "eval.highlight_docs",
    "eval.probe_docs", "eval.*.max_examples", "eval.*.max_docs", "eval.*.max_segments", "eval.*.max_queries",
    "eval.*.batch_size", "eval.*.analysis_docs", "eval.*.highlight_docs", "eval.nugget_lm.max_doc_tokens",
    "eval.*.max_new_tokens", "eval.qa.lmsumm_max_new_tokens", "eval.re_downstream.max_iter",
    "eval.re_downstream.max_train", "eval.re_downstream.max_test", "eval.harness.limit", "eval.harness.max_gen_toks",
    "eval.efficiency.contexts", "eval.efficiency.repeats", "eval.efficiency.steps", "eval.efficiency.warmup_tokens",
    "eval.efficiency.prefill_repeats", "eval.efficiency.bandwidth_mb", "eval.efficiency.train_tokens",
    "eval.efficiency.train_answer_tokens", "eval.efficiency.train_batch", "eval.efficiency.train_steps",
    "calibrate.threshold.sample_docs", "calibrate.threshold.heldout_docs",
    # a from-scratch model's width (its depth stays: layer indices refer to it); the bottom layers
    # of a pretrained LM the profile keeps whole (stages/config/depth.py checks every layer index)
    "model.seq2seq.tiny.d_model", "model.seq2seq.tiny.heads", "model.seq2seq.tiny.ffn_dim",
    "model.seq2seq.tokenizer_vocab_size", "model.lm.keep_layers",
)
PLACEMENT_FIELDS: tuple[str, ...] = ("train.*.use_gpu", "run.device", "run.num_cpus")
LABEL_FIELDS: tuple[str, ...] = ("report.title", "rehearsal")
SUBSET_FIELDS: tuple[str, ...] = ("train.sweep.ratios", "train.sweep.scorer_layers", "train.sweep.objectives")


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """``{dotted.key: leaf}`` of a nested dict (lists are leaves)."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key, value in tree.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _matches(key: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(key, p) for p in patterns)


def non_size_differences(profile: dict[str, Any], rehearsed: dict[str, Any]) -> list[str]:
    """Every difference between a profile's config and its rehearsal that is not a size,
    a placement, a label or a grid sample: one line each naming the field and both values.
    Both arguments are the configs as nested dicts (``OmegaConf.to_container``)."""
    real, rehearsal = flatten(profile), flatten(rehearsed)
    found = []
    for key in sorted(set(real) | set(rehearsal)):
        before, after = real.get(key), rehearsal.get(key)
        if before == after or _matches(key, SIZE_FIELDS + PLACEMENT_FIELDS + LABEL_FIELDS):
            continue
        if _matches(key, SUBSET_FIELDS) and isinstance(before, list) and isinstance(after, list):
            if after and all(v in before for v in after):
                continue
            found.append(f"{key}: {after!r} is not a non-empty subset of the profile's {before!r}")
            continue
        found.append(f"{key}: the rehearsal sets {after!r}, the profile {before!r}")
    return found
