"""What `stages.costs` counts the way a stage's own code does (the shared layer may not
import stage modules; tests/framework/test_import_layers.py) stays equal to that code, and
every registered stage has a cost entry."""

from __future__ import annotations

import pytest

from stages.config import load_config
from stages.costs import nugget, nugget2d, nugget2d_eval, restorable
from stages.costs.estimate import TRAIN
from stages.costs.plan import CPU_STAGES, ESTIMATORS, NOT_ESTIMATED, estimate
from stages.registry import DAG

PROFILES = ["tiny", "small", "gpu1", "paper"]


def config(profile: str, *more: str):
    return load_config([f"profile={profile}", *more], check=False)


@pytest.mark.parametrize("more", [[], ["train.re.configs=[a,b,c,d]", "train.re.beyond_one_sentence=table3",
                                   "train.re_retrieval.configs=[c,d]"],
                                  ["train.re.sentence_counts=[1]", "train.re_retrieval.sentence_counts=[1]",
                                   "train.re_retrieval.pretrained_baselines=false"]])
@pytest.mark.parametrize("profile", PROFILES)
def test_re_grid_and_retrieval_count_are_the_stages(profile, more):
    from stages.restorable.train_re import TABLE3, re_systems
    from stages.restorable.train_re_retrieval import retrieval_systems

    cfg = config(profile, *more)
    systems = re_systems(cfg.train.re)
    assert restorable.TABLE3 == TABLE3
    assert restorable.re_grid(cfg.train.re) == [(s["sentences"], s["config"], s["pooling"], s["decoder"])
                                               for s in systems]

    class Trained:  # train_re's output as retrieval_systems reads it
        def __init__(self):
            self.systems = systems

        def find(self, **kw):
            return [s for s in systems if all(s[k] == v for k, v in kw.items())]

    assert restorable.retrieval_count(cfg) == len(retrieval_systems(cfg.train.re_retrieval, Trained()))


@pytest.mark.parametrize("profile", PROFILES)
def test_train_nugget2d_fits_are_the_stages_models(profile):
    from stages.nugget2d.train_nugget2d import TrainNugget2D

    cfg = config(profile)
    variants = TrainNugget2D.variant_specs(cfg.train.nugget2d, cfg.nugget2d.ratio)
    assert len(nugget2d.train_nugget2d(cfg).work) == 1 + len(variants)


def test_baseline_kinds_are_the_stages():
    from stages.nugget.train_baselines import SYSTEMS

    assert set(nugget.BOTTLENECK) == {n for n, s in SYSTEMS.items() if s.bottleneck}
    assert set(nugget.SENTENCE_RATIO) == {n for n, s in SYSTEMS.items() if s.sentence_ratio}


def test_presses_and_icae_slots_are_the_stages():
    from nugget_core.nugget2d import icae_slots
    from stages.nugget2d.config import PRESS_SYSTEMS

    assert nugget2d_eval.PRESSES == PRESS_SYSTEMS
    assert all(nugget2d.nuggets(r, n) == icae_slots(r, n) for r in (0.05, 0.1, 0.33) for n in (16, 100, 512))


def test_every_stage_has_one_cost_entry():
    groups = [set(ESTIMATORS), set(CPU_STAGES), set(NOT_ESTIMATED)]
    assert set(DAG.order) == set().union(*groups) and sum(map(len, groups)) == len(DAG.order)
    for name in DAG.order:
        stage = DAG.stages[name]
        if stage.train_job:  # every Ray Train stage has a training estimate
            assert estimate(config("paper"), name).kind == TRAIN, name
        if stage.uses_device:  # a stage that runs models on the device is no CPU stage
            assert name not in CPU_STAGES, name
