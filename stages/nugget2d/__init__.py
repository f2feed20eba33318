"""The Nugget2D study (decoder-only Nugget2D; Nugget2D paper), one folder: its stages,
training tasks, recipes and helpers. Other studies read its outputs only through their
types, in ``artifacts.py`` (`stages.nugget2d.artifacts`). Its config sections are in
``config.py`` (placed at their paths by `stages.config.schema`).

- data: ``prepare_lm`` (the base LMs), ``build_lm`` (``lm_builders``: LM / QA / summary records);
- training: ``train_nugget2d``, ``train_nugget2d_ft``, ``train_nugget2d_ar``,
  ``train_nugget2d_ae`` (their shared base ``nugget2d_stage``; tasks ``nugget2d_task``,
  ``autoencoding_task``, ``lm_task``), ``train_full_ft`` (``full_ft_task``);
- calibration: ``calibrate_threshold`` (``quantile``);
- evaluation: ``eval_lm``, ``eval_qa``, ``eval_summarization``, ``eval_nugget2d_ae``; their
  recipes in ``lm/``.
"""
