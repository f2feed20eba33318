"""The identity of the code a stage runs: a digest of what Python executes, not of bytes.

A stage's code version is ``"<version>:<digest>"``: its hand-bumped ``version`` plus the first
16 hex chars of a sha256 over the *normalised* source of every file of its import closure
(:mod:`stages.framework.provenance`, which leaves the framework's plumbing out). Normalised
means the module's abstract syntax tree, dumped without line and column numbers, with:

- docstrings removed (the first string statement of a module, class or function body);
- ``if TYPE_CHECKING:`` bodies removed (they never run; provenance skips their imports too);
- comments, blank lines and formatting gone, as they never reach the tree.

So a comment, a docstring or a reformatting leaves every key alone, and any change to what
runs (a statement, a literal, a default, a name) re-keys the stages whose closure holds the
file. The dump's format belongs to the Python version that parsed it; the Python version is
part of every stage's environment (:mod:`stages.framework.environment`), so that is no new
source of misses. Digests are cached per process (files do not change under a run).

``python -m stages.framework.code_identity FILE...`` prints each file's normalised digest.
"""

from __future__ import annotations

import ast
import hashlib
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from stages.framework.provenance import closure_files, is_type_checking, repo_root

if TYPE_CHECKING:
    from stages.framework.stage import Stage

DIGEST_CHARS = 16  # hex chars of the closure digest in a code version


def _strip(body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` without its docstring and without ``if TYPE_CHECKING:`` branches."""
    kept: list[ast.stmt] = []
    for i, node in enumerate(body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            continue  # the docstring
        if isinstance(node, ast.If) and is_type_checking(node.test):
            kept.extend(node.orelse)  # `else:` of a TYPE_CHECKING test does run
            continue
        kept.append(node)
    return kept or [ast.Pass()]  # a body of only a docstring is a body that does nothing


class _Normaliser(ast.NodeTransformer):
    def generic_visit(self, node: ast.AST) -> ast.AST:
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            # a leading string in an `if` / `for` body is no docstring, but a no-op all the same
            node.body = _strip(body)  # type: ignore[attr-defined]
        return super().generic_visit(node)


def normalised_source(source: str, filename: str = "<source>") -> str:
    """The normalised form of a module's source (see the module docstring)."""
    tree = _Normaliser().visit(ast.parse(source, filename=filename))
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def file_digest(path: Path) -> str:
    """sha256 of a source file's normalised form."""
    return _file_digest(path.resolve())


@cache
def _file_digest(path: Path) -> str:
    text = normalised_source(path.read_text(encoding="utf-8"), str(path))
    return hashlib.sha256(text.encode()).hexdigest()


def closure_digest(module_name: str) -> str:
    """sha256 over (relative path, normalised digest) of each file of ``module_name``'s
    import closure, in sorted path order."""
    return _closure_digest(module_name, repo_root(module_name))


@cache
def _closure_digest(module_name: str, root: Path) -> str:
    digest = hashlib.sha256()
    for rel in closure_files(module_name, root):
        digest.update(f"{rel.as_posix()}\0{_file_digest((root / rel).resolve())}\0".encode())
    return digest.hexdigest()


def code_version(stage_cls: type[Stage]) -> str:
    """``"<version>:<16 hex of closure_digest(stage module)>"``."""
    return f"{stage_cls.version}:" + closure_digest(stage_cls.__module__)[:DIGEST_CHARS]


def main(argv: list[str] | None = None) -> None:
    for name in argv if argv is not None else sys.argv[1:]:
        print(f"{file_digest(Path(name))[:DIGEST_CHARS]}  {name}")


if __name__ == "__main__":
    main()
