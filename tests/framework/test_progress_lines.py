"""The driver's stage lines (progress prefix and ETA), the training progress line, run
names with key parameters, and the quiet defaults undone by --verbose (no Ray)."""

from __future__ import annotations

import logging
import os
import warnings

import pytest

from stages.common.progress import (
    TrainProgress,
    fmt_duration,
    progress_seconds,
    train_progress_line,
)
from stages.framework import quiet
from stages.framework.eta import eta_seconds, progress_prefix, speed_factor
from stages.framework.stage import Stage
from tests.framework.fake_stages import Headline


def test_progress_prefix_counts_elapsed_and_eta():
    assert progress_prefix(3, 27, 65, 750) == "[ 3/27 1m05s eta 12m30s]"
    assert progress_prefix(0, 27, 2, None) == "[ 0/27 2s eta ?]"
    assert fmt_duration(3725) == "1h02m" and fmt_duration(59.6) == "1m00s"


def test_eta_is_unknown_until_a_stage_ran_then_scaled_by_its_speed():
    estimates = {"a": 10.0, "b": 20.0, "c": 30.0}
    path = {"a": 60.0, "b": 50.0, "c": 30.0}  # a -> b -> c
    assert eta_seconds(estimates, {}, {}, ["a", "b", "c"], path, lanes=2) is None
    # a took twice its estimate: b then c, scaled by 2, one after the other
    assert speed_factor(estimates, {"a": 20.0}) == 2.0
    assert eta_seconds(estimates, {"a": 20.0}, {}, ["b", "c"], path, lanes=2) == pytest.approx(100.0)
    # b running for 15 s of its scaled 40: 25 left, then c's 60
    assert eta_seconds(estimates, {"a": 20.0}, {"b": 15.0}, ["c"], path, lanes=2) == pytest.approx(60.0)
    assert eta_seconds(estimates, {"a": 20.0, "b": 40.0, "c": 60.0}, {}, [], path, lanes=2) == 0.0


def test_eta_of_independent_stages_is_bound_by_the_lanes():
    estimates = {"x": 10.0, **{f"s{i}": 10.0 for i in range(4)}}
    path = {n: 10.0 for n in estimates}  # no edges: every stage is its own path
    pending = [f"s{i}" for i in range(4)]
    # four 10 s stages on 2 lanes: 20 s, not the 10 s of the longest path
    assert eta_seconds(estimates, {"x": 10.0}, {}, pending, path, lanes=2) == pytest.approx(20.0)


def test_train_progress_line_format():
    line = train_progress_line("train_nugget r=0.1 l=3", 120, 200, 6.2123, 3e-4, 12345.0, 40)
    assert line == "train_nugget r=0.1 l=3 step 120/200 loss 6.21 lr 3.0e-04 12.3k tok/s eta 40s"


def test_train_progress_prints_by_interval_and_at_the_last_step(caplog):
    caplog.set_level(logging.INFO, logger="nugget.train")
    progress = TrainProgress("t", max_steps=3, first_step=0, every=3600.0)
    assert progress.step(1, 1.0, 1e-3, 10) is None and progress.step(2, 1.0, 1e-3, 10) is None
    line = progress.step(3, 0.5, 1e-3, 10)
    assert line is not None and line.startswith("t step 3/3 loss 0.50") and line.endswith("eta 0s")
    assert [r.getMessage() for r in caplog.records if r.name == "nugget.train"] == [line]
    every = TrainProgress("t", max_steps=10, first_step=0, every=0.0)
    assert every.step(1, 1.0, 1e-3, 10) is not None  # interval 0: every step


def test_progress_interval_from_the_environment(monkeypatch):
    monkeypatch.delenv("NUGGET_PROGRESS_SECONDS", raising=False)
    assert progress_seconds() == 10.0
    monkeypatch.setenv("NUGGET_PROGRESS_SECONDS", "2.5")
    assert progress_seconds() == 2.5
    monkeypatch.setenv("NUGGET_PROGRESS_SECONDS", "soon")
    with pytest.raises(ValueError, match="NUGGET_PROGRESS_SECONDS='soon'"):
        progress_seconds()


def test_run_name_carries_key_params_from_declared_sections():
    from stages.config import load_config
    from stages.framework.keys import stage_sections

    cfg = load_config(["data.corpus_stats.top_words=7"])
    assert Headline.run_name(stage_sections(Headline, cfg)) == "headline top=7 title=nugget-pipeline report"

    class Undeclared(Stage):
        name = "undeclared"
        config_keys = ("report.title",)
        run_name_keys = ("r=nugget.ratio",)

    with pytest.raises(KeyError, match="nugget.ratio"):
        Undeclared.run_name(stage_sections(Undeclared, cfg))


@pytest.fixture
def restore_quiet():
    env = {k: os.environ.get(k) for k in quiet.QUIET_ENV}
    levels = {n: logging.getLogger(n).level for n in quiet.QUIET_LOGGERS}
    yield
    quiet.apply(verbose=True)
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    for n, level in levels.items():
        logging.getLogger(n).setLevel(level)


def test_quiet_applied_then_undone_by_verbose(restore_quiet, monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv(quiet.VERBOSE_ENV, raising=False)
    import ray.train.v2._internal.execution.context as train_context

    train_level = logging.getLogger("ray.train").level
    quiet.apply()  # no NUGGET_VERBOSE: quiet
    assert os.environ["TQDM_DISABLE"] == "1" and os.environ["TRANSFORMERS_VERBOSITY"] == "error"
    assert logging.getLogger("ray.train").level == logging.WARNING
    assert logging.getLogger("ray.data").level == logging.WARNING
    # Ray Train's "Reporting training result N" logger is named by its file, not ray.train
    assert logging.getLogger(train_context.__file__).level == logging.WARNING
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        quiet.apply(verbose=False)  # re-applied over "always": the known warning only is filtered
        with warnings.catch_warnings(record=True) as caught:
            warnings.warn("`is_gradient_checkpointing` is deprecated and will be removed in v6.",
                          FutureWarning, stacklevel=1)
            warnings.warn("some other future change", FutureWarning, stacklevel=1)
        assert [str(w.message) for w in caught] == ["some other future change"]
    ds = logging.getLogger("DeepSpeed")
    kept = logging.LogRecord("DeepSpeed", logging.WARNING, "", 0, "a real problem", None, None)
    dropped = logging.LogRecord("DeepSpeed", logging.WARNING, "", 0,
                                "Setting accelerator to CPU. If you have GPU or other accelerator, ...", None, None)
    assert ds.filter(kept) and not ds.filter(dropped)

    monkeypatch.setenv(quiet.VERBOSE_ENV, "1")
    quiet.apply()  # --verbose: everything back
    assert "TQDM_DISABLE" not in os.environ
    assert logging.getLogger("ray.train").level == train_level
    assert ds.filter(dropped)
    assert quiet.train_log_level() == "INFO" and quiet.tune_verbosity() == 1
    assert quiet.runtime_env_vars(True) == {"NUGGET_VERBOSE": "1"}
    assert quiet.runtime_env_vars(False)["RAY_DATA_DISABLE_PROGRESS_BARS"] == "1"


def test_ray_data_bars_follow_the_quiet_switch(monkeypatch):
    """The stages' Ray Data settings never force the dataset bars back on in a quiet run."""
    import ray.data

    from stages.framework import raydata

    ctx = ray.data.DataContext.get_current()
    saved = ctx.enable_progress_bars, ctx.print_on_execution_start
    try:
        monkeypatch.setenv(quiet.VERBOSE_ENV, "0")
        raydata.configure()
        assert not ctx.enable_progress_bars and not ctx.print_on_execution_start
        assert not ctx.enable_operator_progress_bars
        monkeypatch.setenv(quiet.VERBOSE_ENV, "1")
        raydata.configure()
        assert ctx.enable_progress_bars and ctx.print_on_execution_start
    finally:
        ctx.enable_progress_bars, ctx.print_on_execution_start = saved
