"""What a cache key follows: the code that runs (not its comments), the library versions, and
why a miss is a miss; accepting a code change on purpose."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pipelines.cli import main_full
from stages.config import load_config
from stages.corpora.corpus_stats import CorpusStats
from stages.framework import code_identity, environment
from stages.framework.code_identity import normalised_source
from stages.framework.code_pins import PINS, CodeChangeError, load_pins, save_pins
from stages.framework.environment import environment_problems, stage_environment
from stages.framework.keys import cache_key, key_parts
from stages.framework.miss_reasons import differences, explain_miss
from stages.framework.store import ArtifactStore
from stages.framework.worker import EnvironmentDrift, run_one
from stages.nugget.train_nugget import TrainNugget
from stages.nugget2d.train_nugget2d import TrainNugget2D
from tests.framework.fake_stages import STATS_DAG

MODULE = '''"""A helper module."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections import OrderedDict


def scale(x, factor=2):
    """Scale x."""
    # a comment
    return x * factor
'''
SAME = {
    "comment": MODULE.replace("# a comment", "# another comment\n    # and one more"),
    "docstring": MODULE.replace('"""Scale x."""', '"""Multiply x by the factor.\n\n    Longer."""'),
    "module docstring": MODULE.replace('"""A helper module."""', '"""Helpers, reworded."""'),
    "layout": MODULE.replace("return x * factor", "return (x *\n            factor)"),
    "type-checking import": MODULE.replace("OrderedDict", "Counter"),
}
CHANGED = {
    "default": MODULE.replace("factor=2", "factor=3"),
    "operator": MODULE.replace("x * factor", "x + factor"),
    "statement": MODULE.replace("    return x", "    x = abs(x)\n    return x"),
    "name": MODULE.replace("def scale", "def rescale"),
    "string literal": MODULE.replace("return x * factor", "return x * factor, 'units'"),
}


@pytest.mark.parametrize("edit", sorted(SAME))
def test_edits_that_never_run_leave_the_normalised_code_alone(edit):
    assert normalised_source(SAME[edit]) == normalised_source(MODULE)


@pytest.mark.parametrize("edit", sorted(CHANGED))
def test_edits_that_run_change_the_normalised_code(edit):
    assert normalised_source(CHANGED[edit]) != normalised_source(MODULE)


def test_a_body_of_only_a_docstring_still_differs_from_one_that_does_something():
    only_doc = 'def f():\n    """Nothing."""\n'
    assert normalised_source(only_doc) == normalised_source("def f():\n    pass\n")
    assert normalised_source(only_doc) != normalised_source("def f():\n    return 1\n")


def _with_version(monkeypatch, distribution: str, version: str) -> None:
    real = environment.distribution_version
    monkeypatch.setattr(environment, "distribution_version",
                        lambda d: version if d == distribution else real(d))


def test_a_library_version_the_stage_runs_changes_its_key(monkeypatch):
    cfg = load_config([])
    ups = {u: "f" * 20 for u in TrainNugget.upstream}
    before = cache_key(TrainNugget, cfg, ups)
    stats_before = cache_key(CorpusStats, cfg, {})
    _with_version(monkeypatch, "transformers", "0.0.1")
    assert cache_key(TrainNugget, cfg, ups) != before
    monkeypatch.undo()
    _with_version(monkeypatch, "deepspeed", "0.0.1")  # train_nugget trains with it; corpus_stats never imports it
    assert cache_key(TrainNugget, cfg, ups) != before
    assert "deepspeed" not in stage_environment(CorpusStats)
    assert cache_key(CorpusStats, cfg, {}) == stats_before
    monkeypatch.setattr(environment.platform, "python_version", lambda: "3.99.0")
    assert cache_key(CorpusStats, cfg, {}) != stats_before


def test_a_training_stage_is_keyed_on_the_libraries_of_the_issue_of_reproducibility():
    import importlib.metadata

    env = stage_environment(TrainNugget)
    for distribution in ("torch", "transformers", "tokenizers", "deepspeed", "ray", "numpy"):
        assert env[distribution] == importlib.metadata.version(distribution), distribution
    # peft keys the Nugget2D stages (LoRA adapters), not the encoder-decoder Nugget, whose
    # closure holds only the Nugget study's artifact types
    assert stage_environment(TrainNugget2D)["peft"] == importlib.metadata.version("peft")
    assert "peft" not in env
    assert {"python", "torch.cuda", "cudnn"} <= set(env)
    assert not set(env) & environment.PLUMBING_IMPORTS  # omegaconf, fsspec, mlflow ... key nothing


def test_a_task_under_other_library_versions_refuses_to_run(monkeypatch):
    cfg = load_config([])
    planned = key_parts(CorpusStats, cfg, {}).record()
    assert environment_problems(CorpusStats, planned["environment"]) == []
    planned["environment"]["numpy"] = "0.0.1"
    with pytest.raises(EnvironmentDrift, match=r"numpy: 0\.0\.1 planned, .* here.*make install"):
        run_one(CorpusStats, cfg, "k" * 20, {}, None, False, planned)  # type: ignore[arg-type]


# -- the store: misses explained, code changes accepted -----------------------------------

def _publish(store: ArtifactStore, stage_cls: type, cfg, ups: dict[str, str], code: str | None = None) -> str:
    """A complete output of ``stage_cls`` as the executor publishes it (parts recorded)."""
    parts = key_parts(stage_cls, cfg, ups, code=code)
    key = parts.key()
    scratch = store.scratch(stage_cls.name, key)
    (scratch / "out.json").write_text("{}")
    store.publish(stage_cls.name, key, scratch, {
        "key_parts": parts.record(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "metrics": {}})
    return key


def _published_dag(root: Path, args: list[str]) -> tuple[ArtifactStore, dict[str, str]]:
    cfg = load_config(args)
    store = ArtifactStore(str(root))
    keys: dict[str, str] = {}
    for name in STATS_DAG.order:
        stage = STATS_DAG.get(name)
        keys[name] = _publish(store, stage, cfg, {u: keys[u] for u in stage.upstream})
    return store, keys


def _plan(store, args, **kwargs):
    return {p.name: p for p in STATS_DAG.plan(load_config(args), store, **kwargs)}


def test_the_plan_says_why_each_miss_misses(root, base_args, monkeypatch):
    store, keys = _published_dag(root, base_args)
    assert all(p.hit for p in _plan(store, base_args).values())

    plan = _plan(store, base_args + ["data.corpus_stats.top_words=5"])
    assert plan["corpus_stats"].reason.startswith("config changed: data.corpus_stats.top_words 20 -> 5")
    assert plan["digest"].reason.startswith("upstream changed: corpus_stats (vs key")

    old_code = code_identity.code_version(CorpusStats)
    monkeypatch.setattr(code_identity, "closure_digest", lambda m: "e" * 64)
    plan = _plan(store, base_args)
    assert plan["corpus_stats"].reason.startswith(f"code changed ({old_code} -> 1:eeeeeeee")
    monkeypatch.undo()

    _with_version(monkeypatch, "pyarrow", "0.0.1")  # corpus_stats reads its corpus with it
    plan = _plan(store, base_args)
    assert f"environment changed: pyarrow '{environment.metadata.version('pyarrow')}' -> '0.0.1'" in \
        plan["corpus_stats"].reason


def test_dry_run_prints_the_reason_and_an_empty_store_says_nothing(root, base_args, capsys, no_ray):
    assert main_full(["--dry-run", *base_args], dag=STATS_DAG) == 0
    assert "(miss:" not in capsys.readouterr().out  # nothing to compare with
    _published_dag(root, base_args)
    assert main_full(["--dry-run", *base_args, "report.title=Other"], dag=STATS_DAG) == 0
    out = capsys.readouterr().out
    assert "digest                 miss" in out
    assert "(miss: config changed: report.title 'nugget-pipeline report' -> 'Other' (vs key" in out


def test_differences_name_each_part():
    cfg = load_config([])
    parts = key_parts(CorpusStats, cfg, {})
    recorded = parts.record()
    assert differences(parts, recorded) == []
    recorded["framework"] = "0"
    recorded["upstream"] = {"tokenizer": "a"}
    recorded["environment"] = {**recorded["environment"], "torch": "1.0"}
    found = differences(parts, recorded)
    assert found[0].startswith("framework output version changed (0 -> ")
    assert found[1] == "upstream changed: tokenizer"
    assert found[2].startswith("environment changed: torch '1.0' -> ")
    assert explain_miss(parts, [{"key": "old"}]) == "1 earlier output(s), made before outputs recorded their key parts"


def test_a_code_change_is_kept_only_on_purpose(root, base_args, monkeypatch, capsys, no_ray):
    store, keys = _published_dag(root, base_args)
    real_digest = code_identity.closure_digest
    monkeypatch.setattr(code_identity, "closure_digest",
                        lambda m: "e" * 64 if m == CorpusStats.__module__ else real_digest(m))

    plan = _plan(store, base_args)
    assert not plan["corpus_stats"].hit and not plan["digest"].hit  # never silently

    # the dry run shows what would be kept and records nothing
    assert main_full(["--dry-run", "--accept-code-change", "corpus_stats", *base_args], dag=STATS_DAG) == 0
    out = capsys.readouterr().out
    assert "accepting code change: code 1:eeeeeeeeeeeeeeee accepted as" in out
    assert not (root / PINS).exists()

    plan = _plan(store, base_args, accept_code_change=["corpus_stats"])
    assert plan["corpus_stats"].hit and plan["corpus_stats"].key == keys["corpus_stats"]
    assert plan["digest"].hit and plan["digest"].key == keys["digest"]  # the descendants keep theirs
    pin = plan["corpus_stats"].pin
    assert plan["corpus_stats"].new_pin and pin.key == keys["corpus_stats"] and pin.code.endswith("e" * 16)
    save_pins(store, [pin])
    assert json.loads((root / PINS).read_text())["corpus_stats"]["accepted_as"] == pin.accepted_as

    # the pin holds for that code version, without asking again
    plan = _plan(store, base_args)
    assert plan["corpus_stats"].hit and not plan["corpus_stats"].new_pin and plan["corpus_stats"].pin == pin
    # a later edit is a miss again
    monkeypatch.setattr(code_identity, "closure_digest",
                        lambda m: "d" * 64 if m == CorpusStats.__module__ else real_digest(m))
    assert not _plan(store, base_args)["corpus_stats"].hit
    assert load_pins(store)["corpus_stats"] == pin

    # with the config changed too there is nothing to keep: refused, naming the difference
    with pytest.raises(CodeChangeError, match="differs from this one in its code alone.*config changed"):
        _plan(store, base_args + ["data.corpus_stats.top_words=5"], accept_code_change=["corpus_stats"])
    assert main_full(["--dry-run", "--accept-code-change", "corpus_stats", *base_args,
                      "data.corpus_stats.top_words=5"], dag=STATS_DAG) == 2
    assert "--accept-code-change corpus_stats: no complete output" in capsys.readouterr().err


def test_accepting_a_stage_outside_the_plan_is_refused(root, base_args):
    store, _ = _published_dag(root, base_args)
    with pytest.raises(CodeChangeError, match="names train_nugget, not in this plan"):
        _plan(store, base_args, accept_code_change=["train_nugget"])


def test_accepting_a_stage_that_is_already_a_hit_changes_nothing(root, base_args):
    store, keys = _published_dag(root, base_args)
    plan = _plan(store, base_args, accept_code_change=["corpus_stats"])
    assert plan["corpus_stats"].hit and plan["corpus_stats"].pin is None and not plan["corpus_stats"].new_pin
    assert plan["corpus_stats"].key == keys["corpus_stats"]
