"""RestorableConfig validation and persistence; the lazy `nugget_core.restorable` package."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from nugget_core.restorable import DecoderKind, Pooling, RestorableConfig


def test_defaults_and_json_round_trip(tmp_path):
    cfg = RestorableConfig(pooling=Pooling.CLS, decoder="input", extra_layers=3, freeze_pretrained=True)
    assert cfg.pooling == "cls" and cfg.decoder == DecoderKind.INPUT and cfg.repr_dim is None
    cfg.save(tmp_path)
    assert RestorableConfig.load(tmp_path) == cfg
    assert (tmp_path / "restorable_config.json").is_file()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pooling": "max"}, r"pooling='max': one of \['cls', 'mean'\]"),
        ({"decoder": "film"}, r"decoder='film': one of \['input', 'cross', 'gating'\]"),
        ({"repr_dim": 0}, "repr_dim=0"),
        ({"repr_dim": 8.0}, "repr_dim=8.0"),
        ({"extra_layers": -1}, "extra_layers=-1"),
        ({"extra_layers": True}, "extra_layers=True"),
        ({"freeze_pretrained": "yes"}, "freeze_pretrained='yes'"),
    ],
)
def test_bad_fields_are_named(fields, message):
    with pytest.raises(ValueError, match=message):
        RestorableConfig(**fields)


def test_repr_dim_resolution():
    assert RestorableConfig(decoder="gating", repr_dim=16).resolved_repr_dim(32) == 16
    assert RestorableConfig(decoder="cross").resolved_repr_dim(32) == 32
    assert RestorableConfig(decoder="cross", repr_dim=32).resolved_repr_dim(32) == 32
    with pytest.raises(ValueError, match="only decoder='gating'"):
        RestorableConfig(decoder="input", repr_dim=16).resolved_repr_dim(32)


def test_unknown_fields_are_refused_on_load(tmp_path):
    (tmp_path / "restorable_config.json").write_text('{"pooling": "cls", "bottleneck": 3}')
    with pytest.raises(ValueError, match="unknown field"):
        RestorableConfig.load(tmp_path)


def test_config_imports_without_torch():
    code = (
        "import sys\n"
        "from nugget_core import RestorableConfig\n"
        "from nugget_core.restorable import DecoderKind, Pooling\n"
        "RestorableConfig(pooling=Pooling.MEAN, decoder=DecoderKind.CROSS)\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lazy_table_is_the_public_and_the_static_api():
    import nugget_core.restorable as package

    assert sorted(package.__all__) == sorted(package._EXPORTS)
    for name in package.__all__:
        assert getattr(package, name) is not None, name
    tree = ast.parse(open(package.__file__).read())
    static = {
        alias.name: "." * node.level + (node.module or "")
        for block in tree.body
        if isinstance(block, ast.If) and getattr(block.test, "id", "") == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert static == package._EXPORTS
