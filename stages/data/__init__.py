"""Helpers of the dataset-building stages (docs/offline-data.md; Nugget §4, §6.1, app. A).

One concept per module: ``text`` (sentence splitting, wiki markup), ``corpora`` (the one
interface over offline and paper sources), ``paper_sources`` (HF datasets / ParaBank
adapters), ``packing`` (sentence-preserving documents), ``tokens`` (subword counts on
Ray Data), ``splits``, ``bm25`` (negatives mining), ``nugget_data`` (task/doc file
formats), ``stats`` (table-1 statistics) and ``lm`` (Nugget2D LM/QA/summary builders).
"""
