"""Sizes the config does not hold: the published sizes of the splits ``profile=paper``
reads whole (a count of 0 = all), and ASSUMED mean lengths where a stage reads texts
uncut. Each with its source, printed beside the estimate that uses it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Size:
    value: int
    basis: str

    def note(self, what: str) -> str:
        return f"{what} = {self.value:,} ({self.basis})"


#: Published split sizes (examples), by the name the estimators use.
SPLITS: dict[str, Size] = {
    "wmt19_validation": Size(3_981, "WMT19 zh-en validation sentence pairs (newstest2018); build_mt_docs "
                                   "joins adjacent pairs, so at most this many documents: an upper bound"),
    "squad_validation": Size(10_570, "SQuAD v1.1 dev set, Rajpurkar et al. 2016: build_lm's QA test split"),
    "cnn_dailymail_test": Size(11_490, "CNN/DailyMail 3.0.0 test split, See et al. 2017"),
    "nq_test": Size(3_610, "Natural Questions test as DPR released it, Karpukhin et al. 2020"),
    "dpr_passages": Size(21_015_324, "DPR's psgs_w100.tsv Wikipedia passages, Karpukhin et al. 2020"),
}

#: ASSUMED mean lengths (tokens of the model's tokenizer) where the config cuts nothing.
LENGTHS: dict[str, Size] = {
    "squad_passage": Size(200, "ASSUMED: the upper end of conf/eval/paper.yaml's '~150-200 tokens' per SQuAD "
                               "passage"),
    "squad_answer": Size(8, "ASSUMED: SQuAD answers are short spans; the offline stand-ins' lengths are not in "
                            "the config either"),
    "cnn_article": Size(781, "ASSUMED: See et al. 2017's mean of 781 word tokens per CNN/DM article; LLaMA "
                             "subwords are more, so this is low"),
    "cnn_summary": Size(56, "ASSUMED: See et al. 2017's mean of 56 word tokens per CNN/DM summary; the offline "
                            "stand-ins' lengths are not in the config either"),
    "sentence": Size(30, "ASSUMED: ~23 words per news sentence at ~1.3 subwords per word"),
}
