"""The report's differences name the optimiser and RE-freezing settings that leave the papers'
(`stages.report.deviations`): Nugget2D's AdamW (app. A: LLaMA-2's setup) and RE's frozen
encoder embedding (§4.2)."""

from __future__ import annotations

from tests.evaluation.fixtures import listed_deviations


def _settings(overrides: list[str]) -> set[str]:
    return {d.setting for d in listed_deviations(["profile=paper", *overrides])}


def test_coupled_l2_adam_in_a_nugget2d_job_is_listed():
    assert not {s for s in _settings([]) if s.endswith(".optimizer")}
    assert "train.nugget2d.optimizer" in _settings(["train.nugget2d.optimizer=adam"])
    assert "train.full_ft.optimizer" in _settings(["train.full_ft.optimizer=adam"])
    # without weight decay Adam and AdamW take the same steps
    assert "train.nugget2d.optimizer" not in _settings(["train.nugget2d.optimizer=adam", "train.nugget2d.weight_decay=0"])


def test_a_trainable_shared_embedding_in_frozen_re_systems_is_listed():
    setting = "train.re.freeze_encoder_embedding"
    assert setting not in _settings([])
    assert setting in _settings([f"{setting}=false"])
    # no frozen configuration run: nothing differs
    assert setting not in _settings([f"{setting}=false", "train.re.configs=[a,c]"])
