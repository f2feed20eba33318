"""Which splits ``build_lm``'s outputs hold, read from ``data.lm`` alone, and the refusal at
config load of settings that would read a split they do not hold.

With the paper data, ``lm_wiki`` holds WikiText-103's validation and test articles only
(`WIKITEXT_LM_SPLITS`: Nugget2D table 1 scores the test split as released, and nothing
trains on WikiText), while the Pile sample and the offline stand-ins are split here by
``data.lm.dev_fraction`` (train only when it is 0). A stage reading a missing split would
fail only after training (e.g. ``calibrate_threshold`` sampling ``lm_wiki``'s train split,
which the paper data does not have); :func:`lm_split_errors` names the setting before anything runs,
and also refuses a calibration sample drawn from the split ``eval_lm`` scores (Nugget2D
§2.5: Lambda comes from sampled documents, not from the evaluation text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # schema imports this module
    from stages.config.schema import PipelineConfig
    from stages.nugget2d.config import LMData

# build_lm's wiki split -> WikiText-103's published split (Nugget2D §5: table 1 on test)
WIKITEXT_LM_SPLITS = {"dev": "validation", "test": "test"}
ALL_SPLITS = ("train", "dev", "test")


def publishes_splits(local_files: str) -> bool:
    """Whether rows come split as published: by name from the hub, or from local files whose
    glob names the split (``{split}``, e.g. ``/data/squad/{split}-*.parquet``)."""
    return not local_files or "{split}" in local_files


def assigned_splits(dev_fraction: float) -> tuple[str, ...]:
    """Splits of a pool split here (`stages.corpora.splits.assign_splits` with dev and test
    fractions ``dev_fraction``: a non-zero fraction never rounds to an empty split)."""
    return ALL_SPLITS if dev_fraction > 0 else ("train",)


def lm_corpus_splits(lm: LMData) -> dict[str, tuple[str, ...]]:
    """Splits of each of build_lm's LM corpora (``lm_<corpus>.parquet``) and of its
    ``continuation`` windows (both corpora's documents, each in its corpus's split)."""
    here = assigned_splits(lm.dev_fraction)
    wiki = tuple(WIKITEXT_LM_SPLITS) if lm.source == "paper" else here
    both = tuple(s for s in ALL_SPLITS if s in wiki or s in here)
    return {"wiki": wiki, "pile": here, "continuation": both}


def _missing(what: str, split: str, corpus: str, splits: dict[str, tuple[str, ...]]) -> str | None:
    if split in splits[corpus]:
        return None
    return (f"{what}: split {split!r} of build_lm's {corpus} data does not exist with these data settings "
            f"(it has {list(splits[corpus])}; data.lm.source, data.lm.dev_fraction)")


def lm_split_errors(cfg: PipelineConfig) -> list[str]:
    """Every setting of ``cfg`` (a `PipelineConfig`) that reads a split of build_lm's LM
    segments or continuation windows that the data does not hold, and a calibration sample
    drawn from the split eval_lm scores."""
    splits = lm_corpus_splits(cfg.data.lm)
    cal, lm_eval = cfg.calibrate.threshold, cfg.eval.lm
    found = []
    for corpus in cal.corpora:
        found.append(_missing("calibrate.threshold.sample_split", cal.sample_split, corpus, splits))
        found.append(_missing("calibrate.threshold.heldout_split", cal.heldout_split, corpus, splits))
    for corpus in lm_eval.corpora:
        found.append(_missing("eval.lm.split", lm_eval.split, corpus, splits))
    seen = sorted(set(cal.corpora) & set(lm_eval.corpora))
    if cal.sample_split == lm_eval.split and seen:
        found.append(f"calibrate.threshold.sample_split: value {cal.sample_split!r} is eval.lm.split, the {seen} "
                     "segments table 1 scores; Lambda must come from documents the evaluation never sees")
    ar = cfg.train.nugget2d_ar
    for split in ("train", "dev"):  # every training reads both (stages.training.loop)
        found.append(_missing(f"train.nugget2d_ar.lm_corpus ({ar.lm_corpus!r})", split, ar.lm_corpus, splits))
        found.append(_missing("train.nugget2d (continuation windows)", split, "continuation", splits))
    found.append(_missing("eval.autoencoding.split", cfg.eval.autoencoding.split, "continuation", splits))
    return [f for f in found if f]
