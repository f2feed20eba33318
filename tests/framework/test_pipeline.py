"""The DAG on Ray: caching, MLflow records, single-stage reruns, crashes."""

from __future__ import annotations

import importlib.metadata
import json
import platform

import pytest
from mlflow.tracking import MlflowClient

from pipelines.cli import main_full, main_stage
from stages.framework.dag import Dag
from stages.framework.store import ArtifactStore
from tests.framework.fake_stages import (
    FAKE_DAG,
    HEADLINE_DAG,
    STATS_DAG,
    AfterFragile,
    Fragile,
    Source,
)
from tests.framework.fixtures import LEE_DOCS, runs_of_latest_pipeline

pytestmark = pytest.mark.ray


def _statuses(root) -> dict[str, str]:
    _, children = runs_of_latest_pipeline(root)
    return {name: run.data.tags["cache_hit"] for name, run in children.items()}


def test_full_run_then_cached_run(ray_local, root, base_args, capsys):
    assert main_full(base_args, dag=STATS_DAG) == 0
    parent, children = runs_of_latest_pipeline(root)
    assert set(children) == {"corpus_stats", "digest"}
    assert _statuses(root) == {"corpus_stats": "false", "digest": "false"}
    stats = children["corpus_stats"]
    # what the output was made under: in its manifest and its MLflow run
    (manifest_path,) = (root / "corpus_stats").glob("*/_nugget_manifest.json")
    parts = json.loads(manifest_path.read_text())["key_parts"]
    assert parts["environment"]["pyarrow"] == importlib.metadata.version("pyarrow")  # it reads its corpus with it
    assert parts["environment"]["python"] == platform.python_version()
    assert stats.data.tags["env.pyarrow"] == importlib.metadata.version("pyarrow")
    assert stats.data.tags["code_version"] == parts["code"]
    assert stats.data.metrics["documents"] == len(LEE_DOCS)
    assert stats.data.metrics["words_total"] == 9 + 6 + 8  # counted by hand
    assert stats.data.params["data.corpus_stats.source"] == "gensim_lee"
    assert parent.data.tags["profile"] == "tiny" and parent.data.tags["git_commit"]
    first_producer = stats.info.run_id

    # second run: nothing executes, both stages recorded as hits linking the producer
    assert main_full(base_args, dag=STATS_DAG) == 0
    _, children = runs_of_latest_pipeline(root)
    assert _statuses(root) == {"corpus_stats": "true", "digest": "true"}
    hit = children["corpus_stats"]
    assert hit.data.tags["produced_by_run_id"] == first_producer
    assert hit.data.metrics["words_total"] == 23  # metrics carried over to the hit run

    # changing the digest's config reruns the digest only, and the plan says why
    capsys.readouterr()
    assert main_full(base_args + ["report.title=Other"], dag=STATS_DAG) == 0
    assert _statuses(root) == {"corpus_stats": "true", "digest": "false"}
    assert "(miss: config changed: report.title 'nugget-pipeline report' -> 'Other'" in capsys.readouterr().out

    # changing corpus_stats' config reruns it and its downstream
    assert main_full(base_args + ["report.title=Other", "data.corpus_stats.top_words=3"], dag=STATS_DAG) == 0
    assert _statuses(root) == {"corpus_stats": "false", "digest": "false"}
    digests = sorted(p.read_text() for p in (root / "digest").glob("*/digest.md"))
    # three digest keys: default title, "Other" on the old stats, "Other" on the new ones
    assert digests == ["# Other\n\n3 documents from gensim_lee\n"] * 2 + [
        "# nugget-pipeline report\n\n3 documents from gensim_lee\n"
    ]


def test_stage_rerun_uses_cached_upstream(ray_local, root, base_args, capsys):
    assert main_stage(["digest", *base_args], dag=STATS_DAG) == 3  # nothing cached yet
    err = capsys.readouterr().err
    assert "upstream stage 'corpus_stats' has no cached output" in err
    assert "python -m pipelines.stage corpus_stats" in err

    assert main_stage(["corpus_stats", *base_args], dag=STATS_DAG) == 0
    _, children = runs_of_latest_pipeline(root)
    assert set(children) == {"corpus_stats"}
    stats_dir = next((root / "corpus_stats").iterdir())
    stamp = (stats_dir / "stats.json").stat().st_mtime_ns

    assert main_stage(["digest", *base_args], dag=STATS_DAG) == 0
    _, children = runs_of_latest_pipeline(root)
    assert set(children) == {"digest"} and children["digest"].data.tags["cache_hit"] == "false"
    assert (stats_dir / "stats.json").stat().st_mtime_ns == stamp  # upstream untouched

    assert main_stage(["digest", *base_args], dag=STATS_DAG) == 0  # cached: recorded as a hit
    assert _statuses(root) == {"digest": "true"}
    assert main_stage(["digest", "--force", *base_args], dag=STATS_DAG) == 0
    _, children = runs_of_latest_pipeline(root)
    assert children["digest"].data.tags["forced"] == "true"
    assert children["digest"].data.tags["cache_hit"] == "false"


def test_dry_run_prints_plan_without_running(ray_local, root, base_args, capsys):
    assert main_full(["--dry-run", *base_args], dag=STATS_DAG) == 0
    out = capsys.readouterr().out
    assert "corpus_stats           miss" in out and "digest                 miss" in out
    assert not (root / "corpus_stats").exists()


def test_unknown_stage_and_list(capsys):
    assert main_stage(["nosuch"]) == 2
    assert "unknown stage 'nosuch'" in capsys.readouterr().err
    assert main_stage(["--list"]) == 0
    out = capsys.readouterr().out
    assert "train_nugget           <- tokenizer, build_mt_docs" in out
    assert "Nugget AE/MT on Ray Train" in out  # the description, from the stage table


def test_crash_leaves_no_complete_output_and_next_run_redoes_it(ray_local, root, sources, base_args, capsys):
    (sources / "CRASH").write_text("")
    assert main_full(base_args, dag=FAKE_DAG) == 1
    assert "injected crash after a partial write" in capsys.readouterr().err
    store = ArtifactStore(str(root))
    plan = FAKE_DAG.plan(_cfg(base_args), store)
    status = {p.name: p.status for p in plan}
    assert status == {"source": "hit", "fragile": "miss"}
    # scratch removed, nothing published; the work space survives for the next attempt
    assert [p.name for p in (root / "fragile").iterdir()] == [f".work-{plan[1].key}"]
    parent, children = runs_of_latest_pipeline(root)
    assert children["fragile"].info.status == "FAILED"
    assert parent.info.status == "FAILED"
    assert "injected crash" in children["fragile"].data.tags["error"]

    (sources / "CRASH").unlink()
    assert main_full(base_args, dag=FAKE_DAG) == 0
    assert _statuses(root) == {"source": "true", "fragile": "false"}
    done = store.artifact("fragile", plan[1].key)
    assert done.file("part2.txt").read_text() == "done"
    assert json.loads(done.file("_nugget_manifest.json").read_text())["metrics"] == {"parts": 2.0}
    assert [p.name for p in (root / "fragile").iterdir()] == [plan[1].key]  # work space removed


def _cfg(args):
    from stages.config import load_config

    return load_config(args)


def test_child_run_starts_with_its_stage_and_is_named_by_its_key_params(ray_local, root, base_args):
    assert main_full(base_args + ["data.corpus_stats.top_words=3"], dag=HEADLINE_DAG) == 0
    parent, children = runs_of_latest_pipeline(root)
    stats, headline = children["corpus_stats"], children["headline"]
    # created when the stage starts, not with the parent: its duration is the stage's
    assert headline.info.start_time >= stats.info.end_time
    assert stats.info.start_time >= parent.info.start_time
    assert headline.info.run_name == "headline top=3 title=nugget-pipeline report"
    assert stats.info.run_name == "corpus_stats"  # no run_name_keys: the stage's name


def parent_table(root, parent, name: str) -> dict:
    """A table the executor logged to the parent run, as {column: values}."""
    path = MlflowClient(f"sqlite:///{root}/mlflow.db").download_artifacts(parent.info.run_id, name, str(root / "dl"))
    table = json.loads(open(path).read())
    return {c: [row[i] for row in table["data"]] for i, c in enumerate(table["columns"])}


def test_parent_run_has_description_and_headline_metrics(ray_local, root, base_args):
    assert main_full(base_args, dag=HEADLINE_DAG) == 0
    parent, children = runs_of_latest_pipeline(root)
    note = parent.data.tags["mlflow.note.content"]
    assert "profile `tiny`" in note and parent.data.tags["git_commit"] in note and str(root) in note
    # the MLflow 3 UI opens the experiment on its runs, not on the GenAI traces page
    exp = MlflowClient(f"sqlite:///{root}/mlflow.db").get_experiment_by_name("nugget-pipeline")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    # copied from the stage with parent_metrics, not from the others; its sample size is no
    # metric (a bar chart of a constant) but the n column of the metrics table beside it
    assert parent.data.metrics == {"headline/documents": len(LEE_DOCS)}
    assert parent_table(root, parent, "headline/metrics.json") == {
        "metric": ["headline/documents"], "value": [len(LEE_DOCS)], "n": [1]}
    # the stage's parent_tables: its rows.json, columns the union of the rows' keys
    assert parent_table(root, parent, "headline/rows.json") == {
        "table": ["stats", "words"], "documents": [len(LEE_DOCS), None], "top": [None, 3]}
    # the config's run settings and top-level scalars, not every flattened section
    assert "profile" in parent.data.params and "run.seed" in parent.data.params
    assert not any(k.startswith(("data.", "nugget.")) for k in parent.data.params)
    # in the stage's own run the sample size is a param
    headline = children["headline"]
    assert headline.data.params["headline/documents_n"] == "1" and "headline/documents_n" not in headline.data.metrics

    assert main_full(base_args, dag=HEADLINE_DAG) == 0  # all cached: copied from the manifest
    parent, children = runs_of_latest_pipeline(root)
    assert children["headline"].data.tags["cache_hit"] == "true"
    assert parent.data.metrics["headline/documents"] == len(LEE_DOCS)


def test_stage_after_a_failure_gets_a_killed_run_saying_why(ray_local, root, sources, base_args, capsys):
    (sources / "CRASH").write_text("")
    assert main_full(base_args, dag=Dag([Source, Fragile, AfterFragile])) == 1
    # the failure names the stage and the config it reads (where a rehearsal's fix goes)
    assert "(stage fragile reads config: report.title)" in capsys.readouterr().err
    _, children = runs_of_latest_pipeline(root)
    assert children["fragile"].info.status == "FAILED"
    after = children["after_fragile"]
    assert after.info.status == "KILLED"
    assert after.data.tags["skipped_because"] == "upstream failure: fragile"
