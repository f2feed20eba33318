"""Helpers of the Nugget evaluation stages (Nugget paper §5, §6.1, §7.1).

- :mod:`.metrics`    corpus BLEU (sacrebleu), cosine, mean-MaxSim, MRR
- :mod:`.systems`    which trained models an evaluation covers (sweep, baselines, ablations)
- :mod:`.encoders`   turning texts into vectors / decoded texts with any of those models
- :mod:`.similarity` ranking the candidates of PI / RR tasks
- :mod:`.analysis`   nugget token frequencies and the probability-gain probe
- :mod:`.plots`      matplotlib (Agg) figures; :mod:`.highlight` the HTML nugget page
"""
