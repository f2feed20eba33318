"""Config system: groups, profiles, overrides, and errors that name the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.cli import main_full
from stages.config import ConfigError, load_config, to_yaml

REPO = Path(__file__).resolve().parents[2]


def test_tiny_is_default_and_groups_are_applied():
    cfg = load_config([])
    assert cfg.profile == "tiny"
    assert cfg.model.seq2seq.source == "tiny_random"  # from conf/model/tiny.yaml
    assert cfg.train.nugget.lr == pytest.approx(1e-3)  # from conf/train/tiny.yaml
    assert cfg.run.num_cpus == 2  # from conf/profile/tiny.yaml body


def test_paper_profile_has_paper_settings():
    cfg = load_config(["profile=paper"])
    assert cfg.model.seq2seq.name_or_path == "facebook/mbart-large-50-many-to-many-mmt"
    assert cfg.model.lm.name_or_path == "meta-llama/Llama-2-7b-hf"
    assert cfg.train.nugget.lr == pytest.approx(5e-5)
    assert cfg.train.nugget2d.backend == "deepspeed"
    assert cfg.train.nugget2d.betas == [0.9, 0.95]
    assert cfg.nugget2d.lora_rank == 32
    assert cfg.train.sweep.ratios == [0.05, 0.1, 0.15, 0.25]
    assert cfg.data.mt.source == "wmt19"


def test_overrides_and_group_swap_win_in_order():
    cfg = load_config(["model=paper", "nugget.ratio=0.25", "nugget.scorer_layer=6"])
    assert cfg.model.seq2seq.source == "pretrained"
    assert cfg.nugget.ratio == 0.25 and cfg.nugget.scorer_layer == 6
    assert "ratio: 0.25" in to_yaml(cfg)


@pytest.mark.parametrize(
    "override, expected",
    [
        ("nugget.rato=0.1", "nugget.rato: Key 'rato' not in 'NuggetSection'"),
        ("nugget.ratio=abc", "nugget.ratio: Value 'abc'"),
        ("nugget.ratio=0", "nugget.ratio: value 0.0 must be > 0.0"),
        ("nugget.ratio=1.5", "nugget.ratio: value 1.5 must be <= 1.0"),
        ("train.nugget.num_workers=0", "train.nugget.num_workers: value 0 must be >= 1"),
        ("nugget.residual=sideways", "nugget.residual: value 'sideways' is not one of"),
        ("nugget.scorer_layer=9", "nugget.scorer_layer: value 9 exceeds model.seq2seq.tiny.layers=4"),
        ("train.nugget2d_ft.objective=continuation", "train.nugget2d_ft.objective: must be 'finetune'"),
        ("train.full_ft.finetune_task=qa", "train.full_ft.finetune_task: value 'qa'; eval_summarization needs"),
        ("model=nope", "model='nope' is not an option; available: ['paper', 'tiny']"),
        ("profile=huge", "profile='huge' is not an option"),
        ("no_equals_sign", "override 'no_equals_sign' is not of the form key=value"),
    ],
)
def test_bad_values_name_the_key(override, expected):
    with pytest.raises(ConfigError) as err:
        load_config([override])
    assert expected in str(err.value)


def test_bad_yaml_file_names_the_file(tmp_path):
    conf = tmp_path / "conf"
    for group in ("profile", "model"):
        (conf / group).mkdir(parents=True)
    (conf / "profile" / "tiny.yaml").write_text("defaults:\n  model: broken\n")
    (conf / "model" / "broken.yaml").write_text("seq2seq:\n  tiny:\n    d_model: wide\n")
    with pytest.raises(ConfigError) as err:
        load_config([], conf_dir=conf)
    assert "broken.yaml" in str(err.value) and "model.seq2seq.tiny.d_model" in str(err.value)


def test_cli_config_error_exits_2(capsys):
    assert main_full(["nugget.ratio=0"]) == 2
    assert "nugget.ratio: value 0.0 must be > 0.0" in capsys.readouterr().err


@pytest.mark.parametrize("override", ["nugget.ratio=1.5", "nugget.bogus=1"])
def test_script_exit_code_is_nonzero(override):
    done = subprocess.run(
        [sys.executable, "pipelines/full.py", override], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "error: config:" in done.stderr and "nugget." in done.stderr
    assert "Ray" not in done.stdout + done.stderr  # failed before any Ray started


def test_schema_mirrors_nugget_core():
    """conf/ cannot import torch at load time, so the schema copies nugget_core's names."""
    import dataclasses

    import nugget_core
    from nugget_core.config import ResidualMode, SelectorKind
    from stages.config import schema

    assert set(schema.RESIDUAL_MODES) == {m.value for m in ResidualMode}
    assert set(schema.SELECTORS) == {m.value for m in SelectorKind}
    ours = {f.name for f in dataclasses.fields(schema.TinyBartSpec)} - {"tokenizer_vocab_size"}
    assert ours == {f.name for f in dataclasses.fields(nugget_core.TinyBartSpec)}
    section = {f.name for f in dataclasses.fields(schema.NuggetSection)}
    assert section == {f.name for f in dataclasses.fields(nugget_core.NuggetConfig)}
