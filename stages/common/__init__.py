"""Helpers shared by several DAG groups (data, training, evaluation, report): prompt
cutting, task-record reading, progress lines, table rendering, figure styling
(`figures`) and tokens shown as text (`tokens`). Nothing here is a stage."""
