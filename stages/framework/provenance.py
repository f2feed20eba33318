"""Import closure of a module: every in-repo source file that importing it can run.

Read from the source with ``ast`` (nothing is imported): ``import a.b``, ``from a.b import
c`` (``c`` counts when it is a submodule), relative imports, and imports anywhere in a
file (function bodies, ``try``), since lazy imports run code too. Imports under ``if
TYPE_CHECKING:`` never run and are skipped. A package that exports names lazily (PEP 562)
declares them in a module-level dict literal ``_EXPORTS = {"Name": ".module"}`` (see
``nugget_core/__init__.py``): ``from package import Name`` then counts ``package.module``,
so a stage that imports one light name is not keyed on the whole package.
Importing ``a.b.c`` executes ``a/__init__.py`` and ``a/b/__init__.py``, so every parent
package is in the closure. In-repo = the top-level packages ``IN_REPO_PACKAGES`` (plus the
start module's own top-level package) found under the root, the directory holding them;
everything else (stdlib, third party) is not hashed: the versions of the third-party
libraries a closure imports key the stage instead (:func:`third_party_imports`,
:mod:`stages.framework.environment`). The framework's plumbing (``PLUMBING_PACKAGES``) is
left out of closures. Dynamic imports (``importlib.import_module(name)``) are invisible to
this.

``python -m stages.framework.provenance MODULE`` prints the closure of ``MODULE``.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from functools import cache
from pathlib import Path

IN_REPO_PACKAGES = ("stages", "nugget_core", "pipelines")
# The framework's plumbing (scheduling, the store, locks, MLflow tracking, redaction): it
# decides where and when a stage runs and how it is recorded, not what it computes, so it is
# left out of every closure (neither hashed nor followed). The rare change to what a stage
# writes through it is versioned by hand: `stages.framework.keys.FRAMEWORK_OUTPUT_VERSION`.
PLUMBING_PACKAGES = ("stages.framework",)


def repo_root(module_name: str) -> Path:
    """The directory holding ``module_name``'s top-level package (from its ``__file__``)."""
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if file is None:
        raise ValueError(f"module {module_name!r} is not imported from a source file")
    path = Path(file).resolve()
    depth = len(module_name.split("."))
    # pkg/mod.py: the root is `depth` levels up; pkg/__init__.py: one more
    return path.parents[depth if path.name == "__init__.py" else depth - 1]


def module_file(root: Path, name: str) -> Path | None:
    """The source file of module ``name`` under ``root`` (package ``__init__`` or ``.py``)."""
    base = root.joinpath(*name.split("."))
    for candidate in (base / "__init__.py", base.with_name(base.name + ".py")):
        if candidate.is_file():
            return candidate
    return None


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _imported_names(source: str, name: str, is_package: bool, filename: str) -> set[str]:
    """Absolute dotted names a module's source imports (candidates; may not exist)."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                if node.level - 1 >= len(parts):
                    continue  # beyond the top-level package: not a valid import
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` (never executed)."""
    nodes, stack = [], [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return nodes


@cache
def _lazy_exports(root: Path, package: str) -> dict[str, str]:
    """``{name: absolute module}`` of a package's module-level ``_EXPORTS`` dict literal."""
    path = module_file(root, package)
    if path is None or path.name != "__init__.py":
        return {}
    for node in ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            table = {}
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if not (isinstance(key, ast.Constant) and isinstance(value, ast.Constant)):
                    raise ValueError(f"{path}: _EXPORTS must be a literal dict of strings")
                target = str(value.value)
                table[str(key.value)] = importlib.util.resolve_name(target, package)
            return table
    return {}


def _lazy_targets(root: Path, name: str) -> list[str]:
    """The module behind ``package.Name`` when ``Name`` is a lazy export of ``package``."""
    package, _, attr = name.rpartition(".")
    target = _lazy_exports(root, package).get(attr) if package else None
    return [target] if target else []


@cache
def _file_imports(module_name: str, root: Path) -> frozenset[str]:
    """What one module's own file imports (`_imported_names`), parsed once per process."""
    path = module_file(root, module_name)
    if path is None:
        raise ValueError(f"no source for module {module_name!r} under {root}")
    source = path.read_text(encoding="utf-8")
    return frozenset(_imported_names(source, module_name, path.name == "__init__.py", str(path)))


def _in_repo(name: str, start: str) -> bool:
    return name.split(".")[0] in (*IN_REPO_PACKAGES, start.split(".")[0])


def is_plumbing(name: str) -> bool:
    """Whether module ``name`` is framework plumbing, outside every closure."""
    return any(name == p or name.startswith(p + ".") for p in PLUMBING_PACKAGES)


@cache
def _direct(module_name: str, root: Path) -> frozenset[str]:
    """In-repo modules (with their parent packages) that one module's own file imports (once per
    process: every stage's closure walks the same modules)."""
    names = set(_file_imports(module_name, root))
    names |= {t for name in names if _in_repo(name, module_name) for t in _lazy_targets(root, name)}
    return frozenset(
        parent
        for name in names
        for parent in _with_parents(name)
        if _in_repo(parent, module_name) and module_file(root, parent) is not None
    )


@cache
def _closure(module_name: str, root: Path) -> tuple[str, ...]:
    seen: set[str] = set()
    stack = [m for m in _with_parents(module_name) if module_file(root, m) is not None]
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(m for m in _direct(name, root) if _in_repo(m, module_name) and not is_plumbing(m))
    return tuple(sorted(seen))


@cache
def _third_party(module_name: str, root: Path) -> tuple[str, ...]:
    found: set[str] = set()
    for name in _closure(module_name, root):
        for imported in _file_imports(name, root):
            top = imported.split(".")[0]
            if top and not _in_repo(top, module_name) and top not in sys.stdlib_module_names:
                found.add(top)
    return tuple(sorted(found))


def _root(module_name: str, root: Path | str | None) -> Path:
    return repo_root(module_name) if root is None else Path(root).resolve()


def direct_imports(module_name: str, root: Path | str | None = None) -> list[str]:
    """Sorted in-repo modules that ``module_name``'s own file imports, with their parent
    packages (what it runs directly, not transitively)."""
    return sorted(_direct(module_name, _root(module_name, root)))


def import_closure(module_name: str, root: Path | str | None = None) -> list[str]:
    """Sorted names of the in-repo modules ``module_name`` transitively imports (itself,
    its parent packages and theirs included). ``root`` defaults to the directory holding
    the (already imported) module's top-level package."""
    resolved = _root(module_name, root)
    if module_file(resolved, module_name) is None:
        raise ValueError(f"no source for module {module_name!r} under {resolved}")
    return list(_closure(module_name, resolved))


def third_party_imports(module_name: str, root: Path | str | None = None) -> list[str]:
    """Sorted top-level names of the third-party packages the files of ``module_name``'s
    closure import at run time (neither in-repo nor the standard library)."""
    return list(_third_party(module_name, _root(module_name, root)))


def closure_files(module_name: str, root: Path | str | None = None) -> list[Path]:
    """The source files of :func:`import_closure`, relative to the root, sorted."""
    resolved = _root(module_name, root)
    files = (module_file(resolved, m) for m in import_closure(module_name, resolved))
    return sorted(f.relative_to(resolved) for f in files if f is not None)


def main(argv: list[str] | None = None) -> None:
    root = Path(__file__).resolve().parents[2]  # the directory holding ``stages``
    for name in argv if argv is not None else sys.argv[1:]:
        files = closure_files(name, root)
        print(f"{name}: {len(files)} files under {root}")
        for f in files:
            print(f"  {f.as_posix()}")


if __name__ == "__main__":
    main()
