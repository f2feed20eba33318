"""Nothing past a stage's boundary is untyped: no parameter or field named ``job``, ``cfg``,
``config`` or ``task`` in ``stages/`` is annotated ``Any`` (or left without an annotation),
so go-to-definition on ``job.max_doc_tokens`` reaches the config dataclass from the stage
down to the Ray Train worker. (mypy, run by ``make lint``, checks the types themselves.)"""

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
