"""The ``data.*`` section: where each dataset stage's section sits (the sections themselves are
their studies', ``stages/<study>/config.py``), and the hub datasets the builders read
(`HF_NAMES`, `HUB_READS`); see :mod:`stages.config.schema`."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.validate import spec
from stages.corpora.config import CorpusStatsData
from stages.nugget.config import BM25Params, MTData, NuggetLMData, PIData, RRData
from stages.nugget2d.config import LMData
from stages.restorable.config import REData, REDownstreamData, RERetrievalData

# the published datasets the builders load by name from the hub
# (`stages.corpora.paper_sources.load_rows`): source -> (hub dataset, default config)
HF_NAMES = {
    "wmt19": ("wmt19", "zh-en"),
    "wikitext103": ("wikitext", "wikitext-103-raw-v1"),
    "squad": ("squad", None),
    "cnn_dailymail": ("cnn_dailymail", "3.0.0"),
    "pile": ("monology/pile-uncopyrighted", None),
    "c4_realnewslike": ("allenai/c4", "realnewslike"),
    "glue_sst2": ("glue", "sst2"),  # RE table 10's tasks (build_re_downstream)
    "sst5": ("SetFit/sst5", None),
    "trec": ("CogComp/trec", None),
}


# the fields naming a local copy of such a dataset: while one is empty, the stage reading it
# (`Stage.external_paths`) loads the dataset by name, for the section's ``source``s listed
# (source -> HF_NAMES entry); the preflight checks the hub answers then
# (`stages.framework.preflight_hub`)
HUB_READS = {
    "data.mt.local_files": {"wmt19": "wmt19"},
    "data.rr.local_files": {"wikitext103": "wikitext103"},
    "data.lm.squad_files": {"paper": "squad"},
    "data.lm.cnn_files": {"paper": "cnn_dailymail"},
    "data.lm.pile_files": {"paper": "pile"},
    "data.lm.wiki_files": {"paper": "wikitext103"},
    "data.nugget_lm.wiki_files": {"wikitext103": "wikitext103"},
    "data.re.local_files": {"c4_realnewslike": "c4_realnewslike"},
    "data.re_downstream.sst2_dir": {"published": "glue_sst2"},
    "data.re_downstream.sst5_dir": {"published": "sst5"},
    "data.re_downstream.trec_dir": {"published": "trec"},
}


@dataclass
class DataSection:
    seed: int = spec(0, help="Seed of every sampling step of the builders.", ge=0)
    max_docs: int = spec(0, help="Cap on documents per builder (0 = all); tiny profile caps.", ge=0)
    corpus_stats: CorpusStatsData = spec(CorpusStatsData(), help="corpus_stats stage.")
    mt: MTData = spec(MTData(), help="build_mt_docs stage.")
    pi: PIData = spec(PIData(), help="build_pi stage.")
    rr: RRData = spec(RRData(), help="build_rr stage.")
    lm: LMData = spec(LMData(), help="build_lm stage.")
    nugget_lm: NuggetLMData = spec(NuggetLMData(), help="build_nugget_lm stage (Nugget LM, Nugget table 3).")
    bm25: BM25Params = spec(BM25Params(), help="BM25 used for negatives mining.")
    re: REData = spec(REData(), help="build_re_data stage (RE restoration texts).")
    re_retrieval: RERetrievalData = spec(RERetrievalData(), help="build_re_retrieval stage (RE passage retrieval).")
    re_downstream: REDownstreamData = spec(REDownstreamData(), help="build_re_downstream stage (RE table 10's "
                                           "sentence-classification tasks).")
