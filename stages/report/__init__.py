"""Report group: the papers' tables, measured beside published."""
