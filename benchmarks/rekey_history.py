"""How often a commit re-keys stages: the old code identity against the new, replayed over history.

    python benchmarks/rekey_history.py                     # the 60 first-parent commits ending at DEFAULT_END
    python benchmarks/rekey_history.py --count 100         # the 100 ending there
    python benchmarks/rekey_history.py --range A..B        # the first-parent commits of A..B

For each commit C and its first parent P, both trees are extracted (``git archive``, only
the in-repo packages) and every stage registered in each tree's ``stages/registry.py`` gets
a code digest under three schemes:

- ``old``: sha256 over (relative path, bytes) of every file of the stage module's import
  closure, ``stages/framework/`` included (the identity up to `DEFAULT_END`);
- ``new``: :mod:`stages.framework.code_identity`'s normalised digest (the AST without
  docstrings; comments never reach it) over the closure without the framework's plumbing
  (:data:`stages.framework.provenance.PLUMBING_PACKAGES`);
- ``new_metadata_out``: as ``new``, also without class-body assignments to the scheduling
  metadata (``expected_seconds``, ``description``, ``run_name_keys``), which now live in
  ``stages/stage_table.json``: what ``new`` would have said had the table existed then.

A stage (module and class name) is re-keyed by C under a scheme when its digest differs
between P and C, or when it is registered in only one of them; C then recomputes those
stages and every stage downstream of them in C's DAG (their upstream keys changed). Nothing
of an old tree is imported (its registry and stage classes are read with ``ast``:
:mod:`benchmarks.registry_reader`), so no tree's torch imports run. Identical blobs are
normalised once. Writes ``benchmarks/results/rekey_history.json`` and prints a summary table.

What the replay cannot say: the one-stage-per-module split of the Nugget2D stages happened
only after this history, so the four Nugget2D training stages of one module re-key together
in every tree here; the versions of the third-party libraries a closure imports (keyed now)
are not part of this measurement; config edits (``conf/``) re-key through the stages'
config sections, not their code, and are not counted.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: the library below is this checkout's

from benchmarks.registry_reader import StageNode, downstream, stage_graph  # noqa: E402
from stages.framework import code_identity, provenance  # noqa: E402

OUT = REPO / "benchmarks" / "results" / "rekey_history.json"
DEFAULT_END = "da3ece1"  # the last commit under the old identity
DEFAULT_COUNT = 60
SCHEMES = ("old", "new", "new_metadata_out")
SCHEDULING_METADATA = frozenset({"expected_seconds", "description", "run_name_keys"})
EXAMPLES = {"5efbdd7": "a comment in retrieval_task.py", "67ff243": "expected_seconds in 30 stage modules"}


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str
    subject: str


@dataclass
class BlobDigests:
    """Per-blob digests, so that a file unchanged between trees is normalised once."""

    new: dict[str, str] = field(default_factory=dict)
    metadata_out: dict[str, str] = field(default_factory=dict)


# --- git ------------------------------------------------------------------------------

def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def commits(repo: Path, revision_range: str | None, end: str, count: int) -> list[Commit]:
    """Oldest first: the first-parent commits of ``revision_range``, or the ``count`` ending
    at ``end``; each with its first parent (a root commit has none and is refused)."""
    spec = [revision_range] if revision_range else ["-n", str(count), end]
    shas = git(repo, "rev-list", "--first-parent", "--reverse", *spec).split()
    if not shas:
        raise SystemExit(f"no commits in {revision_range or end!r}")
    out = []
    for sha in shas:
        parents, _, subject = git(repo, "log", "-1", "--format=%P%x00%s", sha).rstrip("\n").partition("\0")
        if not parents:
            raise SystemExit(f"{sha[:7]} is a root commit: it has no parent to compare with")
        out.append(Commit(sha, parents.split()[0], subject))
    return out


def tree_blobs(repo: Path, sha: str) -> dict[str, str]:
    """``{relative path: blob id}`` of the in-repo packages' files at ``sha``."""
    blobs = {}
    for line in git(repo, "ls-tree", "-r", sha, "--", *provenance.IN_REPO_PACKAGES).splitlines():
        meta, _, path = line.partition("\t")
        if meta.split()[1] == "blob":
            blobs[path] = meta.split()[2]
    return blobs


def extract(repo: Path, sha: str, dest: Path) -> None:
    """The in-repo packages of ``sha`` under ``dest`` (``git archive`` piped into ``tar``)."""
    present = [p for p in provenance.IN_REPO_PACKAGES if git(repo, "ls-tree", sha, "--", p).strip()]
    dest.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(repo), "archive", sha, "--", *present], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise RuntimeError(f"git archive {sha} failed")


# --- a tree's stages and closures -----------------------------------------------------

def clear_closure_caches() -> None:
    """Empty provenance's per-process caches: they are keyed on the root only, and both the
    plumbing setting and the files under a reused root change between calls here."""
    for cached in (provenance._closure, provenance._third_party, provenance._file_imports,
                   provenance._lazy_exports):
        cached.cache_clear()


@contextmanager
def framework_in_closures() -> Iterator[None]:
    """Closures as the old identity computed them: ``stages.framework`` followed and hashed
    like any module (``PLUMBING_PACKAGES = ()``), restored on exit."""
    saved = provenance.PLUMBING_PACKAGES
    provenance.PLUMBING_PACKAGES = ()
    clear_closure_caches()
    try:
        yield
    finally:
        provenance.PLUMBING_PACKAGES = saved
        clear_closure_caches()


class _DropSchedulingMetadata(ast.NodeTransformer):
    """Class-body assignments to the scheduling metadata removed (the stage table's fields)."""

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        kept = [s for s in node.body if not _assigns_metadata(s)]
        node.body = kept or [ast.Pass()]
        return self.generic_visit(node)  # type: ignore[return-value]


def _assigns_metadata(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign):
        targets = [stmt.target]
    else:
        return False
    return all(isinstance(t, ast.Name) and t.id in SCHEDULING_METADATA for t in targets)


def without_scheduling_metadata(source: str, filename: str = "<source>") -> str:
    """``source`` with class-body assignments to ``expected_seconds`` / ``description`` /
    ``run_name_keys`` removed (regenerated from the tree: comments are lost, which the
    normalised identity ignores anyway)."""
    tree = _DropSchedulingMetadata().visit(ast.parse(source, filename=filename))
    return ast.unparse(ast.fix_missing_locations(tree))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _normalised_digests(tree: Path, rel: str, blob: str, cache: BlobDigests) -> tuple[str, str]:
    if blob not in cache.new:
        source = (tree / rel).read_text(encoding="utf-8")
        cache.new[blob] = _sha(code_identity.normalised_source(source, rel))
        cache.metadata_out[blob] = _sha(code_identity.normalised_source(without_scheduling_metadata(source, rel), rel))
    return cache.new[blob], cache.metadata_out[blob]


def old_digest(tree: Path, files: list[Path]) -> str:
    """The old identity: sha256 over (relative path, size, bytes) of each closure file."""
    digest = hashlib.sha256()
    for rel in files:
        data = (tree / rel).read_bytes()
        digest.update(f"{rel.as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def new_digests(tree: Path, files: list[Path], blobs: dict[str, str], cache: BlobDigests) -> tuple[str, str]:
    """The new identity (``code_identity``'s closure digest formula), and the same with the
    scheduling metadata out."""
    new, metadata_out = hashlib.sha256(), hashlib.sha256()
    for rel in files:
        name = rel.as_posix()
        file_new, file_meta = _normalised_digests(tree, name, blobs[name], cache)
        new.update(f"{name}\0{file_new}\0".encode())
        metadata_out.update(f"{name}\0{file_meta}\0".encode())
    return new.hexdigest(), metadata_out.hexdigest()


@dataclass
class TreeStages:
    """A tree's stage DAG and, per scheme, ``{"module:Class": code digest}``."""

    graph: list[StageNode]
    digests: dict[str, dict[str, str]]


def tree_digests(tree: Path, blobs: dict[str, str], cache: BlobDigests) -> TreeStages:
    """Every registered stage of ``tree``: its place in the DAG and its digest per scheme."""
    graph = stage_graph(tree)
    modules = sorted({n.module for n in graph})
    clear_closure_caches()
    per_module: dict[str, dict[str, str]] = {s: {} for s in SCHEMES}
    for module in modules:
        files = provenance.closure_files(module, tree)
        per_module["new"][module], per_module["new_metadata_out"][module] = new_digests(tree, files, blobs, cache)
    with framework_in_closures():
        for module in modules:
            per_module["old"][module] = old_digest(tree, provenance.closure_files(module, tree))
    return TreeStages(graph, {s: {n.id: per_module[s][n.module] for n in graph} for s in SCHEMES})


# --- the replay -----------------------------------------------------------------------

def rekeyed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Stages whose digest moved, or that are registered on one side only."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def replay(repo: Path, history: list[Commit], work: Path) -> list[dict[str, Any]]:
    """One row per commit: under each scheme, the stages it re-keys, and how many stages
    that recomputes (those and every stage downstream of them in the commit's DAG, re-keyed
    through their upstream keys)."""
    cache = BlobDigests()
    digests: dict[str, TreeStages] = {}

    def of(sha: str) -> TreeStages:
        if sha not in digests:
            tree = work / sha
            extract(repo, sha, tree)
            digests[sha] = tree_digests(tree, tree_blobs(repo, sha), cache)
            subprocess.run(["rm", "-rf", str(tree)], check=True)
        return digests[sha]

    rows = []
    for commit in history:
        before, after = of(commit.parent), of(commit.sha)
        stages = sorted(before.digests["old"].keys() | after.digests["old"].keys())
        row: dict[str, Any] = {"sha": commit.sha[:7], "parent": commit.parent[:7], "subject": commit.subject,
                               "stages": len(stages), "modules": len({s.split(":")[0] for s in stages})}
        for scheme in SCHEMES:
            moved = rekeyed(before.digests[scheme], after.digests[scheme])
            recomputed = downstream(after.graph, set(moved))
            row[scheme] = {"rekeyed": moved, "count": len(moved),
                           "modules": len({s.split(":")[0] for s in moved}), "all": len(moved) == len(stages),
                           "recomputed": len(recomputed), "recomputed_all": len(recomputed) == len(stages)}
        rows.append(row)
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {scheme: {"commits": len(rows),
                     "rekey_at_least_one": sum(r[scheme]["count"] > 0 for r in rows),
                     "rekey_all": sum(r[scheme]["all"] for r in rows),
                     "stage_rekeys": sum(r[scheme]["count"] for r in rows),
                     "recompute_all": sum(r[scheme]["recomputed_all"] for r in rows),
                     "stages_recomputed": sum(r[scheme]["recomputed"] for r in rows)}
            for scheme in SCHEMES}


def table(rows: list[dict[str, Any]], summary: dict[str, dict[str, Any]]) -> str:
    lines = ["| scheme | commits | re-key >= 1 stage | re-key all stages | stage re-keys | "
             "recompute all stages | stages recomputed |", "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {s} | {v['commits']} | {v['rekey_at_least_one']} | {v['rekey_all']} | {v['stage_rekeys']} | "
              f"{v['recompute_all']} | {v['stages_recomputed']} |" for s, v in summary.items()]
    for row in rows:
        if row["sha"] in EXAMPLES:
            counts = ", ".join(f"{s} {row[s]['count']} re-keyed / {row[s]['recomputed']} recomputed"
                               for s in SCHEMES)
            lines.append(f"\n{row['sha']} ({EXAMPLES[row['sha']]}, {row['stages']} stages): {counts}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--range", dest="revision_range", help="A..B: its first-parent commits")
    ap.add_argument("--end", default=DEFAULT_END, help="without --range: the last commit replayed")
    ap.add_argument("--count", type=int, default=DEFAULT_COUNT, help="without --range: how many commits")
    ap.add_argument("--repo", type=Path, default=REPO)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    history = commits(args.repo, args.revision_range, args.end, args.count)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rekey-history-") as work:
        rows = replay(args.repo, history, Path(work))
    summary = summarise(rows)
    result = {"command": " ".join(["python benchmarks/rekey_history.py", *(argv if argv is not None else sys.argv[1:])]),
              "range": args.revision_range or f"{args.count} first-parent commits ending at {args.end}",
              "python": platform.python_version(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
              "seconds": round(time.perf_counter() - start, 1),
              "summary": summary, "commits": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(rows, summary))
    print(f"\n{len(rows)} commits in {result['seconds']} s -> {args.out}")


if __name__ == "__main__":
    main()
