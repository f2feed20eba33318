"""The generated parts of the docs: the stage table and the DAG diagram of
docs/architecture.md, made from the registry (`stages.registry.DAG`: names, ``upstream``)
and the stage table (``describe()``), so they cannot drift from the code.

Each block sits between marker comments in a page::

    <!-- generated: nugget list --markdown (stages) -->
    ...
    <!-- end generated -->

``nugget list --markdown`` prints the blocks, ``nugget list --markdown --write`` (or
``make docs``) rewrites them in place, and ``tests/framework/test_generated_docs.py``
fails when a page's block differs from what the registry gives now.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from stages.artifacts.catalog import output_of
from stages.framework.dag import Dag
from stages.framework.stage import Stage

ROOT = Path(__file__).resolve().parents[1]
FIX_COMMAND = "nugget list --markdown --write"
#: a stage's group is its study, the package under ``stages`` it is defined in; the order
#: is the order of the table
GROUPS = {"corpora": "corpora", "nugget": "Nugget", "nugget2d": "Nugget2D", "restorable": "restorable embeddings",
          "report": "report"}
#: the pages holding generated blocks, and which blocks each holds
PAGES: dict[str, tuple[str, ...]] = {"docs/architecture.md": ("stages", "dag")}
END = "<!-- end generated -->"
BLOCK = re.compile(r"<!-- generated: nugget list --markdown \((?P<name>[a-z]+)\) -->\n(?P<body>.*?)"
                   + re.escape(END), re.DOTALL)


class DocsError(ValueError):
    """A page lacks a block it should hold, or holds an unknown or unterminated one."""


def group_of(stage: type[Stage]) -> str:
    """The study of ``stage``, from its package (``stages.nugget2d.x`` -> Nugget2D)."""
    parts = stage.__module__.split(".")
    if len(parts) < 3 or parts[0] != "stages" or parts[1] not in GROUPS:
        raise DocsError(f"stage {stage.name!r} is defined in {stage.__module__}, outside the study packages "
                        f"stages.{{{','.join(GROUPS)}}}: its study is its package")
    return GROUPS[parts[1]]


def by_group(dag: Dag) -> list[tuple[str, list[type[Stage]]]]:
    """The groups in table order, each with its stages in execution order."""
    stages = [dag.stages[name] for name in dag.order]
    return [(group, [s for s in stages if group_of(s) == group]) for group in GROUPS.values()]


def optional_reads(stage: type[Stage]) -> tuple[str, ...]:
    """The upstream stages ``stage`` reads only because they are registered
    (`stages.framework.optional`): its optional inputs and the ones its collected field gathers
    (every upstream but the required ones, for a stage that has either)."""
    if getattr(stage, "optional_upstream", None) is None:
        return ()
    required = set(getattr(stage, "required_upstream", ()))
    return tuple(n for n in stage.upstream if n not in required)


def _names(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def stage_table(dag: Dag) -> str:
    """One row per stage: group, what it reads, its output contract, its description."""
    rows = ["| stage | group | reads (upstream) | output | description |", "|---|---|---|---|---|"]
    for group, stages in by_group(dag):
        for s in stages:
            optional = optional_reads(s)
            required = tuple(n for n in s.upstream if n not in optional)
            reads = _names(required) or "-"
            if optional:
                reads += f"; optional: {_names(optional)}"
            output = output_of(s)
            output = f"`{output}`" if output.isidentifier() else output
            rows.append(f"| `{s.name}` | {group} | {reads} | {_cell(output)} | {_cell(s.describe())} |")
    return "\n".join(rows)


def dag_diagram(dag: Dag) -> str:
    """A mermaid flowchart: one box per group, an arrow per required read."""
    lines = ["```mermaid", "flowchart LR"]
    for group, stages in by_group(dag):
        # the box's id differs from every stage name (the report group holds `report`) and is
        # one word (mermaid ids take no spaces; the label may)
        lines.append(f"  subgraph group_{re.sub(r'[^A-Za-z0-9_]', '_', group)} [{group}]")
        lines += [f"    {s.name}" for s in stages]
        lines.append("  end")
    for name in dag.order:
        stage = dag.stages[name]
        lines += [f"  {up} --> {name}" for up in stage.upstream if up not in optional_reads(stage)]
    lines.append("```")
    optional = sum(len(optional_reads(dag.stages[n])) for n in dag.order)
    lines.append("")
    lines.append(f"{len(dag.order)} stages. Not drawn: the {optional} optional reads (read because the "
                 "producing stage is registered), listed in the stage table's reads column.")
    return "\n".join(lines)


GENERATORS: dict[str, Callable[[Dag], str]] = {"stages": stage_table, "dag": dag_diagram}


def blocks(dag: Dag) -> dict[str, str]:
    """Every generated block by name."""
    return {name: make(dag) for name, make in GENERATORS.items()}


def start_marker(name: str) -> str:
    return f"<!-- generated: nugget list --markdown ({name}) -->"


def markdown(dag: Dag) -> str:
    """All blocks, each between its markers, as ``nugget list --markdown`` prints them."""
    return "\n\n".join(f"{start_marker(name)}\n{body}\n{END}" for name, body in blocks(dag).items())


def found_blocks(text: str, page: str) -> dict[str, str]:
    """The blocks of a page by name (their text between the markers, without the final newline)."""
    found: dict[str, str] = {}
    for match in BLOCK.finditer(text):
        name = match["name"]
        if name not in GENERATORS:
            raise DocsError(f"{page}: unknown generated block {name!r} (blocks: {', '.join(GENERATORS)})")
        if name in found:
            raise DocsError(f"{page}: generated block {name!r} appears twice")
        found[name] = match["body"].removesuffix("\n")
    starts = text.count("<!-- generated: nugget list --markdown (")
    if starts != len(found):
        raise DocsError(f"{page}: {starts} start markers but {len(found)} blocks ending in {END}")
    return found


def rewrite(text: str, page: str, made: dict[str, str]) -> str:
    """``text`` with each block it holds replaced by ``made``'s; it must hold `PAGES`' blocks."""
    missing = [name for name in PAGES.get(page, ()) if name not in found_blocks(text, page)]
    if missing:
        raise DocsError(f"{page}: no generated block {missing}: add the lines {start_marker(missing[0])} "
                        f"and {END} where it goes")
    return BLOCK.sub(lambda m: f"{start_marker(m['name'])}\n{made[m['name']]}\n{END}", text)


def stale(dag: Dag, root: Path = ROOT) -> list[str]:
    """Each block of a page of `PAGES` under ``root`` that differs from what ``dag`` gives
    now (or is missing), as ``page: block (first differing line)``; empty when all match."""
    made = blocks(dag)
    problems = []
    for page, names in PAGES.items():
        try:
            found = found_blocks((root / page).read_text(encoding="utf-8"), page)
        except DocsError as exc:
            problems.append(str(exc))
            continue
        for name in names:
            if name not in found:
                problems.append(f"{page}: no generated block {name!r}")
            elif found[name] != made[name]:
                old, new = found[name].splitlines(), made[name].splitlines()
                line = next((f"{a!r} -> {b!r}" for a, b in zip(old, new, strict=False) if a != b), f"{len(old)} -> {len(new)} lines")
                problems.append(f"{page}: block {name!r} is stale, first difference {line}")
    return problems


def write_pages(dag: Dag, root: Path = ROOT) -> list[str]:
    """Rewrite the blocks of every page of `PAGES` under ``root``; the pages changed."""
    made = blocks(dag)
    changed = []
    for page in PAGES:
        path = root / page
        old = path.read_text(encoding="utf-8")
        new = rewrite(old, page, made)
        if new != old:
            path.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed
