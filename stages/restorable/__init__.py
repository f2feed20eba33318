"""The restorable-embeddings (RE) study (docs/restorable.md), one folder: its stages,
training tasks and helpers. Other studies read its outputs only through their
types, in ``artifacts.py`` (`stages.restorable.artifacts`). Its config sections are in
``config.py`` (placed at their paths by `stages.config.schema`).

- data: ``build_re_data`` (``sentences``: Punkt trained on the corpus; ``restoration_texts``),
  ``build_re_retrieval``;
- training: ``train_re`` (``restoration_task``), ``train_re_retrieval`` (``retrieval_task``);
- evaluation: ``eval_re_restoration``, ``eval_re_retrieval``.
"""
