"""``make gpu-check``: one command that spends a lent GPU machine well.

pack (here) -> plan (the three back-to-back remote calls) -> run (there, one call each)
-> collect (here: the returned files into benchmarks/results/gpu/<date>/). Each module
holds one concept: `limits` (the device's), `calls` / `parts` (what runs), `runner` /
`process` (running it within budget), `results` / `summary` / `collect` (what comes
back), `pack` / `wheels` / `sources` / `standin` / `install` (what travels),
`gpu1` / `stagelog` / `gpumem` (the short profile=gpu1 run). Only the standard library is
imported at module level: a call must start before anything is installed.
"""
