"""Contracts of the Nugget study's outputs, read by other studies and the report: ``data`` (datasets),
``models`` (trained models), ``results`` (evaluation records and figures)."""
