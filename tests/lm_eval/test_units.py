"""Resampling units, floors and input use of the Nugget2D evaluations (eval_nugget2d_ae, eval_lm, eval_qa, eval_summarization):
every interval resamples the independent unit and every row keeps its per-unit statistics
(`stages.common.resampling.UnitSample`, ids shared across systems), each table stores its
competence floors, and a row of a model whose fit found it ignores its input says so.

The autoencoding stage runs here on fake models (``reconstruct`` recalls a document-dependent
prefix of each window, the same at every length), the rest of it as in a run."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from stages.artifacts.evaluate import EvalTable
from stages.nugget2d import eval_nugget2d_ae
from stages.nugget2d.artifacts import BaseLM, LMRecords, PreparedLM, TrainedNugget2D
from stages.nugget2d.config import AutoencodingEval
from stages.nugget2d.eval_nugget2d_ae import AutoencodingConfig, AutoencodingInputs, EvalNugget2DAE
from tests.evaluation.fixtures import context
from tests.lm_eval.fixtures import TEXTS, make_tokenizer

DOCUMENTS = 20  # MIN_UNITS: the documents' bootstrap interval exists
STATE = {"step": 4, "initial_dev_loss": 7.0, "exported_dev_loss": 6.691, "dev_loss_n": 40, "tokens_seen": 400}


def _recall(model, docs, batch_size, extra, eos, pad_id):
    """A fake model's reconstruction: a document-dependent prefix of each window, then its last
    token repeated; L = 8 is a prefix of L = 16, so a document does as well at both lengths."""
    out = [d[: 4 + d[0] % 9] + [d[-1]] * (len(d) - 4 - d[0] % 9) for d in docs]
    return out, [3] * len(docs)


def _autoencoding_run(tmp_path, monkeypatch) -> tuple:
    """eval_nugget2d_ae on ``DOCUMENTS`` test windows (one per document), lengths 8 and 16, with
    Nugget2D r0.1 and ICAE r0.1 (fake: `_recall`); returns its context and the windows."""
    prepared = tmp_path / "prepare_lm"
    tokenizer = make_tokenizer(BaseLM.folder(prepared))
    windows = [tokenizer(f"{TEXTS[2 * i]} {TEXTS[2 * i + 1]}", add_special_tokens=False)["input_ids"][:24]
               for i in range(DOCUMENTS)]
    build = tmp_path / "build_lm"
    build.mkdir()
    pq.write_table(pa.Table.from_pylist([{"split": "test", "document_id": f"wiki-{i}", "doc": w[:12],
                                          "prompt": w[12:16], "answer": w[16:]} for i, w in enumerate(windows)]),
                   LMRecords.continuation_file(build))
    trained = tmp_path / "train_nugget2d_ae"
    for folder in (TrainedNugget2D.folder(trained), TrainedNugget2D.variant_folder(trained, "icae_r0.1")):
        folder.mkdir(parents=True)
        (folder.parent / "trainer_state.json").write_text(json.dumps(STATE))
    (trained / "trained.json").write_text(json.dumps({
        "objective": "autoencoding", "ratio": 0.1,
        "variants": {"icae_r0.1": {"dir": "variants/icae_r0.1/nugget2d", "objective": "icae", "ratio": 0.1}}}))
    monkeypatch.setattr(TrainedNugget2D, "load_from",
                        lambda self, prepared, device="cpu", precision="fp32": (object(), BaseLM(BaseLM.folder(
                            prepared))))
    monkeypatch.setattr(eval_nugget2d_ae, "reconstruct", _recall)
    monkeypatch.setattr(eval_nugget2d_ae, "nugget_tokens", lambda model, tok, docs, batch_size: (
        [["A", ",", " b", "."]] * len(docs), [[True, True, False, False]] * len(docs)))
    ctx = context(EvalNugget2DAE, {}, tmp_path / "eval_nugget2d_ae", [])
    config = AutoencodingConfig(AutoencodingEval(lengths=[8, 16], max_docs=0, batch_size=4, extra_tokens=2,
                                                 analysis_docs=4, top_tokens=1, highlight_docs=1), "fp32")
    inputs = AutoencodingInputs(PreparedLM(prepared), LMRecords(build), TrainedNugget2D.read(trained,
                                                                                           "train_nugget2d_ae"))
    EvalNugget2DAE().compute(ctx, config, inputs)
    return ctx, windows


def test_the_same_documents_at_two_lengths_are_one_unit(tmp_path, monkeypatch):
    """20 documents, each at L = 8 and L = 16 (a prefix of it): the overall
    BLEU's n is 20 documents, not 40 document x length pairs, and its interval is the bootstrap over
    documents, not the one that resamples the 40 pairs as independent. Fails on 7fe72b7 (n = 40)."""
    ctx, _ = _autoencoding_run(tmp_path, monkeypatch)
    table = EvalTable.read(ctx.output_dir, "eval_nugget2d_ae")
    row = table.row("nugget2d r0.1")
    assert row.n == DOCUMENTS  # 7fe72b7: 40, every document counted once per length

    from stages.common.resampling import UnitSample
    from stages.evaluation.metrics import bleu_statistics

    examples = [json.loads(x) for x in (ctx.output_dir / "examples.jsonl").read_text().splitlines()]
    mine = [e for e in examples if e["system"] == "nugget2d r0.1"]
    assert len(mine) == 2 * DOCUMENTS
    stats = bleu_statistics([e["output"] for e in mine], [e["target"] for e in mine])
    documents = UnitSample.of("document", "bleu", [e["document_id"] for e in mine], stats)
    pairs = UnitSample.of("pair", "bleu", range(len(mine)), stats)  # 7fe72b7's unit: document x length
    units = row.units["bleu"]
    assert (units.unit, units.n, units.ids) == ("document", DOCUMENTS, tuple(f"wiki-{i}" for i in range(DOCUMENTS)))
    assert units.value() == pytest.approx(row.metrics["bleu"]) == pytest.approx(pairs.value())
    by_pairs = pairs.interval()
    assert by_pairs is not None and row.interval["bleu"] == documents.interval() != by_pairs
    low, high = row.interval["bleu"]
    assert high - low > by_pairs[1] - by_pairs[0]  # a document's two lengths vary together
    for n in (8, 16):  # per length: over the documents of that length
        assert row.units[f"bleu_L{n}"].n == row.metrics[f"n_bleu_L{n}"] == DOCUMENTS
        assert row.metrics[f"n_states_L{n}"] == DOCUMENTS
    # ICAE is scored on the same documents: the report's finding pairs the two over them
    assert table.row("icae r0.1").units["bleu"].ids == units.ids
    from stages.report.findings import FINDINGS, judge
    from stages.report.tables import eval_table
    from tests.evaluation.fixtures import stored_table

    report = eval_table("nugget2d_autoencoding", "AE", stored_table("eval_nugget2d_ae", ctx.output_dir),
                        {"bleu": "bleu"}, "ctx")
    cells = {v.label: v for _, _, v in report.numbers}
    cell_units = cells["nugget2d r0.1"].units
    assert cell_units is not None and cell_units.to_json() == units.to_json()
    assert cells["nugget2d r0.1"].floor == table.floors["bleu"]
    (verdict,) = judge([report], [f for f in FINDINGS if f.id == "nugget2d_beats_icae"])
    assert f"paired bootstrap over {DOCUMENTS} documents" in verdict.evidence, verdict


def test_autoencoding_floors_token_shares_and_mlflow(tmp_path, monkeypatch):
    """Each BLEU's floor is the reconstruction floor of its own references; the §4.3 shares
    resample documents; floors and interval ends reach MLflow with their n."""
    from stages.evaluation.task_floors import reconstruction_floor

    ctx, windows = _autoencoding_run(tmp_path, monkeypatch)
    table = EvalTable.read(ctx.output_dir, "eval_nugget2d_ae")
    tokenizer = BaseLM(BaseLM.folder(tmp_path / "prepare_lm")).tokenizer()
    references = {n: [tokenizer.decode(w[:n], skip_special_tokens=True) for w in windows] for n in (8, 16)}
    assert set(table.floors) == {"bleu", "bleu_L8", "bleu_L16"}
    assert table.floors["bleu_L8"] == reconstruction_floor(references[8])
    assert table.floors["bleu"] == reconstruction_floor(references[8] + references[16])
    assert table.floors["bleu"].value >= 10 and table.floors["bleu"].higher_is_better
    punctuation = table.row("tokens: punctuation")
    assert punctuation.n == 4 and punctuation.units["share_nuggets"].unit == "document"
    assert punctuation.metrics["share_nuggets"] == 50.0 and punctuation.metrics["share_text"] == 50.0
    assert punctuation.units["share_nuggets"].stats.tolist() == [[100.0, 2.0]] * 4
    metrics = ctx.logger.metrics
    assert metrics["floor/bleu"] == table.floors["bleu"].value and metrics["nugget2d r0.1/bleu_units"] == DOCUMENTS
    assert {"nugget2d r0.1/bleu_low", "nugget2d r0.1/bleu_high", "nugget2d r0.1/n"} <= set(metrics)
    assert metrics["nugget2d r0.1/n"] == DOCUMENTS


def test_windows_of_one_document_are_one_unit_and_taken_across_documents():
    """Windows cut from one article share its topic and words: all of a document's windows, at
    every length, are one unit; and ``max_docs`` windows are taken across documents first."""
    from stages.nugget2d.eval_nugget2d_ae import bleu_cells, length_docs, spread

    windows = [("a", [1] * 30), ("a", [2] * 30), ("a", [3] * 10), ("b", [4] * 30), ("c", [5] * 30), ("c", [6] * 30)]
    assert [w[1][0] for w in spread(windows)] == [1, 4, 5, 2, 6, 3]
    by_length = length_docs(spread(windows), [8, 20], max_docs=4)
    assert {n: [(d, w[0]) for d, w in g] for n, g in by_length.items()} == {
        8: [("a", 1), ("b", 4), ("c", 5), ("a", 2)], 20: [("a", 1), ("b", 4), ("c", 5), ("a", 2)]}
    texts = {n: ["x y z w"] * 4 for n in (8, 20)}
    cells, units, interval = bleu_cells(texts, texts, {n: [d for d, _ in g] for n, g in by_length.items()})
    assert units["bleu"].ids == ("a", "b", "c") and units["bleu"].stats[0, 0] == 4 * 4  # a: 2 windows x 2 lengths
    assert cells["n_bleu_L8"] == 3 and cells["bleu"] == pytest.approx(100.0) and not interval
    with pytest.raises(ValueError, match="no document of the split holds 40 tokens"):
        length_docs(windows, [40], 0)


def _summary(reason_model: bool):
    from stages.artifacts.trainer_state import InputUse, TrainingSummary

    use = InputUse(own=6.691, other=6.690, low=-0.004, high=0.003, n=40) if reason_model else \
        InputUse(own=2.0, other=4.5, low=2.1, high=2.9, n=40)
    return TrainingSummary("m", 4, 7.0, use.own, 40, 400, input_use=use)


def test_rows_carry_the_input_use_of_their_own_model(tmp_path, monkeypatch):
    """Each row gets the InputUse of the model it decoded with, and only that one: ICAE's (not
    Nugget2D's) in the autoencoding table; the AR model's and the trained baselines' in table 1;
    the model trained at a QA row's ratio; train_nugget2d_ft's / train_full_ft's in table 4. A
    summary without InputUse (not measured) gives none."""
    from stages.artifacts.trainer_state import TrainingSummary
    from stages.nugget2d.config import LMEval
    from stages.nugget2d.eval_lm import EvalLM
    from stages.nugget2d.eval_qa import EvalQA
    from stages.nugget2d.eval_summarization import EvalSummarization

    ignoring = {"icae", "compressive", "r0.2", "nugget2d_ft"}  # the models whose fit says they ignore their input
    monkeypatch.setattr(TrainedNugget2D, "summary", lambda self, stage="train_nugget2d": _summary(
        any(m in self.path.relative_to(tmp_path).as_posix() for m in ignoring)), raising=False)
    reason = _summary(True).input_use.reason()
    assert reason.startswith("ignores its input") and not _summary(False).input_use.reason()

    ctx, _ = _autoencoding_run(tmp_path, monkeypatch)
    table = EvalTable.read(ctx.output_dir, "eval_nugget2d_ae")
    assert table.row("icae r0.1").ignores_input == reason and table.row("nugget2d r0.1").ignores_input == ""
    assert f"icae r0.1: {reason}." in table.legend()

    ar = TrainedNugget2D(tmp_path / "ar" / "nugget2d", "autoregressive", ratio=0.1, variants={
        s: {"dir": f"variants/{s}/nugget2d", "objective": s, "ratio": 0.1} for s in ("full", "compressive")})
    systems = ["full", "compressive", "nugget2d", "streaming_llm"]
    assert EvalLM.input_use(LMEval(systems=systems, baseline_adapter="trained"), ar) == {"compressive": reason}
    assert EvalLM.input_use(LMEval(systems=systems, baseline_adapter="decoder"), ar) == {}

    compressor = TrainedNugget2D(tmp_path / "c" / "nugget2d", "continuation", ratio=0.1, variants={
        "r0.2": {"dir": "variants/r0.2/nugget2d", "objective": "continuation", "ratio": 0.2}})
    main, loaded = object(), object()
    at_5x = EvalQA.ratio_model(compressor, 0.2, main, lambda m: loaded)
    at_10x = EvalQA.ratio_model(compressor, 0.1, main, lambda m: loaded)
    assert (at_5x.model, at_5x.trained_ratio, at_5x.ignores_input) == (loaded, 0.2, reason)
    assert (at_10x.model, at_10x.trained_ratio, at_10x.ignores_input) == (main, 0.1, "")

    unmeasured = TrainingSummary("train_full_ft", 4, 7.0, 6.0, 40, 400)  # input_use None: not measured
    inputs: Any = SimpleNamespace(nugget2d=TrainedNugget2D(tmp_path / "ft" / "nugget2d_ft" / "nugget2d", "finetune"),
                             full_ft=SimpleNamespace(training=lambda: [unmeasured]))
    assert EvalSummarization.input_use(["full_zs", "full_ft", "nugget2d_ft"], inputs) == {"nugget2d_ft": reason}
    assert EvalSummarization.input_use(["full_zs", "full_ft"], inputs) == {}


def test_lm_segments_are_taken_across_articles_with_their_ids(tmp_path):
    """eval_lm's capped segments span as many articles as they can (every article's first segment,
    then every one's second), each with its article; a file without ``document_id`` (an older
    build_lm) is a clear error."""
    from stages.nugget2d.lm.segments import read_documents

    path = tmp_path / "lm_wiki.parquet"
    rows = [{"split": "test", "document_id": d, "distant": [i], "recent": [i]}
            for i, d in enumerate(["wiki-0", "wiki-0", "wiki-0", "wiki-1", "wiki-2", "wiki-2"])]
    pq.write_table(pa.Table.from_pylist([*rows, {"split": "train", "document_id": "wiki-3", "distant": [9],
                                                 "recent": [9]}]), path)
    segments, documents = read_documents(path, "test", 4)
    assert [d for d, _ in segments] == [[0], [3], [4], [1]] and documents == ["wiki-0", "wiki-1", "wiki-2", "wiki-0"]
    assert len(read_documents(path, "test", 0)[0]) == 6
    pq.write_table(pa.Table.from_pylist([{k: v for k, v in r.items() if k != "document_id"} for r in rows]), path)
    with pytest.raises(ValueError, match=r"lm_wiki.parquet has no column \['document_id'\].*rerun build_lm"):
        read_documents(path, "test", 0)


def test_token_rows_resample_documents_not_tokens():
    """A document's nugget tokens are not independent: each share is a `UnitSample` over documents
    (per document 100 x its matching nuggets / tokens and its nuggets / tokens), n = documents."""
    from stages.nugget2d.eval_nugget2d_ae import token_rows

    rows = token_rows([["A", ",", " b", "."], ["c", "!"], ["d", ","]], [[False, True, False, True], [True, False],
                                                                        [False, True]], top=2,
                      documents=["wiki-0", "wiki-1", "wiki-0"])
    punct = rows[0]
    assert punct.metrics["share_nuggets"] == 75.0 and punct.metrics["share_text"] == 50.0
    assert punct.n == 2 and punct.units["share_nuggets"].ids == ("wiki-0", "wiki-1")
    assert punct.units["share_nuggets"].stats.tolist() == [[300.0, 3.0], [0.0, 1.0]]
    assert punct.units["share_text"].stats.tolist() == [[300.0, 6.0], [100.0, 2.0]]
    assert "4 nuggets among 8 tokens of 2 documents" == punct.note
