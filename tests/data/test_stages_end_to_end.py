"""The dataset stages through the real DAG on synthetic sources: tokenizer ->
build_mt_docs, build_pi, build_rr each run, publish their contract files, log stats."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from pipelines.cli import main_full
from tests.data.fixtures import write_bible, write_debian_reference
from tests.framework.fixtures import make_fake_sources, runs_of_latest_pipeline

pytestmark = [pytest.mark.ray, pytest.mark.slow]

MT_COLUMNS = {"doc_id", "source", "target", "source_sentences", "target_sentences",
              "n_source_tokens", "n_target_tokens"}


def test_builders_run_in_the_dag(ray_local, tmp_path):
    sources = make_fake_sources(tmp_path / "sources")
    write_debian_reference(sources)
    write_bible(sources)
    root = tmp_path / "artifacts"
    args = [
        f"run.artifact_root={root}", f"run.sources_dir={sources}",
        "run.targets=[build_mt_docs,build_pi,build_rr]",
        "model.seq2seq.tokenizer_vocab_size=300",
        "data.pi.negatives=3", "data.pi.window=8", "data.pi.window_block=4", "data.rr.negatives=1",
        "data.mt.dev_fraction=0.1", "data.mt.test_fraction=0.1", "data.mt.ae_sources=[gensim_lee,sword_bible]",
    ]
    assert main_full(args) == 0
    _, runs = runs_of_latest_pipeline(root)
    assert set(runs) == {"tokenizer", "build_mt_docs", "build_pi", "build_rr"}
    assert all(r.info.status == "FINISHED" and r.data.metrics for r in runs.values())

    mt_dir = next((root / "build_mt_docs").iterdir())
    for split in ("train", "dev", "test", "train_ae"):
        table = pq.read_table(mt_dir / f"{split}.parquet")
        assert set(table.column_names) == MT_COLUMNS and table.num_rows > 0
        assert max(table.column("n_source_tokens").to_pylist()) <= 128
    extra = pq.read_table(mt_dir / "train_ae.parquet").to_pydict()  # English-only AE documents
    assert extra["source"] == extra["target"]
    assert any(" saw the " in s for s in extra["source"])  # the KJV fixture's verses are in it
    metrics = runs["build_mt_docs"].data.metrics
    assert metrics["ae_documents"] == len(extra["source"]) and metrics["ae_units"] > 0
    for stage, n_candidates in (("build_pi", 4), ("build_rr", 2)):
        out = next((root / stage).iterdir())
        tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
        ids = {line.split("\t", 1)[0] for line in (out / "docs.tsv").read_text().splitlines()}
        assert tasks and all(len(t["candidates"]) == n_candidates for t in tasks)
        assert all(t["query"] in ids and set(t["candidates"]) <= ids for t in tasks)
    assert runs["build_pi"].data.metrics  # statistics logged by the stage
