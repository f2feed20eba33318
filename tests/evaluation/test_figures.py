"""The evaluation figures: titles, labelled axes, legends, resolution, the notes for
flat or empty data, tokens shown as words, and a caption for every figure a contract lists."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch

from stages.artifacts.base import ContractError
from stages.common.figures import DPI, all_equal
from stages.common.tokens import display_token, token_text
from stages.evaluation.analysis import TokenStats
from stages.nugget.analyze_nuggets import figure_details, readable_token
from stages.nugget.artifacts.results import CAPTIONS_FILE, NuggetAnalysis, ReconstructionResults
from stages.nugget.plots import bleu_vs_ratio, probability_gain, token_frequencies
from stages.nugget2d.quantile import score_histogram


def _nugget_row(objective: str, ratio: float, bleu: float, layer: int = 1) -> dict:
    return {"kind": "nugget", "objective": objective, "ratio": ratio, "scorer_layer": layer, "bleu": bleu,
            "n_docs": 4}


ROWS = [_nugget_row("ae", 0.1, 12.0), _nugget_row("ae", 0.25, 30.0), _nugget_row("mt", 0.1, 5.0),
        {"kind": "bottleneck", "baseline": "tsdae", "bleu": 1.0, "n_docs": 4}]


def _texts(fig) -> list[str]:
    """Every text drawn inside the axes (notes), not titles or tick labels."""
    return [t.get_text() for t in fig.axes[0].texts]


def _png_dpi(path) -> float:
    """The resolution a PNG records (pHYs chunk, pixels per metre)."""
    from PIL import Image

    with Image.open(path) as image:
        return float(image.info["dpi"][0])


def _assert_readable(fig, path) -> None:
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    assert "(" in ax.get_xlabel() and "(" in ax.get_ylabel()  # each axis names its unit
    assert path.read_bytes()[:4] == b"\x89PNG" and _png_dpi(path) == pytest.approx(DPI, abs=1)
    assert DPI >= 150 and min(fig.get_size_inches()) >= 4  # text stays legible at that size


def test_bleu_figure_is_labelled(tmp_path):
    fig = bleu_vs_ratio(ROWS, tmp_path / "b.png")
    _assert_readable(fig, tmp_path / "b.png")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == 3 and any("tsdae" in label for label in labels)  # 2 Nugget lines + a baseline
    assert "n=4" in ax.get_title() and "BLEU" in ax.get_ylabel() and "ratio" in ax.get_xlabel()
    assert _texts(fig) == []  # different values: no note


def test_all_zero_bleu_says_so(tmp_path):
    rows = [{**r, "bleu": 0.0} for r in ROWS]
    fig = bleu_vs_ratio(rows, tmp_path / "b.png")
    assert _texts(fig) == ["all values equal (0 BLEU)"]


def test_no_rows_says_so(tmp_path):
    fig = bleu_vs_ratio([], tmp_path / "b.png")
    assert _texts(fig) and _texts(fig)[0].startswith("no data")


@pytest.mark.parametrize(("values", "equal"), [
    ([0.0, 0.0, 0.0], True),
    ([0.2, 0.2 + 1e-12], True),  # float noise is equal
    ([1e-3, 1e-3 + 1e-6], False),  # a real difference of small probability gains is not
    ([5.0, 6.0], False),
    ([3.0], False),  # one value is a point, not a flat line
    ([], False),
])
def test_what_counts_as_equal(values, equal):
    assert all_equal(values) is equal


def test_token_figure_shows_words(tmp_path):
    fig = token_frequencies(["Ġthe", "▁of", ",", "Ċ"], {"nuggets AE r=0.1": [5, 4, 3, 2], "text": [6, 3, 2, 1]},
                            tmp_path / "t.png")
    _assert_readable(fig, tmp_path / "t.png")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["the", "of", ",", "[newline]"]
    assert len(ax.get_legend().get_texts()) == 2


def test_probability_gain_figure(tmp_path):
    curves = {"nugget 3": ([0, 1, 2], [0.1, 0.2, 0.0]), "nugget 6": ([0, 1, 2], [0.0, 0.05, 0.3])}
    fig = probability_gain(curves, tmp_path / "g.png", "Nugget fig. 7: gain", "token index (tokens)")
    _assert_readable(fig, tmp_path / "g.png")
    assert fig.axes[0].get_title() == "Nugget fig. 7: gain" and len(fig.axes[0].get_legend().get_texts()) == 2
    flat = {name: (xs, [0.25] * len(xs)) for name, (xs, _) in curves.items()}
    assert _texts(probability_gain(flat, tmp_path / "f.png", "t", "x (tokens)")) == ["all values equal (0.25)"]
    assert _texts(probability_gain({}, tmp_path / "e.png", "t", "x (tokens)"))[0].startswith("no data")
    (point,) = probability_gain({"nugget 9": ([4], [0.5])}, tmp_path / "p.png", "t", "x (tokens)").axes[0].get_lines()[:1]
    assert point.get_marker() == "o"  # one document with a 9th nugget: a visible point, not an invisible line


def test_score_histogram(tmp_path):
    fig = score_histogram(torch.randn(500), 1.2, 0.1, 20, tmp_path / "h.png")
    _assert_readable(fig, tmp_path / "h.png")
    assert "n=500" in fig.axes[0].get_title() and len(fig.axes[0].get_legend().get_texts()) == 2
    assert _texts(fig) == []
    same = score_histogram(torch.full((50,), 0.5), 0.5, 0.1, 20, tmp_path / "s.png")
    assert _texts(same) == ["all values equal (0.5)"]


@pytest.mark.parametrize(("token", "shown"), [
    ("Ġthe", "the"), ("▁the", "the"), ("the", "the"), ("Ġ,", ","), ("Ċ", "[newline]"), ("ĊĊ", "[newline newline]"),
    ("Ġ", "[space]"), ("", ""), ("[newline]", "[newline]"),
])
def test_display_token(token, shown):
    assert display_token(token) == shown
    assert display_token(display_token(token)) == shown  # idempotent: safe on already shown tokens


def test_token_text_keeps_whitespace():
    assert "".join(token_text(t) for t in ["The", "Ġcat", "Ċ", "▁sat"]) == "The cat\n sat"


def test_the_and_its_word_initial_variant_count_as_one_word():
    """What analyze_nuggets counts: each token as `readable_token`; byte-level BPE writes
    the first 'the' of a line bare and the others as 'Ġthe'."""
    from nugget_core import train_bpe_tokenizer

    text = "the cat saw the dog and the bird"
    tok = train_bpe_tokenizer([text, "the dog and the cat"] * 20, vocab_size=300)
    raw = tok.convert_ids_to_tokens(tok(text, add_special_tokens=False)["input_ids"])
    assert "the" in raw and "Ġthe" in raw  # the tokenizer does split them (else this test shows nothing)
    stats = TokenStats()
    words = [readable_token(tok, t) for t in raw]
    stats.add(words, [w == "the" for w in words])
    assert stats.text["the"] == 3 and stats.nuggets["the"] == 3
    assert not any(marker in w for w in stats.text for marker in ("Ġ", "▁", "Ċ"))
    assert stats.word_share(stats.text, "the") == pytest.approx(100 * 3 / len(words))
    assert Counter(words).most_common(1) == [("the", 3)]


def _analysis_outputs() -> tuple[dict, dict]:
    frequency = {"sweep:ae": {"label": "AE r=0.1", "n_nuggets": 12, "n_tokens": 120, "encoder_side": "source"},
                 "baseline:zh": {"label": "zh", "n_nuggets": 7, "n_tokens": 70, "encoder_side": "target"}}
    gain = {"system": "sweep:ae", "documents": 2, "documents_with_nugget": {"3": 2, "6": 1},
            "relative": {"64": {"documents": 3, "gain": {}}}, "relative_skipped": {"256": "longer than 128"}}
    return frequency, gain


@pytest.mark.parametrize("contract", [ReconstructionResults, NuggetAnalysis])
def test_every_figure_has_a_caption(contract):
    assert set(contract.FIGURE_CAPTIONS) == set(contract.FIGURES)
    assert all(len(caption) > 40 for caption in contract.FIGURE_CAPTIONS.values())


def test_run_captions_add_n_and_are_read_back(tmp_path):
    frequency, gain = _analysis_outputs()
    details = figure_details(frequency, gain, counted_docs=6, highlighted_docs=2, highlight_model="AE r=0.1")
    assert set(details) == set(NuggetAnalysis.FIGURES)
    assert "12 nuggets of 120 tokens" in details["token_frequency.png"] and "zh" not in details["token_frequency.png"]
    assert "n = 2 documents" in details["probability_gain.png"] and "nugget 6: 1" in details["probability_gain.png"]
    assert "n=3 documents" in details["probability_gain_relative.png"]
    assert "256 tokens left out" in details["probability_gain_relative.png"]
    NuggetAnalysis(frequency, gain).write(tmp_path)
    NuggetAnalysis.write_captions(tmp_path, details)
    captions = NuggetAnalysis(frequency, gain, tmp_path).captions()
    assert set(captions) == set(NuggetAnalysis.FIGURES)
    for name, caption in captions.items():
        assert caption.startswith(NuggetAnalysis.FIGURE_CAPTIONS[name]) and caption.endswith(details[name])


def test_captions_without_a_run_file_are_the_fixed_ones(tmp_path):
    out = ReconstructionResults([], "dev", 5, tmp_path)
    assert out.captions() == ReconstructionResults.FIGURE_CAPTIONS
    assert ReconstructionResults([], "dev", 5).captions() == ReconstructionResults.FIGURE_CAPTIONS


def test_captions_refuse_unknown_figures(tmp_path):
    with pytest.raises(ValueError, match="unknown figures"):
        ReconstructionResults.write_captions(tmp_path, {"other.png": "n = 3"})
    (tmp_path / CAPTIONS_FILE).write_text(json.dumps({"other.png": "a caption"}))
    with pytest.raises(ContractError, match="figures.json.*'other.png'"):
        ReconstructionResults([], "dev", 5, tmp_path).captions()
    (tmp_path / CAPTIONS_FILE).write_text(json.dumps(["not", "a", "mapping"]))
    with pytest.raises(ContractError, match="figures.json"):
        ReconstructionResults([], "dev", 5, tmp_path).captions()
