"""The headline burst: the papers' headline numbers in a few minutes of one lent GPU.

- ``data`` (`build_data`, `dataset`): profile gpu1's English autoencoding documents as SmolLM2
  token ids in a folder of <= 8 MiB, built here on CPU, carried to the GPU;
- ``ae`` (`ae`, `nugget_ae`): Nugget autoencoding (Nugget §5.1, figs. 4-5) on a from-scratch
  BART at r = 0.1, 0.05, 0.25, a fixed number of seconds each, beam-search BLEU on held-out
  documents with its interval over documents;
- ``nugget2d`` (`nugget2d`, `nugget2d_systems`): Nugget2D vs ICAE autoencoding (Nugget2D §4)
  on the real SmolLM2-135M weights, same data and examples, the paired interval of the
  difference.

`presets` holds every size and why it was chosen; `loop` the time-budgeted training;
`scoring` the BLEU and its intervals (the report's method, `stages.common.resampling`);
`records` the JSON results; `budget` the hard wall-clock limit. Everything but ``data`` runs
on the GPU image's packages (torch, transformers, peft, sacrebleu, numpy) plus nugget_core
and the pure helpers of `stages.common` / `stages.evaluation` (tests/headline checks it).
How to run it: docs/headline.md.
"""
