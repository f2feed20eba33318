"""``train.re.freeze_encoder_embedding`` reaches every frozen RE system (RE table 1 (b) / (d))."""

from __future__ import annotations

import pytest

from nugget_core.restorable import RestorableConfig
from stages.config import load_config
from stages.restorable.train_re import re_systems, restorable_fields


@pytest.mark.parametrize("value", [True, False])
def test_train_re_gives_the_frozen_systems_the_embedding_setting(value):
    job = load_config(["profile=paper", f"train.re.freeze_encoder_embedding={str(value).lower()}"]).train.re
    configs = {s["config"]: RestorableConfig(**restorable_fields(s, job)) for s in re_systems(job)}
    assert configs["b"].freeze_pretrained and configs["d"].freeze_pretrained
    assert configs["b"].freeze_encoder_embedding is value and configs["d"].freeze_encoder_embedding is value
    assert not configs["a"].freeze_pretrained  # a / c train the whole encoder whatever the setting


def test_the_paper_profile_freezes_the_encoder_embedding():
    """RE §4.2: in (b) "only the last projection layer can be updated"."""
    assert load_config(["profile=paper"]).train.re.freeze_encoder_embedding is True
    assert load_config([]).train.re.freeze_encoder_embedding is True
