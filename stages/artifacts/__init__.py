"""Typed contracts of stage outputs (Dagster assets / a Kedro DataCatalog in miniature).

Each output a stage hands to other stages is a small dataclass with one writer and one
reader: the producing stage calls ``write(output_dir)`` (or the class's ``write``
constructor for model folders) and every consumer calls ``read(artifact_or_dir)``. File
names and JSON fields live only here, never in consumers, and nothing is dug out of
another stage's manifest. ``read`` fails with :class:`ContractError` naming the stage,
the file and the field when something is missing or malformed.

Each study keeps its outputs' contracts in its own folder (`stages.nugget.artifacts`,
`stages.nugget2d.artifacts`, `stages.restorable.artifacts`, `stages.corpora.artifacts`): the
only part of a study another study may import. This package holds what they all build on:
:mod:`.base` (the error, `Stored`, the checked-reading helpers), :mod:`.evaluate` (the
`EvalTable` every evaluation writes), :mod:`.trainer_state` (what every training output
records), :mod:`.systems` (outputs of several trained systems) and :mod:`.catalog` (stage ->
its output's class). It imports only ``stages.framework``, ``stages.common`` and
``nugget_core`` (the latter lazily), never a study (see
``tests/framework/test_import_layers.py``).
"""
