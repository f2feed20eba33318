"""Helpers of the Nugget2D evaluations (Nugget2D paper §5, §6, appendices C-D).

One concept per module:

- `normalize`: the appendix-D answer normaliser and the QA "output contains answer" test;
- `perplexity`: subword and word-level perplexity from per-token NLLs;
- `rouge`: ROUGE-1/2/L F1 via ``rouge-score`` (stemming on);
- `scoring`: one system's QA accuracy / summarisation ROUGE, context ratio and cost with their
  n (the procedure of ``eval_qa``, ``eval_summarization`` and ``nugget eval``);
- `cost`: decoding-cost records (attended states per generated token, KV bytes, time);
- `prompted`: prompt-based systems (Full, NoDoc, LMSumm, Nugget2D compressor), batched;
- `streams`: autoregressive LM systems (Full window, Compressive, Nugget2D) per segment.

Models and tokenizers are loaded through the contracts of `stages.artifacts`; tables are
`stages.artifacts.evaluate.EvalTable`s published by `stages.evaluate.publish`.
"""
