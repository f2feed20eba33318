"""Import layering of the code base, from the source text (``ast``; imports inside
functions count): packages form no cycle, the model library stays free of the pipeline,
the shared layers (framework, config, sources, common, artifacts, corpora, evaluation,
training) import no study, studies meet only through artifact types (a study reads
another's output through its type in ``stages.<study>.artifacts``, never through the other
study's code), and stage modules are imported only by the registry."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP = ("stages", "nugget_core", "pipelines")
#: what every study builds on: the stage framework, config sections, offline sources, helpers,
#: the shared artifact types (evaluation tables, trainer state), the corpus readers, shared
#: evaluation helpers, the training runtime and the device cost estimates (stages.costs)
LAYERS = ("framework", "config", "sources", "common", "artifacts", "corpora", "evaluation", "training", "costs")
#: one package per study: its stages, tasks, recipes, helpers and artifact types (the report is one too)
STUDIES = ("nugget", "nugget2d", "restorable", "report")


@cache
def modules() -> dict[str, Path]:
    out = {}
    for top in TOP:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def package(module: str) -> str:
    """The package a module belongs to in the layering (e.g. ``stages.nugget2d``,
    ``nugget_core.nugget2d``, ``stages.registry``, ``pipelines``). A study's config sections
    (``stages.<study>.config``) sit in its folder but belong to the config layer: the schema
    places them at their paths, and every stage reads them (`study_config`)."""
    parts = module.split(".")
    if parts[0] == "pipelines":
        return "pipelines"
    if study_config(module):
        return "stages.config"
    if module == "nugget_core":
        return "nugget_core (api)"  # the facade re-exporting the subpackages; its own node
    if parts[0] == "nugget_core":
        sub = ".".join(parts[:2])
        return sub if len(parts) > 1 and (ROOT / "nugget_core" / parts[1]).is_dir() else "nugget_core"
    return ".".join(parts[:2]) if len(parts) > 1 else "stages"


@cache
def imports(module: str) -> frozenset[str]:
    """Every module (ours) or top-level package (third-party) ``module`` imports."""
    path = modules()[module]
    tree = ast.parse(path.read_text(), str(path))
    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in TOP:
                while name not in modules() and "." in name:
                    name = name.rsplit(".", 1)[0]
                found.add(name)
            else:
                found.add(name.split(".")[0])
    return frozenset(found)


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for m in modules():
        graph.setdefault(package(m), set()).update(
            package(t) for t in imports(m) if t.split(".")[0] in TOP and package(t) != package(m))
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def _classes(path: Path) -> list[ast.ClassDef]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)]


def _names_itself(cls: ast.ClassDef) -> bool:
    """The class body assigns ``name``: a concrete stage, not a shared base class."""
    targets = [t for n in cls.body if isinstance(n, ast.Assign) for t in n.targets]
    return any(isinstance(t, ast.Name) and t.id == "name"
               for t in targets + [e for t in targets if isinstance(t, ast.Tuple) for e in t.elts])


def _base_name(base: ast.expr) -> str | None:
    """A base class's name: ``Base``, ``module.Base``, or a generic one's, ``Base["Job"]``."""
    if isinstance(base, ast.Subscript):
        base = base.value
    return base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)


def stage_modules() -> set[str]:
    """Modules defining a concrete stage: a `Stage` subclass (directly or through a base
    class defined anywhere in the code base, e.g. `stages.nugget2d.nugget2d_stage`) that sets
    its ``name``. A module holding only a shared base class is not one: the stages built
    on it import it."""
    classes = {m: _classes(path) for m, path in modules().items() if m != "stages.framework.stage"}
    stages, grew = {"Stage"}, True
    while grew:  # bases defined in other modules: widen until no new subclass turns up
        found = {c.name for cs in classes.values() for c in cs if any(_base_name(b) in stages for b in c.bases)}
        grew = not found <= stages
        stages |= found
    return {m for m, cs in classes.items() if any(c.name in stages and _names_itself(c) for c in cs)}


def test_the_walk_sees_the_code_base():
    graph = package_graph()
    assert "stages.artifacts" in graph["stages.nugget2d"] and "stages.framework" in graph["stages.artifacts"]
    assert package("stages.nugget2d.lm.qa") == "stages.nugget2d"  # a study's subpackage is the study
    assert {"stages.nugget2d.build_lm", "stages.nugget2d.eval_qa", "stages.nugget2d.train_nugget2d_ae"} <= stage_modules()
    assert "stages.nugget2d.nugget2d_stage" not in stage_modules()  # a shared base class, no stage
    assert "stages.nugget2d.eval_qa" in imports("stages.registry")
    assert any("torch" in imports(m) for m in modules() if m.startswith("nugget_core."))


def test_no_cycle_between_packages():
    cycle = find_cycle(package_graph())
    if cycle:
        edges = [f"{m} imports {t}" for a, b in zip(cycle, cycle[1:], strict=False) for m in modules()
                 if package(m) == a for t in sorted(imports(m)) if t.split(".")[0] in TOP and package(t) == b]
        pytest.fail("import cycle between packages: " + " -> ".join(cycle) + "\n  " + "\n  ".join(edges))


def test_model_library_is_free_of_the_pipeline():
    bad = {(m, t) for m in modules() if m.split(".")[0] == "nugget_core" for t in imports(m)
           if t.split(".")[0] in ("stages", "pipelines", "ray", "mlflow")}
    assert not bad, f"nugget_core imports the pipeline, Ray or MLflow: {sorted(bad)}"


def study_config(module: str) -> bool:
    """``module`` is a study's (or the corpora layer's) config sections, ``stages.<x>.config``."""
    parts = module.split(".")
    return len(parts) == 3 and parts[0] == "stages" and parts[2] == "config" and parts[1] in STUDIES + ("corpora",)


def test_study_config_sections_import_only_the_config_layer():
    """A study's config module holds plain section dataclasses: it imports the config
    layer's helpers (`stages.config.validate`, `stages.config.job`) and nothing of a study,
    so the schema can import every study's sections without importing their code."""
    found = [m for m in modules() if study_config(m)]
    assert {"stages.nugget.config", "stages.nugget2d.config", "stages.restorable.config"} <= set(found)
    bad = {(m, t) for m in found for t in imports(m)
           if t.split(".")[0] in TOP and not (t.startswith("stages.config.") or t == "stages.config")}
    assert not bad, f"study config modules importing beyond the config layer: {sorted(bad)}"


def test_every_stages_package_is_a_layer_or_a_study():
    packages = {package(m) for m in modules() if m.startswith("stages.")} - {"stages", "stages.registry"}
    assert packages == {f"stages.{x}" for x in LAYERS + STUDIES}, "a new package under stages/: add it to LAYERS or STUDIES"


def test_shared_layers_import_no_study():
    lower = {f"stages.{x}" for x in LAYERS}
    upper = {f"stages.{s}" for s in STUDIES} | {"stages.registry", "pipelines"}
    bad = {(m, t) for m in modules() if package(m) in lower for t in imports(m) if package(t) in upper}
    assert not bad, f"a shared layer imports a study, the registry or the pipelines: {sorted(bad)}"


def artifact_types(module: str) -> bool:
    """``module`` holds a study's artifact types (``stages.<study>.artifacts[.x]``)."""
    return module.split(".")[2:3] == ["artifacts"]


def test_studies_meet_only_through_artifact_types():
    """A study's code (stages, tasks, recipes, helpers) is its own: another study (the report
    too) reads its outputs only through their types in ``stages.<study>.artifacts``, so a
    change to a study's code cannot break, or re-key, another study's stages."""
    studies = {f"stages.{s}" for s in STUDIES}
    bad = {(m, t) for m in modules() if package(m) in studies for t in imports(m)
           if package(t) in studies and package(t) != package(m) and not artifact_types(t)}
    assert not bad, f"one study imports another's code, not its artifact types: {sorted(bad)}"
    assert artifact_types("stages.nugget.artifacts.models") and artifact_types("stages.nugget2d.artifacts")
    assert not artifact_types("stages.nugget2d.eval_qa")


def test_artifact_types_import_no_study_code():
    """What other studies import of a study, its artifact types, imports none of its code
    (else reading a study's output would pull its stages into the reader's cache key)."""
    bad = {(m, t) for m in modules() if artifact_types(m) and m.startswith("stages.")
           for t in imports(m) if package(t) in {f"stages.{s}" for s in STUDIES} and not artifact_types(t)}
    assert not bad, f"artifact types importing study code: {sorted(bad)}"


def test_stage_modules_are_imported_only_by_the_registry():
    stage_mods = stage_modules()
    bad = {(m, t) for m in modules() if m != "stages.registry" for t in imports(m) if t in stage_mods and t != m}
    assert not bad, f"stage modules imported outside stages/registry.py: {sorted(bad)}"
