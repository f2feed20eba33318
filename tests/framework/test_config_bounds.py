"""Config values that used to fail late, refused at load: a group option that is a path
(it read any YAML on the machine), an integer no library can hold (a vocabulary of 10**23
failed 16 s in with an OverflowError), BM25 negatives beyond any task (``data.rr.negatives=
100000`` failed build_rr after Ray started, without naming the key)."""

from __future__ import annotations

import copy
import dataclasses
import os
import types
import typing
from collections.abc import Iterator
from typing import Any

import pytest

from pipelines.cli import main_full
from stages.config import ConfigError, load_config
from stages.config.loader import CONF_DIR, GROUPS
from stages.config.validate import INT_LIMIT, errors

HUGE = 10**23


def _int_kind(hint: Any) -> str:
    """'int', 'list' (a list of ints) or '' for a field's type hint (``int | None`` is an int)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if hint is int or (isinstance(hint, types.UnionType | typing._UnionGenericAlias) and args == [int]):
        return "int"
    return "list" if typing.get_origin(hint) is list and args == [int] else ""


def _int_fields(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any, str, dict]]:
    """(path, owner, field name, metadata) of every integer field of the config ``obj``,
    in nested sections and in lists of sections (``eval.lm.contexts[0]``)."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        value, path = getattr(obj, f.name), f"{prefix}{f.name}"
        kind = _int_kind(hints[f.name])
        if kind:
            yield path, obj, f.name, dict(f.metadata) | {"kind": kind}
        elif dataclasses.is_dataclass(value):
            yield from _int_fields(value, f"{path}.")
        elif isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
            yield from _int_fields(value[0], f"{path}[0].")


def test_every_integer_field_has_bounds_and_refuses_a_huge_value():
    base = load_config([])
    fields = list(_int_fields(base))
    assert len(fields) > 150  # the walk reaches nugget_core's sections, lists of ints and list items
    unbounded_below = [p for p, _, _, meta in fields if "ge" not in meta and "gt" not in meta]
    assert not unbounded_below, f"integer fields without a lower bound: {unbounded_below}"
    missed = []
    for path, owner, name, meta in fields:
        cfg = copy.deepcopy(base)
        owner = next(o for p, o, n, _ in _int_fields(cfg) if p == path)  # the same field in the fresh config
        setattr(owner, name, [HUGE] if meta["kind"] == "list" else HUGE)
        if not any(e.startswith(f"{path}: value {HUGE}") for e in errors(cfg)):
            missed.append(path)
    assert not missed, f"integer fields that take {HUGE}: {missed}"


def test_an_integer_at_the_limit_is_kept():
    assert not [e for e in errors(load_config([f"run.seed={INT_LIMIT}"], check=False)) if e.startswith("run.seed")]
    found = errors(load_config([f"run.seed={INT_LIMIT + 1}"], check=False))
    assert found == ["run.seed: value 2147483648 must be <= 2147483647 (the bound of every integer field)"]


@pytest.mark.parametrize(("override", "message"), [
    (f"model.seq2seq.tokenizer_vocab_size={HUGE}", f"model.seq2seq.tokenizer_vocab_size: value {HUGE} must be <= "),
    ("data.rr.negatives=100000", "data.rr.negatives: value 100000 must be <= 999"),
    ("data.pi.negatives=100000", "data.pi.negatives: value 100000 must be <= 999"),
    (f"eval.lm.contexts=[{{total_states: {HUGE}, compressed_tokens: 8, context_tokens: 8}}]",
     f"eval.lm.contexts[0].total_states: value {HUGE} must be <= {INT_LIMIT}"),
])
def test_huge_sizes_stop_the_dry_run_naming_the_key(override, message, base_args, capsys, no_ray):
    assert main_full(["--dry-run", *base_args, "run.targets=[corpus_stats]", override]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err


def _outside(tmp_path) -> str:
    evil = tmp_path / "evil.yaml"
    evil.write_text("{}\n")  # a valid option of every group: whatever it holds would be read
    return str(evil.with_suffix(""))


@pytest.mark.parametrize("group", ["profile", *GROUPS])
def test_a_group_option_is_a_name_not_a_path(group, tmp_path):
    target = _outside(tmp_path)
    relative = os.path.relpath(target, CONF_DIR / group)  # ../../../tmp/.../evil: the file exists
    for option in (relative, target, "./tiny", f"../{group}/tiny"):
        with pytest.raises(ConfigError) as err:
            load_config([f"{group}={option}"])
        assert f"{group}={option!r} is not an option (an option is a file name of conf/{group}/, not a path); " \
               "available: ['gpu1', 'paper', 'small', 'tiny']" in str(err.value)


def test_a_profile_path_stops_the_cli(tmp_path, capsys, no_ray):
    option = os.path.relpath(_outside(tmp_path), CONF_DIR / "profile")
    assert main_full(["--dry-run", f"profile={option}"]) == 2
    assert "is not an option (an option is a file name of conf/profile/, not a path)" in capsys.readouterr().err
