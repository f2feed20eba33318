"""eval_similarity, eval_reconstruction and analyze_nuggets on fixture upstream artifacts
(`evaluated`: tests/evaluation/conftest.py); the report: test_report.py."""

from __future__ import annotations

import pytest

from stages.common.floors import random_mrr
from stages.nugget.artifacts.results import (
    NuggetAnalysis,
    ReconstructionResults,
    SimilarityResults,
    units_of,
)
from stages.nugget.eval_reconstruction import EvalReconstruction
from tests.evaluation.fixtures import context, make_eval_inputs


def test_similarity_covers_every_system(evaluated):
    _, _, ctx, _ = evaluated
    out = SimilarityResults.read(ctx.output_dir)
    labels = {(r["label"], r["task"]) for r in out.rows}
    # 4 sweep trials + train_nugget + RE gating + ColBART, on both tasks (not the model encoding the
    # corpus's other language: these tasks are English)
    assert len(labels) == 7 * 2 and not any("target language" in label for label, _ in labels)
    assert out.colbart_from == "sweep:mt-r0.1-l0"  # MT, lowest dev loss
    # each row names the data it was computed on: the store key of build_pi's / build_rr's artifact
    assert {(r["task"], r["data"]) for r in out.rows} == {("pi", "build_pi artifact key-build_pi"),
                                                           ("rr", "build_rr artifact key-build_rr")}
    for r in out.rows:
        assert 100 / 4 <= r["mrr"] <= 100  # 4 candidates
    single = [r for r in out.rows if r["mode"] == "bottleneck"]
    assert single and all(r["vectors_per_doc"] == 1 for r in single)
    colbart = next(r for r in out.rows if r["mode"] == "colbart")
    nugget = next(r for r in out.rows if r["label"] == "sweep:mt-r0.1-l0" and r["task"] == colbart["task"])
    assert colbart["vectors_per_doc"] > nugget["vectors_per_doc"]  # all states vs ~10%
    mrr = {k: v for k, v in ctx.logger.metrics.items() if k.startswith("mrr.")}
    assert len(mrr) == 2 * 14 and "similarity.csv" in ctx.logger.artifacts  # each MRR + its _n
    assert all(mrr[f"{k}_n"] > 0 for k in mrr if not k.endswith("_n"))
    # the systems whose candidate rankings are (nearly) the same for every task, counted and flagged
    flagged = {(r["label"], r["task"]) for r in out.rows if r["uninformative"]}
    assert ctx.logger.metrics["uninformative_systems"] == len(flagged)
    assert all(r["uninformative"].startswith("candidate ranking: ") for r in out.rows if r["uninformative"])
    # the unit is the query: per query its reciprocal rank, the same query ids for every system (what pairs two
    # systems); 6 queries are too few for an interval (stages.common.resampling.MIN_UNITS)
    for r in out.rows:
        (units,) = units_of(r).values()
        assert units.unit == "query document" and units.ids == tuple(f"L{i}" for i in range(6))
        assert units.n == r["n_tasks"] == 6 and units.value() == pytest.approx(r["mrr"])
        assert "mrr_low" not in r and f"mrr.{r['task']}.{r['label'].replace(':', '_')}_low" not in ctx.logger.metrics
    # the floor: a random ranking of the 4 candidates of each query, on the same queries, logged with its n
    assert {t: f.value for t, f in out.floors.items()} == pytest.approx({t: random_mrr(4) for t in ("pi", "rr")})
    assert ctx.logger.metrics["mrr_floor.pi"] == pytest.approx(random_mrr(4)) and ctx.logger.metrics["mrr_floor.pi_n"] == 6


def test_reconstruction_bleu_and_figure(evaluated):
    _, _, _, ctx = evaluated
    out = ReconstructionResults.read(ctx.output_dir)
    assert {r["name"] for r in out.rows} == {
        "sweep:ae-r0.1-l1", "sweep:ae-r0.25-l1", "sweep:mt-r0.1-l1", "sweep:mt-r0.1-l0", "train_nugget",
        "baseline:re_gating"}
    assert all(0 <= r["bleu"] <= 100 and r["n_docs"] == 4 for r in out.rows)
    # each corpus BLEU with its documents' statistics (the same document ids in every system's sample), logged
    # with its n; 4 documents are too few for an interval (test_nugget_units: 16 are enough)
    for r in out.rows:
        units = units_of(r)["bleu"]
        assert units.unit == "document" and units.ids == ("d2-0", "d2-1", "d2-2", "d2-3")  # build_mt_docs' doc_id
        assert units.value() == pytest.approx(r["bleu"]) and "bleu_low" not in r
        name = f"bleu.{r['name'].replace(':', '_')}"
        assert [ctx.logger.metrics[name + end] for end in ("", "_n")] == [r["bleu"], 4]
        assert name + "_low" not in ctx.logger.metrics
    # the floors of the AE and the MT references, on the same 4 documents
    assert set(out.floors) == {"ae", "mt"} and all(f.value >= 10 and f.higher_is_better for f in out.floors.values())
    assert ctx.logger.metrics["bleu_floor.ae"] == out.floors["ae"].value and ctx.logger.metrics["bleu_floor.ae_n"] == 4
    assert out.beam_size == 5
    (png,) = out.figures()
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_analyze_nuggets_on_fixture(evaluated):
    from stages.nugget.analyze_nuggets import AnalyzeNuggets

    root, inputs, _, _ = evaluated
    ctx = context(AnalyzeNuggets, inputs, root / "out_an",
                  ["eval.analysis_docs=6", "eval.highlight_docs=2", "eval.probe_docs=2", "eval.batch_size=4"])
    AnalyzeNuggets().run(ctx)
    analysis = NuggetAnalysis.read(ctx.output_dir)
    freq = analysis.token_frequency
    # ratio 0.1 picked; neither layer is the default (3): the lower first; appendix D: the model encoding the
    # other side, on that side
    assert set(freq) == {"sweep:ae-r0.1-l1", "sweep:mt-r0.1-l0", "baseline:nugget_ae_tgtlang"}
    other = freq["baseline:nugget_ae_tgtlang"]
    assert other["encoder_side"] == "target" and other["n_tokens"] > 0
    assert all(t == t.strip() and "Ġ" not in t for t, _, _ in other["top"])  # tokens as text
    assert "punct_share_nuggets.ae_tgtlang" in ctx.logger.metrics and "punct_share_nuggets.ae" in ctx.logger.metrics
    # the report: English in fig. 5, both languages in appendix D, each number with its n
    from stages.report.nugget_tables import multilingual_token_table, token_table

    assert not any("target language" in r[0] for r in token_table(analysis, "ctx").rows)
    langs = {"source": "English (en_XX)", "target": "Chinese (zh_CN)"}
    rows = multilingual_token_table(analysis, "ctx", langs).rows
    assert any(r[0].startswith("punctuation (Chinese (zh_CN), AE") for r in rows)
    assert any(r[0].startswith("punctuation (English (en_XX), AE") for r in rows)
    assert all("(n=" in cell for r in rows for cell in r[1].values())
    from stages.report.published import SOURCES

    assert "appendix D" in SOURCES["nugget_appD"]

    ae = freq["sweep:ae-r0.1-l1"]
    assert sum(c for _, c, _ in ae["top"]) <= 100 + 1e-9  # percentages; float rounding
    # every share stands on the 6 documents counted (its unit), not on the tokens: per document its counts
    for stats in freq.values():
        units = units_of(stats)
        assert set(units) == {*NuggetAnalysis.SHARE_KEYS, *(f"top/{i}/share_{side}" for i in range(len(stats["top"]))
                                                            for side in ("nuggets", "text"))}
        for sample in units.values():
            assert sample.unit == "document" and sample.ids == tuple(f"d2-{i}" for i in range(6))
        for key in NuggetAnalysis.SHARE_KEYS:
            assert units[key].value() == pytest.approx(stats[key])
        assert units["the_share_nuggets"].stats[:, 1].sum() == stats["n_nuggets"] and stats["n_docs"] == 6
        assert stats["intervals"] == {} and stats["ignores_input"] == ""  # 6 documents: no interval
    assert ctx.logger.metrics["punct_share_nuggets.ae_n"] == 6  # documents
    fig5 = token_table(analysis, "ctx")
    assert {v.n for _, _, v in fig5.numbers} == {6} and {v.unit for _, _, v in fig5.numbers} == {"document"}
    assert ae["n_nuggets"] < ae["n_tokens"]
    page = (ctx.output_dir / "nuggets.html").read_text()
    assert page.count("background: #b6f2b6") >= 2  # at least one nugget per document
    gain = analysis.probability_gain
    assert gain["documents"] == 2
    # fig. 8: one curve per document length that fits the model and the dev text, the rest named
    assert set(gain["relative"]) | set(gain["relative_skipped"]) == {"64", "128", "256"}
    assert gain["relative"]["64"]["documents"] >= 1 and "0" in gain["relative"]["64"]["gain"]
    # fig. 7: the paper's 3rd / 6th / 9th nuggets where documents have them, with their counts
    assert set(gain["nuggets_shown"]) <= {3, 6, 9}
    for name in ("token_frequency.png", "probability_gain.png", "nugget_positions.png", "probability_gain_relative.png"):
        assert (ctx.output_dir / name).read_bytes()[:4] == b"\x89PNG"
    assert {p.name for p in analysis.figures()} == set(NuggetAnalysis.FIGURES)  # the report finds every figure
    # every counted document of every model: its text, nugget tokens and positions
    import json

    samples = [json.loads(x) for x in (ctx.output_dir / NuggetAnalysis.SAMPLES).read_text().splitlines()]
    assert sorted((s["system"], s["id"]) for s in samples) == sorted((m, i) for m in freq for i in range(6))
    for s in samples:
        assert s["document"] and s["nuggets"] == len(s["output"]) == len(s["nugget_positions"]) > 0
        assert s["tokens"] > s["nuggets"] and s["target"] is None and s["empty_output"] is None
    ae_docs = [s for s in samples if s["system"] == "sweep:ae-r0.1-l1"]
    assert sum(s["nuggets"] for s in ae_docs) == ae["n_nuggets"] and sum(s["tokens"] for s in ae_docs) == ae["n_tokens"]
    assert len(ctx.logger.tables["tables/examples.json"]["document"]) == len(samples)


def test_reconstruction_decodes_whole_documents(tmp_path, monkeypatch):
    """Beam search may write the longest reference whole (+ the margin);
    it used to stop at the QA generation cap (eval.max_new_tokens, 64 < 128-subword documents)."""
    import pyarrow.parquet as pq

    from stages.nugget.encoders import LoadedSystem

    limits = []

    def spy(self, texts, batch_size, num_beams, max_new_tokens):
        limits.append((self.system.objective, max_new_tokens, self.tokenizer))
        return ["" for _ in texts]

    monkeypatch.setattr(LoadedSystem, "decode", spy)
    inputs = make_eval_inputs(tmp_path / "inputs")
    EvalReconstruction().run(context(EvalReconstruction, inputs, tmp_path / "out",
                                     ["eval.max_examples=4", "eval.reconstruction_extra_tokens=3"]))
    dev = pq.read_table(inputs["build_mt_docs"].path / "dev.parquet").to_pydict()
    assert limits
    for objective, limit, tokenizer in limits:
        refs = dev["source" if objective == "ae" else "target"][:4]
        assert limit == max(len(ids) for ids in tokenizer(refs)["input_ids"]) + 3


def test_reconstruction_reads_the_configured_split(tmp_path, monkeypatch):
    """eval.nugget_split=test: the documents decoded and scored are the test split's (a profile whose
    settings were chosen on dev never scores them on dev), and the results say so."""
    import pyarrow.parquet as pq

    from stages.nugget.encoders import LoadedSystem

    decoded: list[list[str]] = []

    def spy(self, texts, batch_size, num_beams, max_new_tokens):
        decoded.append(list(texts))
        return list(texts)

    monkeypatch.setattr(LoadedSystem, "decode", spy)
    inputs = make_eval_inputs(tmp_path / "inputs")
    ctx = context(EvalReconstruction, inputs, tmp_path / "out", ["eval.max_examples=3", "eval.nugget_split=test"])
    EvalReconstruction().run(ctx)
    test = pq.read_table(inputs["build_mt_docs"].path / "test.parquet").to_pydict()["source"][:3]
    dev = pq.read_table(inputs["build_mt_docs"].path / "dev.parquet").to_pydict()["source"][:3]
    assert decoded and all(texts == test for texts in decoded) and test != dev
    assert ReconstructionResults.read(ctx.output_dir).split == "test"


def test_tokens_of_another_language_read_as_text():
    from stages.nugget.analyze_nuggets import readable_token
    from tests.lm_eval.fixtures import make_tokenizer

    tok = make_tokenizer()
    word = tok.convert_ids_to_tokens(tok(" the", add_special_tokens=False)["input_ids"])[0]
    assert readable_token(tok, word) == "the"
    # whitespace is named, not shown as an invisible cell (stages.common.tokens.display_token)
    assert readable_token(tok, tok.convert_ids_to_tokens(tok(" ", add_special_tokens=False)["input_ids"])[0]) == "[space]"
    pieces = tok.convert_ids_to_tokens(tok("中", add_special_tokens=False)["input_ids"])
    assert len(pieces) == 3  # an English-trained BPE keeps the character's three UTF-8 bytes apart
    assert [readable_token(tok, p) for p in pieces] == [f"{p} (part of a character)" for p in pieces]


def test_analyze_nuggets_picks_the_default_layer():
    """Fig. 5 describes AE at r = 0.1 and the default scorer layer (the paper's l = 3): the sweep's l = 0
    ablation never stands for it when the default layer was trained."""
    from pathlib import Path

    from stages.nugget.analyze_nuggets import pick
    from stages.nugget.systems import System

    def nugget(name: str, ratio: float, layer: int) -> System:
        return System(name, "nugget", Path(name), "ae", "sweep_nugget", ratio=ratio, scorer_layer=layer)

    systems = [nugget("sweep:ae-r0.1-l0", 0.1, 0), nugget("sweep:ae-r0.1-l3", 0.1, 3), nugget("sweep:ae-r0.25-l3", 0.25, 3)]
    assert pick(systems, "ae", 3).name == "sweep:ae-r0.1-l3"
    assert pick(systems[:1] + systems[2:], "ae", 3).name == "sweep:ae-r0.1-l0"  # r = 0.1 first


def test_reconstruction_and_similarity_keep_every_sample(evaluated):
    """Every decoded document / ranked task is a sample row with its input, target, output and
    metrics, in the file and in the MLflow table (`stages.evaluation.samples`)."""
    import json

    _, _, sim_ctx, rec_ctx = evaluated
    rows = [json.loads(x) for x in (rec_ctx.output_dir / ReconstructionResults.EXAMPLES).read_text().splitlines()]
    results = ReconstructionResults.read(rec_ctx.output_dir).rows
    assert ReconstructionResults.EXAMPLES == "examples.jsonl" and len(rows) == len(results) * 4
    assert [(r["system"], r["id"]) for r in rows] == [(s["name"], i) for s in results for i in range(4)]
    for r in rows:
        assert r["document"] and r["target"] and isinstance(r["output"], str)
        assert 0 <= r["bleu"] <= 100 and 0 <= r["chrf"] <= 100 and isinstance(r["empty_output"], bool)
        assert r["target"] == r["document"] if r["objective"] == "ae" else r["target"] != r["document"]
    assert len(rec_ctx.logger.tables["tables/examples.json"]["output"]) == len(rows)

    ranks = [json.loads(x) for x in (sim_ctx.output_dir / SimilarityResults.EXAMPLES).read_text().splitlines()]
    assert len(ranks) == sum(r["n_tasks"] for r in SimilarityResults.read(sim_ctx.output_dir).rows)
    for r in ranks:
        top = {c["id"]: c["text"] for c in r["top"]}
        assert len(top) == min(5, r["candidates"]) and [c["id"] for c in r["top"]] == r["ranking"][:5]
        assert r["query"] and r["target"] and r["output"] == top[r["top_hit"]]
        assert len(r["ranking"]) == min(100, r["candidates"]) == len(set(r["ranking"]))
        assert r["ranking"][0] == r["top_hit"] and r["reciprocal_rank_x100"] == 100 / r["rank"]
        assert r["task"] in ("pi", "rr") and r["degenerate"] is None
    assert len(sim_ctx.logger.tables["tables/examples.json"]["rank"]) == len(ranks)


def test_nugget_lm_article_rows_hold_the_scored_text_and_its_perplexity():
    import math

    from stages.evaluation.perplexity import PerplexityCounts
    from stages.nugget.eval_nugget_lm import article_samples

    counts = [PerplexityCounts(subword_nll=6.0, subwords=3, word_nll=6.0, words=2, oov_words=1)]
    (row,) = article_samples("nugget_r0.1", {"h": 2}, ["an article"], counts)
    assert (row["id"], row["system"], row["h"], row["target"], row["output"]) == (0, "nugget_r0.1", 2, "an article", None)
    assert (row["loss"], row["word_ppl"], row["subword_ppl"]) == (2.0, math.exp(3.0), math.exp(2.0))
    assert (row["words"], row["tokens"], row["oov_words"], row["degenerate"]) == (2, 3, 1, None)
