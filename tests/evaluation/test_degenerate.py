"""Uninformative systems (`stages.common.degenerate`): each detection rule, the Wilson
interval at the extremes (`stages.common.intervals`), the log line, and the report: a
flagged cell is marked, noted, and no finding standing on it is "shown"."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.degenerate import (
    UnigramModel,
    above_unigram,
    constant_outputs,
    flag_line,
    generation_flags,
    is_loop,
    loops_or_empty,
    zero_with_zero_baseline,
)
from stages.common.intervals import hits_interval, share_interval, wilson
from stages.common.resampling import MIN_UNITS
from stages.evaluation.publish import publish
from stages.nugget2d.lm.qa import qa_flag
from stages.report.findings import (
    DEGENERATE,
    SHOWN,
    TOO_FEW,
    Cell,
    Comparison,
    Level,
    counts,
    judge,
)
from stages.report.tables import FLAG_MARK, ReportTable, eval_table
from tests.evaluation.fixtures import context, stored_table

VARIED = ["a cat sat", "two dogs ran", "the sun rose", "rain fell hard", "birds sang loudly", "a train left"]


def test_constant_outputs():
    # "The following." for every document (the Nugget AE): the majority rule
    reason = constant_outputs(["The following."] * 39 + ["Other text."])
    assert reason == "constant output: 'The following.' for 39 of 40 inputs"
    # whitespace does not make outputs differ
    assert constant_outputs(["x  y", "x y", " x y ", "z"]) is not None
    # half of the inputs is not "most"; but two distinct outputs among many is
    assert constant_outputs(["a", "b", "c", "d", "a", "a"]) is None
    assert constant_outputs(["a", "b"] * 5) == "2 distinct outputs for 10 inputs"
    assert constant_outputs(VARIED) is None
    # too few inputs to tell, and any hashable output (a ranking) works
    assert constant_outputs(["a", "a"]) is None
    assert constant_outputs([(0, 1, 2)] * 3 + [(2, 1, 0)]) is not None


def test_repetition_loops_and_empty_generations():
    assert is_loop("Cur Cur Cur Cur Cur Cur")
    assert is_loop("The city is the city is the city is the city is")
    assert is_loop("的的的的的的的的的的")  # no spaces: read by characters
    assert not is_loop("the cat sat on the mat and the dog sat on the rug")
    assert not is_loop("New York")
    assert not is_loop("1000")
    assert loops_or_empty(["", "", "an answer", "Cur Cur Cur Cur"]) == (
        "2 empty and 1 repetition loops (e.g. 'Cur Cur Cur Cur') of 4 generations")
    assert loops_or_empty(["", "an answer", "another one", "a third"]) is None  # a minority
    assert generation_flags(VARIED) is None
    assert generation_flags(["ha ha ha ha", "no no no no", "go go go go", "x"]).startswith(
        "3 repetition loops")


def test_perplexity_above_a_unigram_model():
    model = UnigramModel.fit([[0, 0, 1], np.array([0, 2])], vocab_size=4)
    assert model.counts.tolist() == [3, 1, 1, 0] and model.total == 5
    # add-one smoothing over the 4 types: p(0) = 4/9, p(3) = 1/9
    assert model.nll([0, 3]) == pytest.approx(-math.log(4 / 9) - math.log(1 / 9))
    with pytest.raises(ValueError, match="outside the vocabulary of 4"):
        UnigramModel.fit([[5]], vocab_size=4)
    assert above_unigram(666924.0, 1200.0, "word PPL") == (
        "word PPL 6.669e+05 above a unigram model of its training data (1200)")
    assert above_unigram(28.0, 1200.0) is None
    assert above_unigram(math.nan, 1200.0) is None


def test_zero_of_n_beside_a_zero_baseline():
    assert zero_with_zero_baseline(0, 10, 0, "nodoc") == "0 of 10 correct, as nodoc (the task measures nothing here)"
    assert zero_with_zero_baseline(0, 10, 3, "nodoc") is None  # the baseline answers some: 0 is a result
    assert zero_with_zero_baseline(0, 10, None, "nodoc") is None  # no baseline ran
    assert zero_with_zero_baseline(2, 10, 0, "nodoc") is None
    # eval_qa's rule: the baseline itself is flagged too, and a system's several reasons are joined
    outputs = {"nodoc": VARIED, "nugget2d 10x": [""] * 6, "full": VARIED}
    hits = {"nodoc": 0, "nugget2d 10x": 0, "full": 4}
    assert qa_flag("nodoc", outputs, hits, 6).startswith("0 of 6 correct")
    assert qa_flag("nugget2d 10x", outputs, hits, 6) == (
        "6 empty of 6 generations; constant output: '' for 6 of 6 inputs; 0 of 6 correct, as the no-document "
        "baseline (the task measures nothing here)")
    assert qa_flag("full", outputs, hits, 6) is None


def test_wilson_interval_at_0_and_n_of_n():
    """Wald's interval is ± 0 at 0 of 4; Wilson's is [0, z²/(n + z²)] and [n/(n + z²), 1]."""
    z2 = 1.96**2
    low, high = wilson(0, 4)
    assert low == 0.0 and high == pytest.approx(z2 / (4 + z2)) and high == pytest.approx(0.48990, abs=1e-5)
    low, high = wilson(4, 4)
    assert high == 1.0 and low == pytest.approx(4 / (4 + z2)) and low == pytest.approx(0.51010, abs=1e-5)
    # an interior value, by hand: p = 0.5, n = 10: centre 0.5, half 1.96 sqrt(0.025 + 0.0096) / 1.38416
    low, high = wilson(5, 10)
    half = 1.96 * math.sqrt(0.25 / 10 + z2 / 400) / (1 + z2 / 10)
    assert (low, high) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))
    assert share_interval(0.0, 4) == (0.0, pytest.approx(100 * z2 / (4 + z2)))
    assert hits_interval([True, True, True, True]) == (pytest.approx(100 * 4 / (4 + z2)), 100.0)
    assert share_interval(50.0, None) is None and hits_interval([]) is None
    with pytest.raises(ValueError, match="n=0"):
        wilson(0, 0)


def test_extremes_are_not_easier_to_show():
    """0 of 4 vs 3 of 4 is no shown difference: with Wald's ± 0 at 0 of 4 it would have been."""
    t = ReportTable("t", "T", "", ["acc"])
    t.add("nodoc", {"acc": 0.0}, "a", n=4, bounds={"acc": share_interval(0.0, 4)})
    t.add("nugget2d", {"acc": 75.0}, "b", n=4, bounds={"acc": share_interval(75.0, 4)})
    verdict = judge([t], [Comparison("f", "a below b", "p", Cell("t", "a", "acc"), Cell("t", "b", "acc"))])[0]
    assert verdict.verdict == TOO_FEW and f"fewer than the {MIN_UNITS} independent units an interval needs" in verdict.evidence
    assert verdict.evidence.startswith("nodoc 0.00 [0.00, 48.99] (n=4) vs nugget2d 75.00 [30.06, 95.44] (n=4)")
    # 0 of 20 vs 15 of 20: Wilson's intervals on both sides, the difference's interval clears 0
    t = ReportTable("t", "T", "", ["acc"])
    t.add("nodoc", {"acc": 0.0}, "a", n=20, bounds={"acc": share_interval(0.0, 20)})
    t.add("nugget2d", {"acc": 75.0}, "b", n=20, bounds={"acc": share_interval(75.0, 20)})
    assert judge([t], [Comparison("f", "a below b", "p", Cell("t", "a", "acc"), Cell("t", "b", "acc"))])[0].verdict \
        == SHOWN


def _constant_row(outputs: list[str]) -> TableRow:
    return TableRow("nugget2d r0.1", {"bleu": 90.0}, n=len(outputs), stderr={"bleu": 1.0},
                    paper_row="nugget2d_0.1", flag=generation_flags(outputs) or "")


def test_constant_output_system_is_flagged_and_its_finding_not_shown(tmp_path, caplog):
    """A constant-output Nugget2D autoencoder beside ICAE: however far apart the numbers are,
    the evaluation flags it (table, log line, MLflow) and the report marks the cell, notes why
    and calls the finding standing on it "not shown (degenerate model)"."""
    from stages.nugget2d.eval_nugget2d_ae import EvalNugget2DAE

    ctx = context(EvalNugget2DAE, {}, tmp_path / "eval_nugget2d_ae", [])
    rows = [_constant_row(["The following."] * 8), TableRow("icae r0.1", {"bleu": 10.0}, n=8, stderr={"bleu": 1.0},
                                                            paper_row="icae_0.1", flag=generation_flags(VARIED) or "")]
    with caplog.at_level(logging.WARNING):
        publish(ctx, EvalTable("AE", [Column("bleu", "BLEU")], rows), [])
    reason = "constant output: 'The following.' for 8 of 8 inputs"
    assert caplog.messages == [flag_line("eval_nugget2d_ae", "nugget2d r0.1", reason)]
    assert caplog.messages == [f"[eval_nugget2d_ae] uninformative: nugget2d r0.1: {reason}"]
    assert ctx.logger.metrics["nugget2d r0.1/uninformative"] == 1.0 and ctx.logger.metrics["uninformative_systems"] == 1
    assert ctx.logger.tags["uninformative.nugget2d r0.1"] == reason
    assert EvalTable.read(ctx.output_dir, "eval_nugget2d_ae").row("nugget2d r0.1").flag == reason
    assert f"uninformative: {reason}" in (ctx.output_dir / "table.md").read_text()

    table = eval_table("nugget2d_autoencoding", "AE", stored_table("eval_nugget2d_ae", ctx.output_dir),
                       {"bleu": "bleu"}, "ctx")
    cells = {label: m["bleu"] for label, m, _ in table.rows}
    assert cells["nugget2d r0.1"] == f"90.00 ± 1.96 (n=8) {FLAG_MARK}" and cells["icae r0.1"] == "10.00 ± 1.96 (n=8)"
    assert table.notes() == [f"{FLAG_MARK} nugget2d r0.1: {reason}"]
    finding = Comparison("nugget2d_beats_icae", "Nugget2D above ICAE", "p",
                         Cell("nugget2d_autoencoding", "icae_0.1", "bleu"),
                         Cell("nugget2d_autoencoding", "nugget2d_0.1", "bleu"))
    level = Level("lv", "Nugget2D at least 50", "p", Cell("nugget2d_autoencoding", "nugget2d_0.1", "bleu"), 50.0)
    verdicts = judge([table], [finding, level])
    assert [v.verdict for v in verdicts] == [DEGENERATE, DEGENERATE] == ["not shown (degenerate model)"] * 2
    assert verdicts[0].evidence.endswith(f"(nugget2d r0.1 is uninformative: {reason})")
    assert counts(verdicts) == {"findings_shown": 0, "findings_not_shown": 2, "findings_not_measurable": 0,
                                "findings_not_measurable_at_this_scale": 0, "findings_too_few": 0,
                                "findings_degenerate": 2}
    # the same numbers without the flag: shown
    clean = ReportTable("nugget2d_autoencoding", "AE", "", ["bleu"])
    clean.add("icae", {"bleu": 10.0}, "icae_0.1", n=20, se={"bleu": 1.0})
    clean.add("nugget2d", {"bleu": 90.0}, "nugget2d_0.1", n=20, se={"bleu": 1.0})
    assert judge([clean], [finding])[0].verdict == SHOWN and not clean.notes()


def test_eval_lm_reference_is_the_unigram_model_of_the_train_segments(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from stages.nugget2d.lm.language_modelling import unigram_flag
    from stages.nugget2d.lm.segments import unigram_model, unigram_models

    path = tmp_path / "lm_wiki.parquet"
    pq.write_table(pa.Table.from_pylist([{"split": "train", "distant": [0, 1], "recent": [1]},
                                         {"split": "test", "distant": [2], "recent": [2, 2]}]), path)
    model = unigram_model(path, vocab_size=3)
    assert model.counts.tolist() == [1, 2, 0]  # the train segments only
    # a corpus without train segments (the paper's WikiText: validation / test only) takes the others' train
    # segments, and says so; no corpus with train segments: refused
    pile = tmp_path / "lm_pile.parquet"
    pq.write_table(pa.Table.from_pylist([{"split": "train", "distant": [2], "recent": [2, 0]}]), pile)
    test_only = tmp_path / "lm_test_only.parquet"
    pq.write_table(pa.Table.from_pylist([{"split": "test", "distant": [0], "recent": [1]}]), test_only)
    models, notes = unigram_models({"wiki": test_only, "pile": pile}, vocab_size=3)
    assert models["wiki"].counts.tolist() == models["pile"].counts.tolist() == [1, 0, 2]
    assert notes == ["wiki has no train split: its unigram reference is the train segments of pile"]
    models, notes = unigram_models({"wiki": path, "pile": pile}, vocab_size=3)
    assert models["wiki"].counts.tolist() == [1, 2, 0] and not notes
    with pytest.raises(ValueError, match="none of eval.lm.corpora"):
        unigram_models({"wiki": test_only}, vocab_size=3)
    metrics = {"wiki_subword_ppl": 9.0, "wiki_unigram_ppl": 4.0, "pile_subword_ppl": 3.0, "pile_unigram_ppl": 5.0}
    assert unigram_flag(metrics, ["wiki", "pile"]) == "wiki subword PPL 9 above a unigram model of its training data (4)"
    assert unigram_flag(metrics, ["pile"]) is None
