"""The report study: the papers' tables, measured beside published, the findings, the training
section and the differences from the papers' setups; it reads every study's outputs through
their artifact types."""
