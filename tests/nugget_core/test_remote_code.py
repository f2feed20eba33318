"""Custom code in a model folder is refused, never asked about (`nugget_core.remote_code`):
transformers' "Do you wish to run the custom code? [y/N]" must not appear inside a stage."""

from __future__ import annotations

import ast
import builtins
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROJECT = ("nugget_core", "stages", "pipelines", "benchmarks")


def _custom_code_folder(folder: Path, planted: Path) -> Path:
    """A model folder whose config maps AutoConfig to a Python file of its own, which
    writes ``planted`` when it is imported."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({
        "model_type": "custom", "auto_map": {"AutoConfig": "custom.CustomConfig"}}))
    (folder / "custom.py").write_text(
        f"open({str(planted)!r}, 'w').write('ran')\n"
        "from transformers import PretrainedConfig\n"
        "class CustomConfig(PretrainedConfig):\n    model_type = 'custom'\n")
    return folder


def test_a_custom_code_folder_is_refused_without_a_prompt(tmp_path, monkeypatch):
    from nugget_core.checkpoint import load_seq2seq_base

    asked: list[str] = []
    monkeypatch.setattr(builtins, "input", lambda prompt="": asked.append(prompt) or "n")
    planted = tmp_path / "ran.txt"
    folder = _custom_code_folder(tmp_path / "model", planted)
    with pytest.raises(ValueError, match="custom code"):
        load_seq2seq_base(folder)
    assert asked == [] and not planted.exists()


def test_a_library_caller_may_still_opt_in(tmp_path, monkeypatch):
    from nugget_core.remote_code import refuse_remote_code

    assert refuse_remote_code({}) == {"trust_remote_code": False}
    assert refuse_remote_code({"trust_remote_code": True, "dtype": "x"}) == {"trust_remote_code": True, "dtype": "x"}


def _auto_loads(path: Path) -> list[tuple[int, bool]]:
    """(line, says trust_remote_code) of every ``Auto*.from_pretrained / from_config`` call."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("from_pretrained", "from_config")
                and isinstance(node.func.value, ast.Name) and node.func.value.id.startswith("Auto")):
            explicit = any(k.arg == "trust_remote_code" for k in node.keywords)
            routed = any(k.arg is None and isinstance(k.value, ast.Call) and isinstance(k.value.func, ast.Name)
                         and k.value.func.id == "refuse_remote_code" for k in node.keywords)
            found.append((node.lineno, explicit or routed))
    return found


def test_every_auto_load_of_the_project_says_whether_it_trusts_remote_code():
    """A new ``AutoTokenizer.from_pretrained(path)`` without ``trust_remote_code`` would
    bring the prompt back: this scan names it."""
    loads = {path: _auto_loads(path) for top in PROJECT for path in sorted((REPO / top).rglob("*.py"))}
    assert sum(len(v) for v in loads.values()) > 20  # the scan sees the loads
    silent = [f"{path.relative_to(REPO)}:{line}" for path, found in loads.items() for line, ok in found if not ok]
    assert silent == []


def test_the_scan_finds_a_silent_load(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("from transformers import AutoTokenizer\ntok = AutoTokenizer.from_pretrained('x')\n"
                       "ok = AutoTokenizer.from_pretrained('x', trust_remote_code=False)\n")
    assert _auto_loads(planted) == [(2, False), (3, True)]
