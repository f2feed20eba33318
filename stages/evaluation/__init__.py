"""Evaluation helpers shared by several studies: publishing a table, perplexity, greedy decoding,
ROUGE, BLEU / similarity metrics, token-class analysis."""
