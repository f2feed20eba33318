"""A source tree's registered stages and the DAG they form, read with ``ast`` (nothing imported).

For replaying history (``benchmarks/rekey_history.py``): importing an old tree's stages would
import torch and transformers for every commit, so the registry and the stage classes are
read from their source instead. ``stages/registry.py`` lists the stages in a literal
``ALL_STAGES`` tuple of names imported ``from stages.X import Name``; a stage class names
itself (``name = "..."``) and what it reads (``upstream``, or ``required_upstream`` plus the
registered ones of ``optional_upstream``, as ``stages.framework.optional`` resolves them),
as tuples of string literals or of module constants (``SCORER_STAGE = "train_nugget2d"``,
``*TRAINING_STAGES``, ``tuple(READERS)`` of a dict literal: its keys), possibly inherited
from a base class; or, for a stage with a typed header ``Stage[Config, Inputs, Output]``
(`stages.framework.contract`), the fields of its inputs class: each one's
``produced_by("x")`` / ``optional("x")`` stage, else its annotated class's ``STAGE``
(``optional(...)`` fields are the optional upstream; a base dataclass's fields first), and a
``collected(Kind)`` field's registered stages whose header writes ``Kind`` and which no other
field names; the header possibly reached through generic base classes (``class
Mine(Base[MyConfig, MyInputs])`` with ``class Base(Stage[ConfigT, InputsT, Out])``: each
base's type variables, the module's ``TypeVar(...)`` names in its bases or its
``Generic[...]`` in order, bound to the subclass's arguments). Anything else is refused by
name, never guessed.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

REGISTRY = "stages/registry.py"


class Unreadable(ValueError):
    """A registry or stage class attribute that is not a literal this reader follows."""


@dataclass(frozen=True)
class StageNode:
    module: str
    cls: str
    name: str
    upstream: tuple[str, ...]

    @property
    def id(self) -> str:
        """Identity across commits: module and class name."""
        return f"{self.module}:{self.cls}"


def registered_stages(tree: Path) -> list[tuple[str, str]]:
    """``(module, class)`` of every stage in ``tree``'s ``ALL_STAGES``: each name of the tuple
    resolved through the registry's ``from stages.X import Name`` lines."""
    path = tree / REGISTRY
    if not path.is_file():
        raise Unreadable(f"{path}: no stage registry in this tree")
    body = ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body
    imported = {alias.asname or alias.name: node.module for node in body
                if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("stages.")
                for alias in node.names}
    for node in body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ALL_STAGES" for t in node.targets):
            names = node.value.elts if isinstance(node.value, ast.Tuple | ast.List) else None
            if names is None or not all(isinstance(e, ast.Name) and e.id in imported for e in names):
                raise Unreadable(f"{path}: ALL_STAGES is not a literal tuple of names imported from stages.*")
            return [(imported[e.id], e.id) for e in names]  # type: ignore[union-attr]
    raise Unreadable(f"{path}: no ALL_STAGES assignment")


class _Module:
    """One module's top-level bindings: its classes, assignments and ``from`` imports."""

    def __init__(self, tree: Path, name: str):
        self.name = name
        base = tree.joinpath(*name.split("."))
        path = base / "__init__.py" if (base / "__init__.py").is_file() else base.with_name(base.name + ".py")
        self.path = path
        self.body = ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body if path.is_file() else []

    @cached_property
    def classes(self) -> dict[str, ast.ClassDef]:
        return {n.name: n for n in self.body if isinstance(n, ast.ClassDef)}

    @cached_property
    def assignments(self) -> dict[str, ast.expr]:
        found = {t.id: n.value for n in self.body if isinstance(n, ast.Assign) for t in n.targets
                 if isinstance(t, ast.Name)}
        found.update({n.target.id: n.value for n in self.body if isinstance(n, ast.AnnAssign)
                      and isinstance(n.target, ast.Name) and n.value is not None})
        return found

    @cached_property
    def imports(self) -> dict[str, tuple[str, str]]:
        """``{bound name: (absolute module, name there)}`` of its ``from X import Y`` lines."""
        package = self.name if self.path.name == "__init__.py" else self.name.rpartition(".")[0]
        found = {}
        for node in self.body:
            if isinstance(node, ast.ImportFrom):
                source = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                    if node.level else node.module or ""
                found.update({a.asname or a.name: (source, a.name) for a in node.names})
        return found


class _Reader:
    def __init__(self, tree: Path):
        self.tree = tree
        self.modules: dict[str, _Module] = {}

    def module(self, name: str) -> _Module:
        if name not in self.modules:
            self.modules[name] = _Module(self.tree, name)
        return self.modules[name]

    def constant(self, module: str, name: str) -> object:
        """A module-level binding's value, following ``from X import name``."""
        mod = self.module(module)
        if name in mod.assignments:
            return self.value(mod.assignments[name], module, {})
        if name in mod.imports:
            return self.constant(*mod.imports[name])
        raise Unreadable(f"{mod.path}: {name!r} is no module-level literal")

    def value(self, node: ast.expr, module: str, scope: dict[str, object]) -> object:
        if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, str)):
            return node.value
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):  # OtherClass.STAGE
            return self.attributes(module, node.value.id, (node.attr,))[node.attr]
        if isinstance(node, ast.Tuple | ast.List):
            items: list[object] = []
            for e in node.elts:  # `*OTHER` spreads a tuple constant
                if isinstance(e, ast.Starred):
                    items.extend(self.value(e.value, module, scope))  # type: ignore[call-overload]
                else:
                    items.append(self.value(e, module, scope))
            return tuple(items)
        if isinstance(node, ast.Dict):  # what iterating it gives: its keys
            return tuple(self.value(k, module, scope) for k in node.keys if k is not None)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("tuple", "list") \
                and len(node.args) == 1 and not node.keywords:
            return tuple(self.value(node.args[0], module, scope))  # type: ignore[arg-type]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.value(node.left, module, scope) + self.value(node.right, module, scope)  # type: ignore[operator]
        if isinstance(node, ast.Name):
            return scope[node.id] if node.id in scope else self.constant(module, node.id)
        raise Unreadable(f"{self.module(module).path}:{node.lineno}: {ast.unparse(node)} is not a literal")

    def find_class(self, module: str, name: str) -> tuple[str, ast.ClassDef] | None:
        mod = self.module(module)
        if name in mod.classes:
            return module, mod.classes[name]
        if name in mod.imports and mod.imports[name][0].split(".")[0] == "stages":
            return self.find_class(*mod.imports[name])
        return None

    def attributes(self, module: str, cls: str, wanted: tuple[str, ...],
                   bound: dict[str, tuple[str, ast.expr]] | None = None) -> dict[str, object]:
        """The literal class attributes ``wanted`` of ``module.cls``, inherited ones included
        (bases in order, as the MRO of single inheritance chains finds them); ``bound``: what
        a subclass's header binds ``cls``'s type variables to (name -> module, expression)."""
        found = self.find_class(module, cls)
        if found is None:
            raise Unreadable(f"no class {cls} in {module}")
        where, node = found
        scope: dict[str, object] = {}
        for stmt in node.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else []
            for target in targets:
                if isinstance(target, ast.Name) and target.id in (*wanted, "required_upstream"):
                    scope[target.id] = self.value(stmt.value, where, scope)  # type: ignore[union-attr,arg-type]
        for base in node.bases:
            header = self.typed_header(where, node, base, bound or {})
            if header is not None:
                scope = {**header, **scope}
                continue
            named = base.value if isinstance(base, ast.Subscript) else base  # a generic base: Base[Config, Inputs]
            parent = self.find_class(where, named.id) if isinstance(named, ast.Name) else None
            if parent is not None:
                args = self.type_arguments(where, base, bound or {})
                binding = dict(zip(self.type_parameters(*parent), args, strict=False)) if args else None
                inherited = self.attributes(where, named.id, wanted, binding)  # type: ignore[union-attr]
                scope = {**inherited, **scope}
        return {k: v for k, v in scope.items() if k in wanted}

    @staticmethod
    def type_arguments(module: str, base: ast.expr, bound: dict[str, tuple[str, ast.expr]]
                       ) -> list[tuple[str, ast.expr]]:
        """The arguments of a subscripted base (``Base[A, B]``), each where it is read: a
        type variable of the class being read resolves to what its own subclass bound it to."""
        if not isinstance(base, ast.Subscript):
            return []
        elts = base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice]
        return [bound[e.id] if isinstance(e, ast.Name) and e.id in bound else (module, e) for e in elts]

    def type_parameters(self, module: str, node: ast.ClassDef) -> list[str]:
        """A generic class's type variables in the order its subscript binds them: those of
        its ``Generic[...]`` base, else the module's ``TypeVar(...)`` names in its bases'
        subscripts in order of first appearance (as ``typing`` orders them)."""
        found: list[str] = []
        for base in node.bases:
            if not isinstance(base, ast.Subscript):
                continue
            elts = base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice]
            names = [e.id for e in elts if isinstance(e, ast.Name)]
            if isinstance(base.value, ast.Name) and base.value.id == "Generic":
                return names
            found.extend(n for n in names if n not in found and self.is_type_variable(module, n))
        return found

    def is_type_variable(self, module: str, name: str) -> bool:
        """Whether ``name`` is bound to ``TypeVar(...)`` in ``module`` (or where it is imported from)."""
        mod = self.module(module)
        if name in mod.imports:
            source, original = mod.imports[name]
            return source.split(".")[0] == "stages" and self.is_type_variable(source, original)
        value = mod.assignments.get(name)
        func = value.func if isinstance(value, ast.Call) else None
        return (isinstance(func, ast.Name) and func.id == "TypeVar") or \
            (isinstance(func, ast.Attribute) and func.attr == "TypeVar")

    def typed_header(self, module: str, cls: ast.ClassDef, base: ast.expr,
                     bound: dict[str, tuple[str, ast.expr]]) -> dict[str, object] | None:
        """``upstream`` (and ``required_upstream`` / ``optional_upstream``) derived from a
        ``Stage[Config, Inputs, Output]`` base of class ``cls``, as `stages.framework.contract`
        derives them (its type variables as ``bound``); None for any other base, and for a
        header whose inputs are a type variable of ``cls`` no subclass bound (a generic base
        class read for itself)."""
        if not (isinstance(base, ast.Subscript) and isinstance(base.value, ast.Name)
                and isinstance(base.slice, ast.Tuple) and len(base.slice.elts) == 3):
            return None
        found = self.find_class(module, base.value.id)
        if found is None or (found[0], found[1].name) != ("stages.framework.stage", "Stage"):
            return None
        declared = base.slice.elts[1]
        if isinstance(declared, ast.Name) and declared.id not in bound and declared.id in self.type_parameters(
                module, cls):
            return None
        where, inputs = self.type_arguments(module, base, bound)[1]
        if not isinstance(inputs, ast.Name):
            raise Unreadable(f"{self.module(module).path}:{base.lineno}: inputs class {ast.unparse(inputs)} is no name")
        required: list[str] = []
        optional: list[str] = []
        collects: str | None = None
        for owner, stmt in self.input_fields(where, inputs.id):
            call = stmt.value if isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name) else None
            kind = call.func.id if call is not None else ""  # type: ignore[union-attr]
            if kind == "collected" and call is not None and call.args:
                collects = self.class_id(owner, call.args[0])
                continue
            named = call is not None and kind in ("produced_by", "optional") and call.args
            if named:
                stage = self.value(call.args[0], owner, {})  # type: ignore[union-attr]
            else:
                stage = self.annotated_stage(owner, stmt.annotation)
            (optional if kind == "optional" else required).append(str(stage))
        out_where, output = self.type_arguments(module, base, bound)[2]
        header: dict[str, object] = {"upstream": tuple(required), "collects": collects, "output": None
                                     if isinstance(output, ast.Constant) else self.class_id(out_where, output)}
        if optional or collects:
            header.update(required_upstream=tuple(required), optional_upstream=tuple(optional))
        return header

    def input_fields(self, module: str, name: str) -> list[tuple[str, ast.AnnAssign]]:
        """The annotated fields of inputs class ``name`` (its base dataclasses' first), each
        with the module it is written in."""
        located = self.find_class(module, name)
        if located is None:
            raise Unreadable(f"{self.module(module).path}: no inputs class {name}")
        where, cls = located
        fields = [f for base in cls.bases if isinstance(base, ast.Name) and self.find_class(where, base.id)
                  for f in self.input_fields(where, base.id)]
        return fields + [(where, stmt) for stmt in cls.body
                         if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)]

    def class_id(self, module: str, node: ast.expr) -> str:
        """``module:Class`` where the class named by ``node`` (in ``module``) is defined."""
        located = self.find_class(module, node.id) if isinstance(node, ast.Name) else None
        if located is None:
            raise Unreadable(f"{self.module(module).path}:{node.lineno}: {ast.unparse(node)} is no class of stages.*")
        return f"{located[0]}:{located[1].name}"

    def annotated_stage(self, module: str, annotation: ast.expr) -> object:
        """The ``STAGE`` of an inputs field's class (``Kind`` or ``Kind | None``)."""
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            sides = [a for a in (annotation.left, annotation.right)
                     if not (isinstance(a, ast.Constant) and a.value is None)]
            annotation = sides[0] if len(sides) == 1 else annotation
        if not isinstance(annotation, ast.Name):
            raise Unreadable(f"{self.module(module).path}:{annotation.lineno}: input annotation "
                             f"{ast.unparse(annotation)} is no class name")
        return self.attributes(module, annotation.id, ("STAGE",))["STAGE"]


def stage_graph(tree: Path) -> list[StageNode]:
    """Every registered stage of ``tree`` with its name and resolved upstream."""
    reader = _Reader(tree)
    raw = [(module, cls, reader.attributes(module, cls, ("name", "upstream", "required_upstream",
                                                          "optional_upstream", "collects", "output")))
           for module, cls in registered_stages(tree)]
    names = {attrs.get("name") for _, _, attrs in raw}
    outputs = {attrs.get("name"): attrs.get("output") for _, _, attrs in raw}
    nodes = []
    for module, cls, attrs in raw:
        if not isinstance(attrs.get("name"), str):
            raise Unreadable(f"{module}.{cls}: no literal name")
        if attrs.get("optional_upstream") is not None:
            upstream = tuple(attrs.get("required_upstream", ())) + tuple(  # type: ignore[arg-type]
                n for n in attrs["optional_upstream"] if n in names)  # type: ignore[attr-defined]
        else:
            upstream = tuple(attrs.get("upstream", ()))  # type: ignore[arg-type]
        if attrs.get("collects") is not None:  # as `stages.framework.optional.collected_upstream`
            named = {*attrs["required_upstream"], *attrs["optional_upstream"], attrs["name"]}  # type: ignore[misc]
            upstream += tuple(n for n, out in outputs.items() if out == attrs["collects"] and n not in named)
        nodes.append(StageNode(module, cls, str(attrs["name"]), upstream))
    return nodes


def downstream(nodes: list[StageNode], ids: set[str]) -> set[str]:
    """``ids`` and every stage that reads one of them, transitively (by stage id)."""
    readers: dict[str, list[StageNode]] = {}
    for node in nodes:
        for up in node.upstream:
            readers.setdefault(up, []).append(node)
    by_id = {n.id: n for n in nodes}
    out, stack = set(ids), [by_id[i] for i in ids if i in by_id]
    while stack:
        for reader in readers.get(stack.pop().name, []):
            if reader.id not in out:
                out.add(reader.id)
                stack.append(reader)
    return out
