"""build_lm through the DAG on synthetic sources, with a stand-in prepare_lm stage that
provides a small BPE tokenizer where the real one converts SmolLM2."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from pipelines.cli import main_full
from stages.framework.dag import Dag
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.build_lm import BuildLM
from tests.data.fixtures import write_python_docs
from tests.framework.fixtures import LEE_DOCS, make_fake_sources, runs_of_latest_pipeline

pytestmark = [pytest.mark.ray, pytest.mark.slow]


class TokenizerOnlyLM(Stage):
    name = "prepare_lm"
    config_keys = ("model.lm",)

    def run(self, ctx: StageContext) -> None:
        from nugget_core import train_bpe_tokenizer

        words = "alpha gamma delta river letter physics module data python the a of".split()
        train_bpe_tokenizer([" ".join(words)] * 20, vocab_size=300).save_pretrained(ctx.output_dir / "model")


def test_build_lm_writes_every_set_with_stand_in_labels(ray_local, tmp_path):
    long_news = [d + " " + " ".join(["More detail follows here."] * 4) for d in LEE_DOCS]
    sources = make_fake_sources(tmp_path / "sources", lee_docs=long_news)
    write_python_docs(sources)
    root = tmp_path / "artifacts"
    args = [f"run.artifact_root={root}", f"run.sources_dir={sources}",
            "data.lm.distant_tokens=16", "data.lm.recent_tokens=8", "data.lm.doc_tokens=16",
            # eval_lm's contexts must fit the (shortened) history, or the config is refused
            "eval.lm.contexts=[{total_states: 6, compressed_tokens: 8, context_tokens: 4}]",
            "data.lm.prompt_tokens=4", "data.lm.answer_tokens=8", "data.lm.dev_fraction=0.2"]
    assert main_full(args, dag=Dag([TokenizerOnlyLM, BuildLM])) == 0
    out = next((root / "build_lm").iterdir())
    for name in ("lm_wiki", "lm_pile"):
        rows = pq.read_table(out / f"{name}.parquet").to_pylist()
        assert rows and all(len(r["distant"]) == 16 and 1 <= len(r["recent"]) <= 8 for r in rows)
    triples = pq.read_table(out / "continuation.parquet").to_pylist()
    assert all(len(t["doc"]) == 16 and len(t["prompt"]) == 4 and len(t["answer"]) <= 8 for t in triples)
    assert {t["split"] for t in triples} <= {"train", "dev", "test"}
    summ = [json.loads(x) for x in (out / "summarization.jsonl").read_text().splitlines()]
    assert len(summ) == len(LEE_DOCS) and all("stand-in for CNN/DailyMail" in r["stand_in"] for r in summ)
    assert summ[0]["full_prompt"].endswith("Please summarize the above document in one sentence. [/INST]")
    # what eval_lm / eval_qa / eval_summarization name in the report's table titles
    from stages.nugget2d.artifacts import LMRecords

    stand_ins = LMRecords.read(out).stand_ins()
    assert set(stand_ins) == {"qa", "summarization", "wiki", "pile"} and "WikiText-103" in stand_ins["wiki"]
    _, runs = runs_of_latest_pipeline(root)
    assert runs["build_lm"].data.tags["stand_in.summarization"].startswith("lead sentence")
    assert runs["build_lm"].data.metrics["summarization/records"] == len(LEE_DOCS)
