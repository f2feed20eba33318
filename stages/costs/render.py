"""The cost plan as text: the device and the efficiency figures (each MEASURED with its
file, date and commit, or ASSUMED with why), one row per stage, the total, then what each
stage's figure counts."""

from __future__ import annotations

import textwrap

from stages.costs.efficiency import SCALING, Share
from stages.costs.estimate import CPU, NONE, Timed
from stages.costs.plan import CostPlan


def _num(x: float, unit: float = 1.0) -> str:
    return "-" if not x else f"{x / unit:.3g}"


def _hours(h: float) -> str:
    return f"{h:,.1f}" if h >= 0.05 else (f"{h:.2g}" if h else "0")


def _figure(name: str, value: float, label: str, basis: str) -> list[str]:
    return [f"  {name} = {value:.2f} {label}:",
            *textwrap.wrap(basis, 100, initial_indent="      ", subsequent_indent="      ",
                          break_long_words=False, break_on_hyphens=False)]


def _share(s: Share) -> list[str]:
    return _figure(s.figure, s.value, s.label, s.basis)


def _row(t: Timed) -> str:
    c = t.cost
    if c.kind == CPU:
        return f"  {c.name:22s} {'cpu':5s} {'-':>9s} {'-':>8s} {'~0':>10s} {'-':>5s} {'~0':>9s}  CPU: {c.notes[0]}"
    if c.kind == NONE or not c.work:
        return f"  {c.name:22s} {'-':5s} {'-':>9s} {'-':>8s} {'?':>10s} {'-':>5s} {'?':>9s}  not estimated: {c.missing}"
    flag = "  (partial: see below)" if c.missing else ""
    return (f"  {c.name:22s} {c.kind:5s} {_num(c.flops, 1e18):>9s} {_num(c.nbytes, 1e12):>8s} "
            f"{_hours(t.device_hours):>10s} {t.devices:>5d} {_hours(t.wall_hours):>9s}{flag}")


def _details(t: Timed) -> list[str]:
    c = t.cost
    if c.kind == CPU or not c.work:
        return []
    said = [f"configured on {c.configured}" if c.configured else "",
            f"uses {t.devices} of the GPUs given: {t.limit}" if t.limit else ""]
    lines = [f"  {c.name}:" + "".join(f" {p};" for p in said if p).rstrip(";")]
    lines += [f"    {w.what}: " + ", ".join(p for p in (
        f"{w.flops:.3g} FLOPs" if w.flops else "", f"{w.nbytes / 1e12:.3g} TB read" if w.nbytes else "") if p)
        for w in c.work]
    lines += [f"    ({n})" for n in c.notes]
    if c.missing and c.work:
        lines.append(f"    not estimated: {c.missing}")
    return lines


def render(plan: CostPlan) -> list[str]:
    """The plan's lines (no trailing newline on each)."""
    p, g = plan.peaks, plan.gpus
    out = [f"cost plan on {plan.device} ({p.peak_tflops:g} TFLOP/s dense bf16, {p.bandwidth_gbs:g} GB/s: "
           f"{p.source}), {g} GPU(s):",
           *_share(plan.train), *_share(plan.decode),
           *_figure("data-parallel scaling", plan.scaling, "ASSUMED", SCALING[1]),
           "",
           f"  {'stage':22s} {'kind':5s} {'EFLOP':>9s} {'TB read':>8s} {'GPU-h (1)':>10s} {'GPUs':>5s} "
           f"{'wall-h':>9s}"]
    out += [_row(t) for t in plan.stages]
    partial = [t.cost.name for t in plan.stages if t.cost.missing and t.cost.work]
    missing = [t.cost.name for t in plan.stages if t.cost.missing and not t.cost.work]
    out += ["", f"total ({len(plan.stages)} stages): {_hours(plan.device_hours)} GPU-hours of {plan.device}; "
                f"wall-clock on {g}: {_hours(plan.wall_hours)} h (stages one after another)",
            "  not estimated (left out of the total): " + (", ".join(missing) or "none"),
            "  estimated in part (the rest left out): " + (", ".join(partial) or "none"),
            "  upper bounds: every fit runs to max_steps (early stopping may end it sooner), texts at their "
            "length caps, generation to its token cap",
            "", "what each figure counts:"]
    for t in plan.stages:
        out += _details(t)
    return out
