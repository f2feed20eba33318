"""Device cost of the pipeline's stages, from the config alone: the FLOP and byte counts
of a step (`work`, `decoder`, `seq2seq`), the devices' peaks (`peaks`), the shapes of the
configured models (`shapes`), the share of peak a device reaches (`efficiency`: measured
by a GPU check, else assumed), each stage's estimate (`nugget`, `nugget2d`,
`nugget2d_eval`, `restorable`), their timing (`estimate`), the plan (`plan`) and its text
(`render`). ``nugget run --dry-run --cost-device NAME [--gpus N]`` prints it
(docs/cluster.md). The benchmarks re-export the counting (`benchmarks.roofline`).
"""
