"""The Nugget study (encoder-decoder Nugget; Nugget paper §4-§7), one folder: its stages,
training tasks, recipes and helpers. Other studies read its outputs only through their
types, in ``artifacts/`` (`stages.nugget.artifacts`). Its config sections are in
``config.py`` (placed at their paths by `stages.config.schema`).

- data: ``tokenizer``, ``build_mt_docs`` (``documents``, ``packing``), ``build_pi`` /
  ``build_rr`` (``parallel``, ``bm25`` negatives), ``build_nugget_lm``;
- training: ``train_nugget`` (``nugget_job``, ``nugget_task``), ``sweep_nugget``
  (``tune_grid``), ``train_baselines`` (``baseline_task``), ``train_nugget_lm``
  (``nugget_lm_task``);
- evaluation: ``eval_reconstruction``, ``eval_similarity`` (``similarity``),
  ``analyze_nuggets`` (``highlight``, ``plots``), ``eval_nugget_lm``; ``systems`` (which
  trained models an evaluation covers) and ``encoders`` (texts to vectors / decoded texts).
"""
