"""Helpers shared by several studies and layers (corpora, Nugget, Nugget2D, RE, report): prompt
cutting, task-record reading, progress lines, table rendering, figure styling
(`figures`), tokens shown as text (`tokens`) and the word each token belongs to
(`words`). Nothing here is a stage."""
