"""Nothing past a stage's boundary is untyped: no parameter or field named ``job``, ``cfg``,
``config`` or ``task`` in ``stages/`` is annotated ``Any`` (or left without an annotation),
so go-to-definition on ``job.max_doc_tokens`` reaches the config dataclass from the stage
down to the Ray Train worker, and nothing outside the framework reads the config through the
context (``ctx.cfg`` / ``ctx.config``, typed `Any`). (mypy, run by ``make lint``, checks the
types themselves.)"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMES = {"job", "cfg", "config", "task"}


def _untyped(annotation: ast.expr | None) -> bool:
    return annotation is None or ast.unparse(annotation) in ("Any", "typing.Any")


def untyped_names(source: str, path: str) -> list[str]:
    """``path:line name`` of every parameter or annotated field in ``source`` named as in
    `NAMES` whose annotation is missing or ``Any``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            args = node.args
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                lambda_arg = isinstance(node, ast.Lambda)
                if arg.arg in NAMES and not lambda_arg and _untyped(arg.annotation):
                    found.append(f"{path}:{arg.lineno} {arg.arg}")
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in NAMES:
            if _untyped(node.annotation):
                found.append(f"{path}:{node.lineno} {node.target.id}")
    return found


def test_the_check_sees_untyped_names():
    source = ("from typing import Any\n"
              "def f(job: Any, cfg, task: 'TrainingTask', other: Any) -> None:\n"
              "    config: Any = None\n"
              "class C:\n    task: Any\n")
    assert untyped_names(source, "x.py") == ["x.py:2 job", "x.py:2 cfg", "x.py:3 config", "x.py:5 task"]


def test_no_untyped_job_cfg_or_task_in_stages():
    found = [hit for path in sorted((ROOT / "stages").rglob("*.py"))
             for hit in untyped_names(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not found, "annotate these with their config section / TrainingTask class:\n" + "\n".join(found)


def untyped_config_reads(source: str, path: str) -> list[str]:
    """``path:line`` of every ``ctx.cfg(...)`` / ``ctx.config`` in ``source``: the untyped
    way into the config (`Any`), which a stage's typed header replaces."""
    return [f"{path}:{node.lineno} ctx.{node.attr}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr in ("cfg", "config")
            and isinstance(node.value, ast.Name) and node.value.id == "ctx"]


def test_the_check_sees_untyped_config_reads():
    source = "def f(ctx):\n    a = ctx.cfg('run.seed')\n    b = ctx.config.get('model.lm')\n    c = config.seed\n"
    assert untyped_config_reads(source, "x.py") == ["x.py:2 ctx.cfg", "x.py:3 ctx.config"]


def test_stages_read_config_only_through_their_typed_header():
    """Every stage has a typed header, so past the framework nothing reads the config
    through the context: a helper gets the section it needs from the stage's config class
    (e.g. `stages.training.launch.train_into_stage_output`'s ``seed`` and ``model_lm``)."""
    found = [hit for path in sorted((ROOT / "stages").rglob("*.py")) if "framework" not in path.parts
             for hit in untyped_config_reads(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not found, "read these from the stage's typed config instead:\n" + "\n".join(found)
