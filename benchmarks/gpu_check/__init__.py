"""``make gpu-check``: spend a lent GPU window (15 minutes of device time) well.

pack (here) -> plan (the two back-to-back remote calls) -> run (there, one call each)
-> collect (here: the returned files into benchmarks/results/gpu/<date>/, the page
docs/gpu-results.md regenerated). ``rehearse`` runs the same two calls on this CPU at CPU
sizes. Each module holds one concept: `limits` (the device's), `calls` / `parts` /
`rotation` (what runs, and whose turn it is), `runner` / `process` (running it within
budget), `handoff` (what call 1 leaves in /tmp for call 2), `results` / `summary` /
`collect` / `headline` / `page` (what comes back and what a reader sees), `pack` /
`wheels` (what travels), `rehearse` (the window on CPU), `gpu1` / `stagelog` / `gpumem`
(the short profile=gpu1 run of a user's own machine). Only the standard library is
imported at module level: a call must start before anything is installed.
"""
