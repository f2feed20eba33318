"""Offline real corpora (docs/offline-data.md): registry, fetching and readers."""
