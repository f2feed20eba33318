"""The report's Nugget figure 5 / appendix D and table 2 / 4 cells carry what their evaluations stored:
the per-unit samples (what a finding pairs), the floors, the input-use checks; and a model whose
reconstruction is uninformative, below its floor or blind to its input has every share row marked
(figure 5's share rows of a model flagged uninformative carry the flag)."""

from __future__ import annotations

from typing import Any

import pytest

from stages.artifacts.trainer_state import InputUse
from stages.common.floors import Floor
from stages.common.resampling import UnitSample
from stages.evaluation.analysis import TokenStats
from stages.evaluation.token_frequency import share_units
from stages.nugget.artifacts.results import NuggetAnalysis, ReconstructionResults, SimilarityResults
from stages.report.nugget_tables import multilingual_token_table, token_table
from stages.report.similarity_tables import table2
from stages.report.tables import FLAG_MARK

AE = "sweep:ae-r0.1-l3"
IGNORES = InputUse(own=6.691, other=6.692, low=-0.004, high=0.006, n=64).reason()


def analysed(label: str, side: str = "source", flag: str = "", ignores: str = "") -> dict[str, Any]:
    """A `NuggetAnalysis` record as analyze_nuggets writes it, from 20 documents: the nuggets of each are
    'the' and ',' (3 of 8), the text also 'cat'."""
    stats = TokenStats()
    for d in range(20):
        tokens = ["the", ",", "cat", "the", "cat", "cat", ".", "cat"][: 6 + d % 3]
        stats.add(tokens, [t in ("the", ",") for t in tokens])
    top = [t for t, _ in stats.nuggets.most_common(6)]
    units = share_units(stats, top, [f"d-{i}" for i in range(20)])
    return {"label": label, "objective": "ae", "ratio": 0.1, "scorer_layer": 3, "encoder_side": side,
            "top": [[t, stats.share(stats.nuggets, t), stats.share(stats.text, t)] for t in top],
            "the_share_nuggets": stats.word_share(stats.nuggets, "the"), "the_share_text": stats.word_share(stats.text, "the"),
            "punctuation_share_nuggets": stats.punctuation_share(stats.nuggets),
            "punctuation_share_text": stats.punctuation_share(stats.text), "n_nuggets": sum(stats.nuggets.values()),
            "n_tokens": sum(stats.text.values()), "n_docs": 20, "units": {k: u.to_json() for k, u in units.items()},
            "intervals": {k: list(b) for k, u in units.items() if (b := u.interval()) is not None},
            "ignores_input": ignores, "uninformative": flag}


def reconstruction(bleu: float, flag: str = "", ignores: str = "") -> ReconstructionResults:
    """eval_reconstruction's record of the analysed AE model, its floor BLEU 10."""
    row = {"name": AE, "label": "Nugget AE r=0.1 l=3 [sweep_nugget]", "kind": "nugget", "objective": "ae", "ratio": 0.1,
           "scorer_layer": 3, "bleu": bleu, "n_docs": 20, "uninformative": flag, "ignores_input": ignores}
    return ReconstructionResults([row], "dev", 5, floors={"ae": Floor(10.0, True, "BLEU 10")})


def test_fig5_cells_are_documents_with_their_samples():
    analysis = NuggetAnalysis({AE: analysed("AE r=0.1")}, {})
    t = token_table(analysis, "ctx", layer=3)
    (the,) = t.values("the_ae", "share_nuggets")
    assert the.n == 20 and the.unit == "document" and the.units.n == 20  # documents, not the nugget tokens
    assert the.bounds == tuple(analysis.token_frequency[AE]["intervals"]["the_share_nuggets"])
    assert the.value == pytest.approx(the.units.value()) and not (the.flag or the.below_floor)
    # the top tokens' rows carry their own samples ('the' has its own row: not again among the top tokens)
    labels = [label for label, _, _ in t.rows]
    assert labels == ["'the' (AE r=0.1)", "punctuation (AE r=0.1)", "',' (AE r=0.1, top nugget token)"]
    comma = [v for _, c, v in t.numbers if v.label.startswith("','") and c == "share_nuggets"][0]
    assert comma.units.value() == pytest.approx(comma.value) and comma.units.ids == the.units.ids
    assert "share_nuggets: intervals and comparisons resample documents" in t.notes()


@pytest.mark.parametrize(("rec", "marked"), [
    (reconstruction(1.08, flag="constant output: 'the the the' for 20 of 20 inputs"), "flag"),
    (reconstruction(1.08), "task_floor"),
    (reconstruction(42.0, ignores=IGNORES), "ignores_input"),
], ids=["flagged", "below_its_floor", "ignores_its_input"])
def test_fig5_rows_of_a_model_that_does_not_reconstruct_are_marked(rec, marked):
    analysis = NuggetAnalysis({AE: analysed("AE r=0.1")}, {})
    assert all(not v.flag and not v.below_floor for _, _, v in token_table(analysis, "ctx", layer=3).numbers)
    t = token_table(analysis, "ctx", layer=3, rec=rec)
    values = [v for _, _, v in t.numbers]
    assert len(values) == 6  # 'the', punctuation, ',' x (nuggets, text): every share row of the model
    if marked == "flag":
        assert all(v.flag == "its reconstruction: constant output: 'the the the' for 20 of 20 inputs" for v in values)
        assert all(cell.endswith(FLAG_MARK) for _, cells, _ in t.rows for cell in cells.values())
        assert any(note.startswith(FLAG_MARK) and "its reconstruction" in note for note in t.notes())
    if marked == "task_floor":
        why = "it does not reconstruct its input: BLEU 1.08 (eval_reconstruction), not beyond the floor > 10 (BLEU 10)"
        assert all(v.task_floor == why and v.below_floor == why and not v.flag for v in values)
        assert any(why in note for note in t.notes())
    if marked == "ignores_input":
        assert all(v.ignores_input == IGNORES and v.below_floor == IGNORES and not v.task_floor for v in values)


def test_appendix_d_rows_carry_their_models_marks():
    """Appendix D: the English model's rows marked as its reconstruction is; the model of the other
    language (which eval_reconstruction does not decode) by its own record."""
    other = "baseline:nugget_ae_tgtlang"
    analysis = NuggetAnalysis({AE: analysed("AE r=0.1"), other: analysed("zh AE", "target", ignores=IGNORES)}, {})
    t = multilingual_token_table(analysis, "ctx", {"source": "English", "target": "Chinese"},
                                 rec=reconstruction(0.5, flag="empty output"))
    by_language = {lang: [v for _, _, v in t.numbers if f"({lang}," in v.label] for lang in ("English", "Chinese")}
    assert by_language["English"] and all(v.flag == "its reconstruction: empty output" and v.task_floor
                                          for v in by_language["English"])
    assert by_language["Chinese"] and all(v.ignores_input == IGNORES and not v.flag for v in by_language["Chinese"])
    assert all(v.n == 20 and v.unit == "document" for vs in by_language.values() for v in vs)


def _similarity_rows(label: str, mrr: float, ignores: str = "") -> list[dict[str, Any]]:
    units = {task: UnitSample.of("query document", "ratio", [f"L{i}" for i in range(20)], [[mrr + (i % 3 - 1), 1.0] for i in range(20)])
             for task in ("pi", "rr")}
    return [{"label": label, "task": task, "mrr": units[task].value(), "n_tasks": 20, "data": "fixture",
             "mrr_low": mrr - 1, "mrr_high": mrr + 1, "units": {"mrr": units[task].to_json()},
             "ignores_input": ignores, "mode": "nugget", "kind": "nugget", "source": "sweep_nugget", "objective": "mt",
             "ratio": 0.1, "scorer_layer": 3, "selector": "topk", "feedback": True, "baseline": None}
            for task in ("pi", "rr")]


def test_table2_cells_carry_queries_floors_and_input_use():
    floors = {"pi": Floor(15.0, True, "random ranking"), "rr": Floor(25.0, True, "random ranking")}
    rows = _similarity_rows("sweep:mt-r0.1-l3", 60.0, ignores=IGNORES)
    t = table2(SimilarityResults(rows, None, floors), "ctx", {"sweep_nugget": "50 steps"}, 3)
    (pi,) = t.values("nugget_mt_0.1", "pi")
    assert pi.units.unit == "query document" and pi.units.n == 20 and pi.n == 20 and pi.bounds == (59.0, 61.0)
    assert pi.floor == floors["pi"] and pi.ignores_input == IGNORES and pi.below_floor == IGNORES
    (rr,) = t.values("nugget_mt_0.1", "rr")
    assert rr.floor == floors["rr"] and rr.units.ids == pi.units.ids
    assert "pi: intervals and comparisons resample query documents" in t.notes()
    assert "pi: competence floor > 15 (random ranking): a system not beyond it does not do the task" in t.notes()
