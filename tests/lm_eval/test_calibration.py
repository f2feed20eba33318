"""Lambda on synthetic scores realises the requested nugget ratio (within 1%)."""

from __future__ import annotations

import pytest
import torch

from stages.nugget2d.quantile import calibrate, document_ratios, histogram_png, spread


def _documents(seed: int, n_docs: int, skewed: bool) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    docs = []
    for i in range(n_docs):
        length = int(torch.randint(50, 400, (1,), generator=g))
        shift = (i % 7 - 3) * 0.5 if skewed else 0.0  # documents differ in their score level
        docs.append(torch.randn(length, generator=g) + shift)
    return docs


@pytest.mark.parametrize("ratio", [0.05, 0.1, 0.2, 0.5])
def test_calibrated_lambda_hits_the_ratio_within_one_percent(ratio):
    sample = _documents(0, 2000, skewed=True)
    heldout = _documents(1, 4000, skewed=True)
    threshold = calibrate(sample, ratio)
    pooled_sample = torch.cat(sample)
    pooled_heldout = torch.cat(heldout)
    assert float((pooled_sample > threshold).float().mean()) == pytest.approx(ratio, rel=0.01)
    assert float((pooled_heldout > threshold).float().mean()) == pytest.approx(ratio, rel=0.01)
    # per-document ratios vary around r when documents differ (what the stage reports)
    per_doc = document_ratios(heldout, threshold)
    stats = spread(per_doc, "r")
    assert stats["r_docs"] == 4000 and stats["r_std"] > 0
    assert stats["r_min"] < ratio < stats["r_max"]


def test_histogram_is_a_png(tmp_path):
    scores = torch.randn(1000)
    path = histogram_png(scores, calibrate([scores], 0.1), 0.1, 30, tmp_path / "h.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_scores_is_an_error():
    with pytest.raises(ValueError, match="no scores"):
        calibrate([torch.zeros(0)], 0.1)
