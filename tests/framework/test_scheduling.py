"""Resource-aware scheduling: stage demands, the ledger, the launch order (CPU, fast)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from pipelines.cli import main_full
from stages.framework import quiet
from stages.framework.dag import Dag, PlannedStage, critical_path
from stages.framework.resources import (
    ALL,
    WHOLE,
    Demand,
    DemandError,
    Ledger,
    Reservation,
    check_fits,
    section_value,
    task_demand,
    worker_demand,
)
from stages.framework.stage import Stage
from tests.framework.sched_stages import (
    HOGS_DAG,
    MIXED_DAG,
    RESERVE_DAG,
    TOO_BIG_DAG,
    Long,
    Short,
    Wide,
    times,
)

# ---------------------------------------------------------------- demands (no Ray)


def test_task_and_worker_demands():
    assert task_demand({}) == {"CPU": 1.0}  # Ray's default for a task
    assert task_demand({"num_cpus": 0}) == {}
    assert task_demand({"num_cpus": 1, "num_gpus": 0.5, "resources": {"big": 2}}) == {
        "CPU": 1.0, "GPU": 0.5, "big": 2.0}
    assert worker_demand(2, use_gpu=False) == {"CPU": 2.0}
    assert worker_demand(2, use_gpu=True) == {"GPU": 2.0}  # Ray Train: GPU workers ask no CPU


def test_stage_demand_declarations():
    job = SimpleNamespace(num_workers=3, use_gpu=False)

    class Trains(Stage):
        name, resources, train_job = "trains", {"num_cpus": 0}, "eval.baselines.train"

    class FansOut(Stage):
        name, resources, fans_out = "fans", {"num_cpus": 0}, True

    class Plain(Stage):
        name = "plain"

    d = Trains.demand({"eval.baselines": SimpleNamespace(train=job)})
    assert d == {"CPU": 3.0} and d.lower == "eval.baselines.train.num_workers"
    assert FansOut.demand({}) == {"CPU": ALL}
    assert Plain.demand({}) == {"CPU": 1.0}
    with pytest.raises(KeyError, match="not inside the declared config sections"):
        section_value({"nugget": 1}, "train.nugget")


def test_every_registered_stage_declares_a_resolvable_demand():
    from stages.config import load_config
    from stages.framework.keys import stage_sections
    from stages.registry import DAG

    cfg = load_config([])  # profile=tiny: every stage fits a 2-CPU machine
    for name in DAG.order:
        stage = DAG.get(name)
        demand = stage.demand(stage_sections(stage, cfg))
        check_fits(name, demand, {"CPU": 2.0})
        if stage.resources.get("num_cpus", 1) == 0:  # launches work of its own: declares it
            assert demand, f"stage {name} holds no CPU itself but declares no demand"
    sweep = DAG.get("sweep_nugget")
    assert sweep.demand(stage_sections(sweep, cfg)) == {"CPU": 2.0}  # 2 concurrent trials x 1 worker


# ---------------------------------------------------------------- ledger (no Ray)


def test_ledger_holds_and_releases():
    ledger = Ledger({"CPU": 2.0, "memory": 1e9})
    assert ledger.fits({"CPU": 2}) and ledger.fits({"CPU": ALL})
    ledger.take("a", {"CPU": 2})
    assert not ledger.fits({"CPU": 1}) and not ledger.fits({"CPU": ALL})
    assert ledger.fits({})  # a zero demand always fits
    ledger.release("a")
    ledger.take("b", {"CPU": 1})
    assert ledger.fits({"CPU": 1}) and not ledger.fits({"CPU": 2})
    assert ledger.free()["CPU"] == 1.0
    assert not ledger.fits({"GPU": 1})  # a resource the cluster lacks
    assert ledger.fits({"CPU": ALL})  # a fan-out starts on what is free ...
    ledger.take("c", {"CPU": ALL})
    assert ledger.held["c"] == {"CPU": 1.0}  # ... and holds all of it
    assert not ledger.fits({"CPU": 1}) and not ledger.fits({"CPU": ALL})
    ledger.release("b")
    ledger.take("d", {"CPU": ALL})
    assert ledger.held["d"] == {"CPU": 1.0} and ledger.free()["CPU"] == 0.0
    ledger.release("c"), ledger.release("d")
    ledger.take("e", {"CPU": ALL})
    assert ledger.held["e"] == {"CPU": 2.0}  # the whole idle cluster


def test_whole_waits_for_an_idle_cluster_and_holds_all_of_it():
    ledger = Ledger({"CPU": 4.0, "GPU": 1.0})
    ledger.take("a", {"CPU": 1})
    assert not ledger.fits({"CPU": WHOLE})  # one CPU is busy: a measurement taken alone waits
    assert ledger.reserve("m", {"CPU": WHOLE}, now=0.0).at == math.inf  # "a" has no expected end
    ledger.release("a")
    assert ledger.fits({"CPU": WHOLE, "GPU": 1})
    ledger.take("m", {"CPU": WHOLE, "GPU": 1})
    assert ledger.held["m"] == {"CPU": 4.0, "GPU": 1.0} and not ledger.fits({"CPU": ALL})
    check_fits("m", Demand({"CPU": WHOLE}), {"CPU": 2.0})  # never more than the cluster has
    from stages.config import load_config
    from stages.framework.keys import stage_sections
    from stages.registry import DAG

    stage = DAG.get("eval_efficiency")
    assert stage.demand(stage_sections(stage, load_config([])))["CPU"] == WHOLE


def test_reservation_lets_only_harmless_stages_pass():
    ledger = Ledger({"CPU": 2.0})
    ledger.take("a", {"CPU": 1}, expected_end=100.0)  # now = 0
    res = ledger.reserve("wide", {"CPU": 2}, now=0.0)
    assert (res.at, res.spare) == (100.0, {"CPU": 0.0})
    assert ledger.may_backfill({"CPU": 1}, seconds=60, now=0.0, res=res)  # ends before a does
    assert not ledger.may_backfill({"CPU": 1}, seconds=200, now=0.0, res=res)  # would delay wide
    ledger = Ledger({"CPU": 4.0})
    ledger.take("a", {"CPU": 3}, expected_end=50.0)
    res = ledger.reserve("wide", {"CPU": 2}, now=0.0)
    assert (res.at, res.spare) == (50.0, {"CPU": 2.0})
    assert ledger.may_backfill({"CPU": 1}, seconds=500, now=0.0, res=res)  # beside the reservation
    assert res.spare == {"CPU": 1.0}
    ledger.take("b", {"CPU": 1}, expected_end=500.0)
    assert not ledger.may_backfill({"CPU": ALL}, seconds=500, now=0.0, res=Reservation("w", 50.0, {"CPU": 0.0}))


def test_check_fits_names_stage_and_field():
    check_fits("s", Demand({"CPU": 2, "x": ALL}), {"CPU": 2})
    with pytest.raises(DemandError) as err:
        check_fits("train_nugget", Demand({"CPU": 3}, lower="train.nugget.num_workers"), {"CPU": 2})
    assert str(err.value) == ("stage 'train_nugget' needs CPU=3 at once but the Ray cluster has CPU=2; "
                              "lower train.nugget.num_workers")
    with pytest.raises(DemandError, match="needs GPU=1 .* has GPU=0"):
        check_fits("g", Demand({"GPU": 1}), {"CPU": 8})


def test_critical_path_ranks_the_longest_chain_first():
    a, b, c = (type(n, (Stage,), {"name": n, "expected_seconds": s})
               for n, s in (("a", 10), ("b", 100), ("c", 5)))
    c.upstream = ("a",)
    plan = [PlannedStage(a, "k", {}, False, False), PlannedStage(b, "k", {}, False, False),
            PlannedStage(c, "k", {"a": "k"}, False, False)]
    assert critical_path(plan) == {"a": 15.0, "b": 100.0, "c": 5.0}
    plan[1] = PlannedStage(b, "k", {}, True, False)  # a hit costs nothing
    assert critical_path(plan)["b"] == 0.0
    assert not math.isinf(sum(critical_path(plan).values()))


def test_past_seconds_reads_the_latest_manifest_of_the_same_profile_and_precision(tmp_path):
    """The scheduler's estimate of a stage is its latest output's duration under the same profile
    and precision: a small run is not estimated from a tiny one, nor an fp32 one from bf16's, and
    a manifest that names no profile (written before manifests did) stands for none."""
    import json

    from stages.framework.executor import past_seconds
    from stages.framework.store import MANIFEST, ArtifactStore

    fp32, bf16 = {"train.x": {"precision": "fp32"}}, {"train.x": {"precision": "bf16"}}
    for key, sec, when, profile, config in (
        ("k1", 5.0, "2026-01-01T00:00:00+0000", "tiny", fp32),
        ("k2", 9.0, "2026-02-01T00:00:00+0000", "tiny", fp32),
        ("k3", 400.0, "2026-03-01T00:00:00+0000", "small", fp32),
        ("k4", 3.0, "2026-04-01T00:00:00+0000", "tiny", bf16),
        ("k5", 1.0, "2026-05-01T00:00:00+0000", None, fp32),
    ):
        (tmp_path / "a" / key).mkdir(parents=True)
        manifest = {"seconds": sec, "finished_at": when, "config": config}
        if profile:
            manifest["profile"] = profile
        (tmp_path / "a" / key / MANIFEST).write_text(json.dumps(manifest))
    store = ArtifactStore(str(tmp_path))
    assert past_seconds(store, {"a": "tiny", "never_ran": "tiny"}) == {"a": 9.0}
    assert past_seconds(store, {"a": "small"}) == {"a": 400.0}
    assert past_seconds(store, {"a": "tiny/bf16"}) == {"a": 3.0}
    assert past_seconds(store, {"a": "gpu1"}) == {}


def test_table_estimates_follow_the_profile_and_precision():
    from stages.framework.estimates import table_seconds

    row = {"tiny": 60, "small": 400, "small/bf16": 250}
    assert table_seconds(row, "small", "bf16", 1.0) == 250
    assert table_seconds(row, "small", "fp32", 1.0) == 400
    assert table_seconds(row, "tiny", "bf16", 1.0) == 60  # no tiny/bf16 entry: tiny's
    assert table_seconds(row, "gpu1", None, 1.0) == 60  # a profile never measured: tiny's
    assert table_seconds(7, "small", "bf16", 1.0) == 7  # one number for every profile
    assert table_seconds(None, "small", None, 60.0) == 60.0


def test_dag_of_sched_stages_is_valid():
    assert set(MIXED_DAG.order) == {Long.name, Wide.name, Short.name}
    assert isinstance(HOGS_DAG, Dag)


# ---------------------------------------------------------------- on Ray (2 CPUs)


def _stage_lines(stderr: str) -> list[str]:
    """The executor's stage lines without their ``[k/N elapsed eta]`` prefix: ``<stage>
    <event> ...`` (the CLI's logging goes to stderr)."""
    return [ln.split("nugget.pipeline: ", 1)[1].split("] ", 1)[-1] for ln in stderr.splitlines()
            if "nugget.pipeline: [" in ln]


@pytest.mark.ray
def test_two_stages_that_each_need_the_cluster_never_overlap(ray_local, root, base_args, capsys, monkeypatch):
    monkeypatch.setenv(quiet.VERBOSE_ENV, "0")
    assert main_full(base_args, dag=HOGS_DAG) == 0
    (s1, e1), (s2, e2) = times(root, "hog1"), times(root, "hog2")
    assert e1 <= s2 or e2 <= s1, "two 2-CPU stages ran at once on a 2-CPU cluster"
    # one of them waited; without --verbose the scheduler's reasons stay out of the log
    err = capsys.readouterr().err
    assert "waits:" not in err and "critical path" not in err and " start " in err


@pytest.mark.ray
def test_small_stage_runs_beside_big_one_and_wide_waits(ray_local, root, base_args, capsys, monkeypatch):
    monkeypatch.setenv(quiet.VERBOSE_ENV, "0")  # restored after --verbose sets it
    assert main_full([*base_args, "--verbose"], dag=MIXED_DAG) == 0  # the waits lines: verbose only
    lines = _stage_lines(capsys.readouterr().err)
    (_, le), (ws, _), (_, se) = times(root, "long"), times(root, "wide"), times(root, "short")
    assert ws >= max(le, se), "the 2-CPU stage started while CPUs were held"
    events = [" ".join(ln.split()[:2]) for ln in lines]
    launches = [e.split()[0] for e in events if e.split()[1] == "start"]
    assert launches == ["long", "short", "wide"]  # longest path first, then what fits
    # short was submitted while long ran (its Ray worker may take seconds to start)
    assert events.index("short start") < events.index("long done")
    assert any(ln.startswith("wide") and "waits: needs CPU=2, free CPU=1" in ln for ln in lines)


@pytest.mark.ray
def test_stage_larger_than_cluster_fails_before_anything_runs(ray_local, root, base_args, capsys):
    assert main_full(base_args, dag=TOO_BIG_DAG) == 1
    err = capsys.readouterr().err
    assert "stage 'too_big' needs CPU=3 at once but the Ray cluster has CPU=2; lower too_big.cpus" in err
    assert "no stage was started" in err
    assert not (root / "hog1").exists() and not (root / "too_big").exists()


@pytest.mark.ray
def test_wide_stage_on_the_longer_path_is_not_starved_by_a_narrow_one(ray_local, root, base_args, capsys,
                                                                     monkeypatch):
    monkeypatch.setenv(quiet.VERBOSE_ENV, "0")  # restored after --verbose sets it
    assert main_full([*base_args, "--verbose"], dag=RESERVE_DAG) == 0
    lines = _stage_lines(capsys.readouterr().err)
    (_, we), (ls, _) = times(root, "wide_after"), times(root, "late")
    assert we <= ls, "the narrow stage took a CPU the wide one (longer path) was waiting for"
    assert any(ln.startswith("late") and "would delay wide_after" in ln for ln in lines)
