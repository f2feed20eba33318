"""The ``nugget`` command (pipelines/nugget.py): each subcommand's parsing and what it
hands to (list, config, stage, run, report, generate; eval: test_nugget_eval.py) and
``sweep.py --help``.
No Ray: ``run`` / ``stage`` are exercised with ``--dry-run``, which stops after planning."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipelines import nugget
from pipelines.nugget import main
from tests.framework.cli_fixtures import complete_output, make_nugget2d

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(tmp_path) -> str:
    """An empty artifact root, as a config override."""
    return f"run.artifact_root={tmp_path / 'artifacts'}"


def test_list_prints_the_dag(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "report " in out and "eval_qa " in out and "<- prepare_lm, build_lm, train_nugget2d" in out


def test_config_prints_values_with_their_help_and_applies_overrides(capsys):
    assert main(["config", "train.sweep", "train.sweep.max_steps=7"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[train.sweep]  # Ray Tune sweep over r and l."
    assert "train.sweep.max_steps = 7  # Optimiser steps per trial (null = train.nugget.max_steps)." in out
    assert all(line.startswith(("[train.sweep]", "train.sweep.")) for line in out)


def test_config_refuses_an_unknown_section_and_a_bad_value(capsys):
    assert main(["config", "train.nope"]) == 2
    assert "no config key or section 'train.nope'" in capsys.readouterr().err
    assert main(["config", "nugget.ratio=1.5"]) == 2
    assert "nugget.ratio: value 1.5 must be <= 1.0" in capsys.readouterr().err


def test_stage_dry_run_is_pipelines_stage(root, sources, capsys):
    # the preflight wants the offline sources of corpus_stats: fake ones, so no fetched corpora are needed
    assert main(["stage", "corpus_stats", "--dry-run", root, f"run.sources_dir={sources}"]) == 0
    out = capsys.readouterr().out
    assert "plan (1 stages" in out and "corpus_stats" in out and "miss" in out


def test_run_dry_run_plans_the_whole_dag(root, sources, capsys):
    assert main(["run", root, f"run.sources_dir={sources}", "--dry-run"]) == 0
    out = capsys.readouterr().out
    planned = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert {"tokenizer", "train_nugget2d", "report"} <= set(planned) and len(planned) > 20


def test_delegated_commands_hand_their_arguments_over_unchanged(monkeypatch):
    seen = {}
    monkeypatch.setitem(nugget.DELEGATED, "run", (lambda argv: seen.setdefault("run", argv) and 5, "x"))
    assert main(["run", "nugget.ratio=0.5", "--dry-run"]) == 5
    assert seen["run"] == ["nugget.ratio=0.5", "--dry-run"]


def test_report_prints_the_path_of_this_configs_report_and_opens_it(root, capsys, monkeypatch):
    assert main(["report", root]) == 3
    assert "stage 'report' has no output for this config" in capsys.readouterr().err
    folder = complete_output(root, "report", {"report.html": "<html></html>"})
    opened = []
    monkeypatch.setattr(nugget.webbrowser, "open", opened.append)
    assert main(["report", "--open", root]) == 0
    assert capsys.readouterr().out.strip() == str(folder / "report.html")
    assert opened == [(folder / "report.html").as_uri()]
    # another config has no report of its own, but the error points at the newest one
    assert main(["report", root, "report.title=Other"]) == 3
    assert f"the newest report of another config: {folder / 'report.html'}" in capsys.readouterr().err


@pytest.fixture(scope="module")
def saved_nugget2d(tmp_path_factory):
    """A tiny untrained Nugget2D folder, its base LM folder (with the tokenizer) and the
    model itself."""
    folder, base, model, tokenizer = make_nugget2d(tmp_path_factory.mktemp("nugget2d"))
    return folder, base, model.eval(), tokenizer


def test_generate_answers_and_continues_like_the_library_api(saved_nugget2d, capsys):
    from nugget_core.nugget2d import answer, compress_text, continue_text

    folder, base, model, tokenizer = saved_nugget2d
    text, question = "the river delta was born in Paris of a city.", "Fill in the blank: born in _____"
    common = ["--base-model", str(base), "--text", text, "--max-new-tokens", "4"]
    assert main(["generate", str(folder), *common, "--question", question]) == 0
    expected = answer(model, tokenizer, compress_text(model, tokenizer, text), question, max_new_tokens=4)
    captured = capsys.readouterr()
    assert captured.out.strip() == expected and "tokens kept" in captured.err
    assert main(["generate", str(folder), *common]) == 0
    ctx = compress_text(model, tokenizer, text, prompt_format=None)
    assert capsys.readouterr().out.strip() == continue_text(model, tokenizer, ctx, max_new_tokens=4)


def test_generate_refuses_bad_arguments_and_surfaces_the_loaders_error(saved_nugget2d, capsys):
    folder, base, _, _ = saved_nugget2d
    with pytest.raises(SystemExit) as exit_info:
        main(["generate", str(folder), "--text", "x", "--max-new-tokens", "0"])
    assert exit_info.value.code == 2 and "must be >= 1, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["generate", str(folder)])  # --text is required
    # no --base-model and no base model recorded in the folder: load_nugget2d's own error
    with pytest.raises(ValueError, match="base_model"):
        main(["generate", str(folder), "--text", "the river delta"])


def test_sweep_help_names_the_sweep_and_its_keys():
    result = subprocess.run([sys.executable, str(REPO / "pipelines" / "sweep.py"), "--help"],
                            capture_output=True, text=True, check=True, cwd=REPO)
    assert result.stdout.startswith("usage: python pipelines/sweep.py")
    assert "stage sweep_nugget" in result.stdout and "full.py" not in result.stdout
    assert "train.sweep.ratios = " in result.stdout and "# Grid over nugget.ratio." in result.stdout
    assert "it also reads: nugget, model.seq2seq, train.nugget, run.seed" in result.stdout
