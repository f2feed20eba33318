"""Relations between config sections that a stage would otherwise find only when it ran, checked at
config load instead (so a ``--dry-run`` reports them all, with everything else that would
stop the run: `stages.framework.plan_checks`). Each check reads the config alone, never
data:

- ``data.re.max_train_examples`` caps the texts train_re trains on per sentence count: a
  cap below one global batch (``train.re.batch_size`` x ``num_workers``) cannot fill one
  step (`stages.training.batches.BatchSchedule` would refuse it only after the data is built);
- build_mt_docs holds a dev split only with ``data.mt.dev_split`` or a ``dev_fraction``,
  a test split only with a ``test_fraction``: train_nugget's dev loss reads dev, and
  eval_reconstruction / analyze_nuggets read ``eval.nugget_split`` (an empty split would
  fail them after the trainings).

build_lm's splits have their own module (`stages.config.lm_splits`). A schedule that does
less than it could (a warm-up as long as the fit, an early stopping patience beyond its
evaluations) is not refused: short smoke runs of a profile's jobs set exactly that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # schema imports this module
    from stages.config.schema import PipelineConfig


def re_batch_errors(cfg: PipelineConfig) -> list[str]:
    """A cap on train_re's texts smaller than one step's batch of all workers."""
    cap, job = cfg.data.re.max_train_examples, cfg.train.re
    batch = job.batch_size * job.num_workers
    if cap and cap < batch:
        return [f"data.re.max_train_examples: value {cap} cannot fill one batch of train.re.batch_size="
                f"{job.batch_size} x train.re.num_workers={job.num_workers} = {batch} texts; raise it (0 = all) "
                "or lower the batch"]
    return []


def mt_split_errors(cfg: PipelineConfig) -> list[str]:
    """Splits of build_mt_docs that its readers need and its settings leave empty."""
    mt, found = cfg.data.mt, []
    if not mt.dev_split and not mt.dev_fraction:
        readers = "train_nugget's dev loss" + (" and eval.nugget_split='dev'" if cfg.eval.nugget_split == "dev" else "")
        found.append(f"data.mt.dev_fraction: value 0 with data.mt.dev_split='' leaves build_mt_docs no dev split, "
                     f"which {readers} read; set one of them")
    if cfg.eval.nugget_split == "test" and not mt.test_fraction:
        found.append("eval.nugget_split: split 'test' of build_mt_docs is empty with data.mt.test_fraction=0 "
                     "(eval_reconstruction and analyze_nuggets read it); use dev or a test_fraction")
    return found


def relation_errors(cfg: PipelineConfig) -> list[str]:
    """Every relation above that does not hold in ``cfg`` (a `PipelineConfig`)."""
    return re_batch_errors(cfg) + mt_split_errors(cfg)
