"""The stage graph: lookup, topological order, and the plan of one invocation.

A plan lists, in execution order, every stage needed for the requested targets with
its cache key and whether a completed output already exists (hit) or it must run
(miss / forced). Planning touches only the config, the artifact store and the stat (and,
for small files, the bytes) of the inputs stages read by path
(:mod:`stages.framework.external`): it needs no Ray and no MLflow, so ``--dry-run`` is
instant, and config errors and missing input paths surface first. Every declared input of
the planned stages is checked before the first key is computed, so a plan refused for
missing inputs names all of them, not the first one met.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from stages.config.schema import PipelineConfig
from stages.framework.code_pins import CodeChangeError, Pin, accept, load_pins
from stages.framework.external import MissingInput, missing_inputs
from stages.framework.keys import KeyParts, config_value, key_parts, stage_sections
from stages.framework.miss_reasons import explain_miss
from stages.framework.stage import Stage
from stages.framework.store import ArtifactStore


class DagError(ValueError):
    """The stage graph or a requested target is invalid."""


class MissingInputError(DagError):
    """Paths planned stages read (config fields they declare as external inputs) are not
    there: ``missing`` holds every one, the message a line each naming the field, the
    value and the stages that read it."""

    def __init__(self, missing: list[MissingInput]) -> None:
        self.missing = missing
        noun = "input is" if len(missing) == 1 else "inputs are"
        super().__init__(f"{len(missing)} {noun} missing:\n  " + "\n  ".join(m.line() for m in missing))


@dataclass(frozen=True)
class PlannedStage:
    stage: type[Stage]
    key: str
    upstream_keys: dict[str, str]
    hit: bool
    forced: bool
    why: str = ""  # why not a hit: "absent", or "damaged: ..." (`ArtifactStore.state`)
    parts: KeyParts | None = None  # what the key is made of (`stages.framework.keys`)
    reason: str = ""  # for an absent output: what differs from the closest earlier one (`miss_reasons`)
    pin: Pin | None = None  # the accepted code change the key was computed with (`code_pins`)
    new_pin: bool = False  # that pin is asked for by this invocation (`--accept-code-change`)

    @property
    def name(self) -> str:
        return self.stage.name

    @property
    def will_run(self) -> bool:
        return self.forced or not self.hit

    @property
    def status(self) -> str:
        return "forced" if self.forced else ("hit" if self.hit else "miss")


class Dag:
    """The stages and their edges. ``upstream`` (default: each class's own) is given where a
    config switched stages off (`for_config`), and ``off`` names those stages with their switch."""

    def __init__(self, stages: Sequence[type[Stage]], upstream: Mapping[str, tuple[str, ...]] | None = None,
                 off: Mapping[str, str] | None = None) -> None:
        self.stages = {s.name: s for s in stages}
        if len(self.stages) != len(stages):
            raise DagError("two stages share a name")
        self.upstream = {s.name: tuple((upstream or {}).get(s.name, s.upstream)) for s in stages}
        self.off = dict(off or {})
        for s in stages:
            for up in self.upstream[s.name]:
                if up not in self.stages:
                    raise DagError(f"stage {s.name!r} depends on unknown stage {up!r}")
        self.order = self._toposort()

    def for_config(self, cfg: PipelineConfig) -> Dag:
        """This DAG without the stages whose `Stage.switch` is false in ``cfg`` (itself when
        none is): a reader that takes one as an optional or collected input reads without it,
        so its key does not wait on an output that is never made; one that requires it is a
        `DagError` naming the switch."""
        off = {n: s.switch for n, s in self.stages.items() if s.switch and not config_value(cfg, s.switch)}
        if not off:
            return self
        for name, stage in self.stages.items():
            if name in off:
                continue
            # a stage with optional or collected inputs lists its required ones apart; else all are required
            required = stage.upstream if stage.optional_upstream is None else stage.required_upstream
            needed = [u for u in required if u in off]
            if needed:
                raise DagError(f"stage {name!r} requires {needed[0]!r}, which {off[needed[0]]}: false turns off; "
                               f"set {off[needed[0]]}=true")
        upstream = {n: tuple(u for u in ups if u not in off) for n, ups in self.upstream.items() if n not in off}
        return Dag([s for n, s in self.stages.items() if n not in off], upstream, {**self.off, **off})

    def _toposort(self) -> list[str]:
        order: list[str] = []
        state: dict[str, str] = {}

        def visit(name: str, path: tuple[str, ...]) -> None:
            if state.get(name) == "done":
                return
            if state.get(name) == "active":
                raise DagError(f"cycle in stage graph: {' -> '.join(path + (name,))}")
            state[name] = "active"
            for up in self.upstream[name]:
                visit(up, path + (name,))
            state[name] = "done"
            order.append(name)

        for name in sorted(self.stages):
            visit(name, ())
        return order

    def get(self, name: str) -> type[Stage]:
        if name in self.off:
            raise DagError(f"stage {name!r} is off in this config ({self.off[name]}: false); "
                           f"set {self.off[name]}=true to run it")
        if name not in self.stages:
            raise DagError(f"unknown stage {name!r}; stages are: {', '.join(self.order)}")
        return self.stages[name]

    def closure(self, targets: Iterable[str]) -> list[str]:
        """The targets and all their upstream stages, in execution order."""
        needed: set[str] = set()
        stack = list(targets)
        while stack:
            name = stack.pop()
            if name not in needed:
                needed.add(name)
                self.get(name)  # an unknown or switched-off name is an error
                stack.extend(self.upstream[name])
        return [n for n in self.order if n in needed]

    def missing_inputs(self, cfg: PipelineConfig, names: Iterable[str]) -> list[MissingInput]:
        """Every declared external input of stages ``names`` that cannot be read
        (`stages.framework.external.missing_inputs`)."""
        return missing_inputs((self.stages[n], stage_sections(self.stages[n], cfg)) for n in names)

    def plan(
        self,
        cfg: PipelineConfig,
        store: ArtifactStore,
        targets: Iterable[str] | None = None,
        force: Iterable[str] = (),
        accept_code_change: Iterable[str] = (),
    ) -> list[PlannedStage]:
        """The plan of ``targets`` (default: every stage) and their upstreams; raises
        `MissingInputError` naming every input of them that is not there. A stage named in
        ``accept_code_change`` keeps its latest output whose key differs in code alone
        (`stages.framework.code_pins`; `CodeChangeError` where there is none); the pins
        already in the store apply to the code versions they name."""
        names = self.closure(targets or self.order)
        missing = self.missing_inputs(cfg, names)
        if missing:
            raise MissingInputError(missing)
        unknown = sorted(set(accept_code_change) - set(names))
        if unknown:
            raise CodeChangeError(f"--accept-code-change names {', '.join(unknown)}, not in this plan "
                                  f"(stages: {', '.join(names)})")
        forced, accepting, pins = set(force), set(accept_code_change), load_pins(store)
        keys: dict[str, str] = {}
        planned: list[PlannedStage] = []
        for name in names:
            stage = self.stages[name]
            ups = {u: keys[u] for u in self.upstream[name]}
            parts = key_parts(stage, cfg, ups)
            pin, new_pin = pins.get(name), False
            if pin is not None and pin.code != parts.code:
                pin = None  # a pin holds for the code version it accepted, not a later edit
            if pin is not None:
                parts = replace(parts, code=pin.accepted_as)
            hit, why = store.state(name, parts.key())
            if name in accepting and pin is None and not hit:  # a hit has no code change to accept
                pin, new_pin = accept(parts, store), True
                if pin is None:
                    raise CodeChangeError(
                        f"--accept-code-change {name}: no complete output of {name} in {store.root_uri} differs "
                        f"from this one in its code alone ({explain_miss(parts, store.manifests(name))}); "
                        "run it, or accept a change only where config, upstream and environment are unchanged")
                parts = replace(parts, code=pin.accepted_as)
                hit, why = store.state(name, parts.key())
            keys[name] = parts.key()
            reason = "" if hit or why != "absent" else explain_miss(parts, store.manifests(name))
            planned.append(PlannedStage(stage, keys[name], ups, hit, name in forced, "" if hit else why,
                                        parts, reason, pin, new_pin))
        return planned


def critical_path(plan: Sequence[PlannedStage], seconds: Mapping[str, float] | None = None) -> dict[str, float]:
    """Per planned stage, the expected seconds of the longest path from its start to the
    end of the plan: its own duration (``seconds[name]``, e.g. measured by an earlier run,
    else `Stage.expected`; 0 for a hit) plus the longest path among the planned
    stages that read it. The executor starts ready stages in decreasing order of it, so
    the chain that bounds the run's wall time starts first. ``plan`` is in execution
    (topological) order."""
    seconds = seconds or {}
    readers: dict[str, list[str]] = {p.name: [] for p in plan}
    for p in plan:
        for up in p.upstream_keys:
            if up in readers:
                readers[up].append(p.name)
    path: dict[str, float] = {}
    for p in reversed(plan):
        own = float(seconds.get(p.name, p.stage.expected())) if p.will_run else 0.0
        path[p.name] = own + max((path[r] for r in readers[p.name]), default=0.0)
    return path
