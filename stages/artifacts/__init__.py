"""Typed contracts of stage outputs (Dagster assets / a Kedro DataCatalog in miniature).

Each output a stage hands to other stages is a small dataclass with one writer and one
reader: the producing stage calls ``write(output_dir)`` (or the class's ``write``
constructor for model folders) and every consumer calls ``read(artifact_or_dir)``. File
names and JSON fields live only here, never in consumers, and nothing is dug out of
another stage's manifest. ``read`` fails with :class:`ContractError` naming the stage,
the file and the field when something is missing or malformed.

One module per producing DAG group: :mod:`.data`, :mod:`.train`, :mod:`.calibrate`,
:mod:`.evaluate`; :mod:`.base` holds the error and the checked-reading helpers. This
package imports only ``stages.framework``, ``stages.common`` and ``nugget_core`` (the
latter lazily), never a group package (see ``tests/framework/test_import_layers.py``).
"""
