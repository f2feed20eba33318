"""Corpora: the offline corpus readers, text / token / split helpers every study builds on, and the
``corpus_stats`` stage."""
