"""Recipes and helpers of the Nugget2D evaluations (Nugget2D paper §5, §6, appendices C-D).

The recipes, plain functions with no Ray, MLflow or stage context (the stages and ``nugget
eval`` call them; a notebook can too), each returning an `evaluation.Evaluation`:

- `qa`: ``evaluate_qa``, the QA evaluation of ``eval_qa`` (table 3);
- `summarization`: ``evaluate_summarization``, that of ``eval_summarization`` (table 4);
- `language_modelling`: ``evaluate_lm``, the perplexity evaluation of ``eval_lm`` (table 1).

Their helpers, one concept per module:

- `normalize`: the appendix-D answer normaliser and the QA "output contains answer" test;
- `scoring`: one system's QA accuracy / summarisation ROUGE, context ratio and cost with their
  n (what the QA and summarisation recipes score with);
- `cost`: decoding-cost records (attended states per generated token, KV bytes, time);
- `prompted`: prompt-based systems (Full, NoDoc, LMSumm, Nugget2D compressor), batched;
- `presses`: the training-free KV presses compared at Nugget2D's budget;
- `streams`: autoregressive LM systems (Full window, Compressive, Nugget2D) per segment.

Perplexity, greedy decoding and ROUGE, which other studies use too, are in
`stages.evaluation`. In the pipeline, models and tokenizers are loaded through the
contracts of `stages.artifacts`; tables are `stages.artifacts.evaluate.EvalTable`s
published by `stages.evaluation.publish`.
"""
