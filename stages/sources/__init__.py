"""Offline real corpora (DESIGN.md §6): registry, fetching and readers."""
