"""eval_harness's table and sample rows from lm-evaluation-harness's results (plain dicts, the
layout `simple_evaluate` returns; `stages.nugget2d.harness.results`)."""

from __future__ import annotations

import math

import pytest

from stages.artifacts.evaluate import EvalTable
from stages.common.intervals import wilson
from stages.common.resampling import MIN_UNITS, UnitSample
from stages.nugget2d.harness.results import (
    columns,
    metric_interval,
    not_applicable_row,
    sample_rows,
    stderr_metrics,
    system_rows,
)

RESULTS = {
    "results": {
        "nugget_cloze": {"alias": "nugget_cloze", "acc,none": 0.5, "acc_stderr,none": 0.25,
                         "acc_norm,none": 0.75, "acc_norm_stderr,none": 0.2},
        "nugget_lm_wiki": {"alias": "nugget_lm_wiki", "word_perplexity,none": 120.0,
                           "word_perplexity_stderr,none": "N/A", "bits_per_byte,none": 1.5,
                           "bits_per_byte_stderr,none": "N/A"},
        "gsm": {"alias": "gsm", "exact_match,strict-match": 0.1, "exact_match_stderr,strict-match": 0.05},
    },
    "n-samples": {"nugget_cloze": {"original": 10, "effective": 4}, "nugget_lm_wiki": {"original": 3, "effective": 3},
                  "gsm": {"original": 9, "effective": 2}},
}


def test_a_proportion_s_interval_is_wilson_s():
    """acc / acc_norm / exact_match are shares of n examples: Wilson's interval, inside [0, 1] and of
    non-zero width at 0 or n of n, never the harness's value ± 1.96 stderr (the tiny report's
    [-0.48, 1.48] and [1, 1])."""
    rows = {r.system: r for r in system_rows("full", RESULTS)}
    cloze = rows["nugget_cloze full"]
    assert cloze.n == 4 and cloze.metrics == {"acc": 0.5, "acc_norm": 0.75}
    assert cloze.interval["acc"] == pytest.approx(wilson(2, 4))
    assert cloze.interval["acc_norm"] == pytest.approx(wilson(3, 4))
    assert cloze.interval["acc"] != pytest.approx((0.5 - 1.96 * 0.25, 0.5 + 1.96 * 0.25))
    assert not cloze.stderr  # shown as the interval only
    assert rows["gsm full"].metrics == {"exact_match:strict-match": 0.1}  # a filter other than none is named
    assert rows["gsm full"].interval["exact_match:strict-match"] == pytest.approx(wilson(0.2, 2))
    # the tiny report's rows: acc_norm 0.5 of 2 (stderr 0.5), exact_match 0 of 2 and 1 of 1 (stderr 0)
    extremes = {"results": {"t": {"acc_norm,none": 0.5, "acc_norm_stderr,none": 0.5, "exact_match,none": 0.0,
                                  "exact_match_stderr,none": 0.0},
                            "u": {"acc,none": 1.0, "acc_stderr,none": 0.0}},
                "n-samples": {"t": {"effective": 2}, "u": {"effective": 1}}}
    got = {r.system: r.interval for r in system_rows("x", extremes)}
    assert got["t x"]["acc_norm"] == pytest.approx(wilson(1, 2)) and 0 < got["t x"]["acc_norm"][0] < 0.5
    assert got["t x"]["exact_match"][0] == 0.0 and got["t x"]["exact_match"][1] == pytest.approx(1.96 ** 2 / (2 + 1.96 ** 2))
    assert got["u x"]["acc"][1] == 1.0 and got["u x"]["acc"][0] == pytest.approx(1 / (1 + 1.96 ** 2))
    # no n, no Wilson interval: the harness's normal one
    assert metric_interval("acc", 0.5, 0.1, None) == pytest.approx((0.5 - 0.196, 0.5 + 0.196))


def test_a_perplexity_s_interval_is_the_bootstrap_over_documents():
    """The corpus-level perplexities and bits per byte (the harness gives them no stderr): the
    pipeline's percentile bootstrap over the logged documents' (log-likelihood, words / bytes)."""
    docs = [(-10.0 - i, 4 + i % 3, 20 + i) for i in range(MIN_UNITS)]  # log-likelihood, words, bytes
    samples = [{"doc_id": i, "filter": "none", "word_perplexity": (ll, w), "byte_perplexity": (ll, b),
                "bits_per_byte": (ll, b)} for i, (ll, w, b) in enumerate(docs)]
    results = {"results": {"nugget_lm_wiki": RESULTS["results"]["nugget_lm_wiki"]},
               "n-samples": {"nugget_lm_wiki": {"effective": len(docs)}}, "samples": {"nugget_lm_wiki": samples}}
    (row,) = system_rows("full", results)
    nll, words, chars = [-d[0] for d in docs], [d[1] for d in docs], [d[2] for d in docs]
    by_doc = UnitSample.of("document", "exp_ratio", range(len(docs)), list(zip(nll, words, strict=True)))
    assert row.interval["word_perplexity"] == pytest.approx(by_doc.interval())
    low, high = row.interval["bits_per_byte"]
    byte_low, byte_high = UnitSample.of("document", "exp_ratio", range(len(docs)),
                                        list(zip(nll, chars, strict=True))).interval()
    # bits per byte is log2 of byte perplexity: the same resamples, so the same interval on its scale
    assert (low, high) == pytest.approx((math.log2(byte_low), math.log2(byte_high)), rel=1e-6)
    # without samples, or below the MIN_UNITS documents a bootstrap interval needs, no interval: the harness's "N/A"
    # stderr gives none
    (bare,) = system_rows("full", {**results, "samples": {}})
    assert not bare.interval
    (few,) = system_rows("full", {**results, "samples": {"nugget_lm_wiki": samples[:MIN_UNITS - 1]}})
    assert not few.interval
    assert stderr_metrics("full", RESULTS) == {"nugget_cloze full/acc_stderr": 0.25,
                                               "nugget_cloze full/acc_norm_stderr": 0.2,
                                               "gsm full/exact_match:strict-match_stderr": 0.05}


def test_a_groups_n_is_the_sum_over_its_tasks():
    from stages.nugget2d.harness.results import count

    results = {"results": {"mmlu_x": {"acc,none": 0.25}, "a": {}, "b": {}},
               "group_subtasks": {"mmlu_x": ["a", "b"], "a": [], "b": []},
               "n-samples": {"a": {"effective": 3}, "b": {"effective": 4}}}
    assert count(results, "mmlu_x") == 7 and count(results, "a") == 3
    assert count({"results": {}, "n-samples": {}}, "unknown") is None
    rows = {r.system: r for r in system_rows("full", results)}
    assert rows["mmlu_x full"].n == 7


def test_table_renders_values_with_intervals_and_not_applicable_rows(tmp_path):
    rows = [*system_rows("nugget2d", RESULTS), not_applicable_row("nugget_lm_wiki", "snapkv", "no rolling form")]
    cols = columns(rows)
    assert [c.key for c in cols] == ["acc", "acc_norm", "word_perplexity", "bits_per_byte", "exact_match:strict-match"]
    table = EvalTable("t", cols, rows)
    table.write(tmp_path)
    text = (tmp_path / "table.md").read_text()
    assert "| nugget_cloze nugget2d | 4 | 0.500 [0.150, 0.850] | 0.750 [0.301, 0.954] |" in text
    assert "| nugget_lm_wiki snapkv |  |" in text and "not applicable: no rolling form" in text
    assert EvalTable.read(tmp_path).row("nugget_cloze nugget2d").interval["acc"][0] == pytest.approx(wilson(2, 4)[0])


def test_sample_rows_hold_what_the_model_read_and_answered():
    generated = [{"doc_id": 0, "doc": {"id": "qa-3"}, "target": "Paris",
                  "arguments": [("Doc\n\nQuestion: where?\nAnswer:", {"until": ["\n"]})],
                  "resps": [[" Paris"]], "filtered_resps": [" Paris"], "metrics": ["exact_match"], "exact_match": 1.0}]
    (row,) = sample_rows("full", "nugget_qa", "generate_until", generated, {"ratio": 0.1})
    assert row["id"] == "qa-3" and row["system"] == "full" and row["ratio"] == 0.1 and row["doc_id"] == 0
    assert row["prompt"] == "Doc\n\nQuestion: where?\nAnswer:" and row["target"] == "Paris"
    assert row["output"] == " Paris" and row["exact_match"] == 1.0 and row["empty_output"] is False
    chosen = [{"doc_id": 1, "doc": {"id": "d1"}, "target": 1, "arguments": [("ctx", " a"), ("ctx", " b")],
               "filtered_resps": [(-3.0, False), (-1.0, True)], "metrics": ["acc"], "acc": 1.0}]
    (row,) = sample_rows("nodoc", "nugget_cloze", "multiple_choice", chosen, {})
    assert row["choices"] == [" a", " b"] and row["output"] == "b" and row["empty_output"] is None
    rolled = [{"doc_id": 0, "doc": {"id": "wiki-0"}, "target": "text", "arguments": [("text",)],
               "filtered_resps": [-7.5], "metrics": ["word_perplexity"], "word_perplexity": (-7.5, 2)}]
    (row,) = sample_rows("full", "nugget_lm_wiki", "loglikelihood_rolling", rolled, {})
    assert row["output"] is None and row["loglikelihood"] == -7.5 and row["word_perplexity_units"] == 2


def test_flags_name_empty_generations_and_a_constant_choice_slot():
    from stages.nugget2d.harness.results import flags

    qa = [{"task": "nugget_qa", "system": "full", "request_type": "generate_until", "output": out}
          for out in ("", " ", "Paris")]
    qa += [{"task": "nugget_qa", "system": "nodoc", "request_type": "generate_until", "output": out}
           for out in ("Paris", "Rome", "")]
    cloze = [{"task": "nugget_cloze", "system": "full", "request_type": "multiple_choice",
              "choices": [" a", f" b{i}", " c"], "output": f"b{i}"} for i in range(4)]
    found = flags(qa + cloze)
    assert found == {"nugget_qa full": "2 empty of 3 generations; constant output: '' for 2 of 3 inputs",
                     "nugget_cloze full": "the chosen slot: constant output: 1 for 4 of 4 inputs"}
