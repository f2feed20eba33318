"""Fits on the pipeline's private Ray run without Ray Train's placement-group cleaner
(`stages.training.ray_trainer`): its state-API queries need the dashboard that Ray lacks, and
its stop timed out with a traceback after fits (5 in one paper rehearsal)."""

from __future__ import annotations

import ray.train

from stages.framework import private_ray
from stages.training.ray_trainer import CLEANER_CALLBACK, torch_trainer, without_cleaner


class PlacementGroupCleanerCallback:  # the name is what is matched
    pass


class OtherCallback:
    pass


def test_the_cleaner_is_dropped_only_on_the_private_ray():
    callbacks = [OtherCallback(), PlacementGroupCleanerCallback()]
    assert [type(c).__name__ for c in without_cleaner(callbacks, private=True)] == ["OtherCallback"]
    assert without_cleaner(callbacks, private=False) == callbacks


def _callback_names(trainer) -> list[str]:
    return [type(c).__name__ for c in trainer._create_default_callbacks()]


def test_a_trainer_on_the_private_ray_has_no_cleaner(monkeypatch):
    scaling = ray.train.ScalingConfig(num_workers=1)
    monkeypatch.setenv(private_ray.ENV, "1")  # what pipelines.cli marks, and every stage task inherits
    names = _callback_names(torch_trainer(lambda: None, scaling_config=scaling))
    assert CLEANER_CALLBACK not in names and "BackendSetupCallback" in names  # the other defaults stay
    monkeypatch.setenv(private_ray.ENV, "0")  # a cluster with a dashboard: Ray Train's own defaults
    assert CLEANER_CALLBACK in _callback_names(torch_trainer(lambda: None, scaling_config=scaling))
    # Ray Train itself still creates the cleaner: the day it stops, this says the workaround can go
    assert CLEANER_CALLBACK in _callback_names(ray.train.torch.TorchTrainer(lambda: None, scaling_config=scaling))


def test_stage_tasks_carry_the_mark(monkeypatch):
    monkeypatch.delenv(private_ray.ENV, raising=False)
    assert private_ray.runtime_env_vars() == {private_ray.ENV: "0"}
    private_ray.mark()
    assert private_ray.runtime_env_vars() == {private_ray.ENV: "1"}
