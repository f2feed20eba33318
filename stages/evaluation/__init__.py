"""Evaluation helpers several studies share:

- ``publish``: an evaluation stage's table, examples and metrics, written and logged;
- ``perplexity``: subword and word-level perplexity from per-token NLLs;
- ``decoding``: the text of one sequence of token ids (``decode_ids``);
- ``rouge``: ROUGE-1/2/L F1 via ``rouge-score`` (stemming on);
- ``metrics``: corpus BLEU (sacrebleu), cosine, mean-MaxSim, MRR;
- ``analysis``: nugget token frequencies and the probability-gain probe.
"""
