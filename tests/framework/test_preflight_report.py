"""``--dry-run`` is a full preflight (`stages.framework.plan_checks`): every missing input of
the planned stages and every config relation that cannot hold come out in one run, each
naming the field(s) and value(s), before anything starts. It used to stop at the first
missing input (a cluster user fixed one path per attempt), and a config error hid them all.
"""

from __future__ import annotations

import pytest

from pipelines.cli import main_full
from stages.config import load_config
from stages.config.validate import errors
from stages.framework import external
from stages.registry import DAG
from tests.extras import HARNESS_OFF

BUILT_HERE = ("eval.pi_data_dir", "eval.rr_data_dir")  # empty = build_pi / build_rr's output, not an input


def _places(tmp_path, sources) -> list[str]:
    return [f"run.artifact_root={tmp_path / 'root'}", f"run.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
            f"run.sources_dir={sources}"]


def test_paper_dry_run_without_inputs_lists_every_missing_input_at_once(tmp_path, sources, monkeypatch, capsys,
                                                                        no_ray):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("NUGGET_CLUSTER_RESOURCES", '{"CPU": 64, "GPU": 16}')  # the cluster the profile is for
    monkeypatch.setattr(external, "cached_hub_config", lambda name: None)  # an empty hub cache
    readers: dict[str, set[str]] = {}
    for stage in DAG.stages.values():
        for field in (*stage.external_paths, *stage.external_models):
            readers.setdefault(field, set()).add(stage.name)
    models = {f for s in DAG.stages.values() for f in s.external_models}
    # every path field names nothing (a glob naming the split, as the data fields take);
    # the models stay the profile's hub ids, which the offline hub cannot provide
    absent = [f"{field}={tmp_path}/absent/{field}/{{split}}-*.parquet"
              for field in readers if field not in models and field not in BUILT_HERE]
    assert main_full(["--dry-run", "profile=paper", *absent, *_places(tmp_path, sources), *HARNESS_OFF]) == 3
    err = capsys.readouterr().err
    listed = [line.strip() for line in err.splitlines() if line.startswith("  ")]
    fields = {line.split("=", 1)[0] for line in listed}
    assert fields == set(readers) - set(BUILT_HERE), err
    for line in listed:
        field = line.split("=", 1)[0]
        named = set(line.rsplit("(read by ", 1)[1].rstrip(")").split(", "))
        assert named == readers[field], line
    assert "matches no file" in err and "is a hub id the local Hugging Face cache does not hold" in err
    assert f"preflight: {len(listed)} problems, nothing was started; exit 3" in err


def test_relations_that_cannot_hold_are_reported_together_with_missing_inputs(tmp_path, sources, capsys, no_ray):
    args = ["--dry-run", "data.re.max_train_examples=3", "data.mt.test_fraction=0", "eval.nugget_split=test",
            f"eval.pi_data_dir={tmp_path}/no-pi-data", *_places(tmp_path, sources), *HARNESS_OFF]
    assert main_full(args) == 2  # a config fix may change which inputs are needed: 2 before 3
    err = capsys.readouterr().err
    assert ("data.re.max_train_examples: value 3 cannot fill one batch of train.re.batch_size=16 x "
            "train.re.num_workers=1 = 16 texts") in err
    assert "eval.nugget_split: split 'test' of build_mt_docs is empty with data.mt.test_fraction=0" in err
    assert f"eval.pi_data_dir='{tmp_path}/no-pi-data' does not exist (read by eval_similarity)" in err
    assert "preflight: 3 problems" in err
    # run.targets narrows the plan: an input only an unplanned stage reads is not asked for
    assert main_full([*args[4:], "--dry-run", "run.targets=[corpus_stats]"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(("overrides", "message"), [
    (["data.re.max_train_examples=100", "train.re.batch_size=64", "train.re.num_workers=2"],
     "data.re.max_train_examples: value 100 cannot fill one batch of train.re.batch_size=64 x train.re.num_workers=2"),
    (["data.mt.dev_fraction=0"], "data.mt.dev_fraction: value 0 with data.mt.dev_split='' leaves build_mt_docs no "
                                 "dev split, which train_nugget's dev loss and eval.nugget_split='dev' read"),
    (["data.mt.test_fraction=0", "eval.nugget_split=test"],
     "eval.nugget_split: split 'test' of build_mt_docs is empty with data.mt.test_fraction=0"),
])
def test_a_relation_a_stage_found_late_is_refused_at_load(overrides, message):
    found = errors(load_config(overrides, check=False))
    assert any(e.startswith(message) for e in found), found
