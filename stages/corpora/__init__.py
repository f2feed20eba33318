"""Corpora: the layer every study builds its datasets on (docs/offline-data.md).

- ``corpora``: the one interface over offline sources and the papers' hub datasets
  (``paper_sources``: HF datasets / ParaBank adapters; ``articles``: Wikipedia-style articles);
- ``text`` (sentence splitting, wiki markup), ``tokens`` (subword counts on Ray Data),
  ``splits``, ``stats`` (table-1 statistics), ``nugget_data`` (task / document file formats);
- ``corpus_stats``: the stage reporting an offline corpus's size and lengths.
"""
