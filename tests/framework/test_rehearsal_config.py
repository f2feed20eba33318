"""``rehearsal=true``: a profile at rehearsal sizes, and nothing but sizes
(`stages.config.rehearsal`, ``conf/rehearsal/``)."""

from __future__ import annotations

import shutil

import pytest
from omegaconf import OmegaConf

from stages.config import CONF_DIR, ConfigError, load_config
from stages.config.rehearsal import flatten, non_size_differences

REHEARSED = sorted(p.stem for p in (CONF_DIR / "rehearsal").glob("*.yaml"))


def _both(profile: str, extra: list[str], conf_dir=CONF_DIR) -> tuple[dict, dict]:
    real = load_config([f"profile={profile}", *extra], conf_dir)
    rehearsed = load_config([f"profile={profile}", "rehearsal=true", *extra], conf_dir)
    return (OmegaConf.to_container(OmegaConf.structured(real)),
            OmegaConf.to_container(OmegaConf.structured(rehearsed)))


def test_the_gpu_profiles_have_rehearsals():
    assert REHEARSED == ["gpu1", "paper"]


@pytest.mark.parametrize("profile", REHEARSED)
def test_a_rehearsal_changes_sizes_and_shrinks_the_budgets(profile, paper_inputs):
    real, rehearsed = _both(profile, paper_inputs.overrides if profile == "paper" else [])
    assert rehearsed["rehearsal"] is True and real["rehearsal"] is False
    assert non_size_differences(real, rehearsed) == []
    flat_real, flat_rehearsed = flatten(real), flatten(rehearsed)
    changed = {k for k in flat_real if flat_real[k] != flat_rehearsed[k]}
    # every training job: a few steps on CPU; every job's backend, precision and objective unchanged
    for job in ("nugget", "nugget2d", "nugget2d_ae", "nugget2d_ar", "nugget2d_ft", "full_ft", "baselines",
                "nugget_lm", "re", "re_retrieval"):
        assert flat_rehearsed[f"train.{job}.max_steps"] <= 3, job
        assert flat_rehearsed[f"train.{job}.use_gpu"] is False, job
        for field in ("backend", "precision", "optimizer", "schedule", "lr"):
            assert f"train.{job}.{field}" not in changed, (job, field)
    assert "model.lm.dtype" not in changed and "eval.dtype" not in changed and "prompts.format" not in changed


def _conf_with_overlay(tmp_path, profile: str, extra_yaml: str):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    overlay = conf / "rehearsal" / f"{profile}.yaml"
    OmegaConf.save(OmegaConf.merge(OmegaConf.load(overlay), OmegaConf.create(extra_yaml)), overlay)
    return conf


@pytest.mark.parametrize("extra, named", [
    ("nugget:\n  residual: direct\n", "nugget.residual"),
    ("train:\n  sweep:\n    ratios: [0.3]\n", "train.sweep.ratios"),
    ("data:\n  lm:\n    recent_tokens: 32\n", "data.lm.recent_tokens"),
])
def test_an_overlay_changing_more_than_sizes_is_refused(tmp_path, extra, named):
    conf = _conf_with_overlay(tmp_path, "gpu1", extra)
    load_config(["profile=gpu1"], conf)  # the profile itself is fine
    with pytest.raises(ConfigError, match=rf"rehearsal changes sizes only.*{named}"):
        load_config(["profile=gpu1", "rehearsal=true"], conf)


def test_the_command_line_applies_to_both_sides():
    # an override is the user's, on the profile and on its rehearsal alike: no difference
    load_config(["profile=gpu1", "rehearsal=true", "nugget.residual=direct"])


def test_a_profile_without_a_rehearsal_is_named():
    with pytest.raises(ConfigError, match=r"rehearsal=true.*'tiny' is not an option"):
        load_config(["profile=tiny", "rehearsal=true"])
    with pytest.raises(ConfigError, match="rehearsal='yes'"):
        load_config(["profile=gpu1", "rehearsal=yes"])


def test_non_size_differences_unit():
    real = {"train": {"nugget": {"max_steps": 100, "lr": 1.0}, "sweep": {"ratios": [0.1, 0.2]}}, "x": 1}
    assert non_size_differences(real, {"train": {"nugget": {"max_steps": 2, "lr": 1.0},
                                                 "sweep": {"ratios": [0.2]}}, "x": 1}) == []
    found = non_size_differences(real, {"train": {"nugget": {"max_steps": 2, "lr": 2.0},
                                                  "sweep": {"ratios": []}}, "x": 1})
    assert [f.split(":")[0] for f in found] == ["train.nugget.lr", "train.sweep.ratios"]
