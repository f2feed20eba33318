"""MLflow by its conventions: sample sizes (``<name>_n``, ``<name>/n``) are params of the
run, not metrics (`stages.framework.tracking`); no Ray."""

from __future__ import annotations

import pytest
from mlflow.exceptions import MlflowException

from stages.framework.tracking import MetricBuffer, Tracker, is_sample_size, table_columns


def _tracker(tmp_path) -> Tracker:
    return Tracker(f"sqlite:///{tmp_path}/mlflow.db", "conventions", artifact_location=str(tmp_path / "artifacts"))


def test_sample_sizes_are_named_by_the_convention():
    assert is_sample_size("best_dev_loss_n") and is_sample_size("nugget_table2/colbart/pi/n")
    assert not is_sample_size("bleu") and not is_sample_size("train/tokens_per_s") and not is_sample_size("n_layers")


def test_step_less_sample_sizes_become_params(tmp_path):
    tracker = _tracker(tmp_path)
    run = tracker.start_run("stage", {})
    run.log_metrics({"bleu": 12.5, "bleu_n": 40, "row/n": 3.0, "ratio_n": 0.5})
    data = tracker.client.get_run(run.run_id).data
    assert data.metrics == {"bleu": 12.5}
    assert data.params == {"bleu_n": "40", "row/n": "3", "ratio_n": "0.5"}
    run.log_metrics({"bleu_n": 40})  # the same n again (a cached stage's record): no error, still a param
    assert tracker.client.get_run(run.run_id).data.params["bleu_n"] == "40"


def test_a_step_wise_sample_size_is_one_param_logged_once(tmp_path):
    tracker = _tracker(tmp_path)
    run = tracker.start_run("fit", {})
    buffer = MetricBuffer(run, prefix="tsdae_ae.", flush_seconds=3600)
    buffer.add({"eval/dev_loss": 8.3, "eval/dev_loss_n": 4800}, step=0)
    buffer.add({"eval/dev_loss": 6.1, "eval/dev_loss_n": 4800}, step=10)
    buffer.flush()
    client = tracker.client
    assert [m.step for m in client.get_metric_history(run.run_id, "tsdae_ae.eval/dev_loss")] == [0, 10]
    assert client.get_metric_history(run.run_id, "tsdae_ae.eval/dev_loss_n") == []
    assert client.get_run(run.run_id).data.params == {"tsdae_ae.eval/dev_loss_n": "4800"}


def test_table_columns_are_the_union_of_the_rows_keys():
    assert table_columns([{"a": 1}, {"b": 2, "a": 3}]) == {"a": [1, 3], "b": [None, 2]}


def test_a_changed_sample_size_is_refused_not_overwritten(tmp_path):
    run = _tracker(tmp_path).start_run("stage", {})
    run.log_metrics({"bleu_n": 40})
    with pytest.raises(MlflowException):
        run.log_metrics({"bleu_n": 41})
