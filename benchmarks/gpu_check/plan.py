"""The remote calls of a lent GPU window, exactly as the device tool takes them, checked
against its limits (`limits`, the one place they are written).

`plan_errors`: at most `MAX_CALLS` calls, each command within 2,000 characters, at most 8
carried paths, each timeout within the tool's 600 s, each call's parts within its budget,
the whole within `PLAN_BUDGET_S` of device time counting the machine's start, each call's
transfers and the idle wait after the last, and (once packed) each carry with the
repository within 64 MiB.
"""

from __future__ import annotations

from benchmarks.gpu_check.calls import OWN_MACHINE
from benchmarks.gpu_check.limits import (
    CARRY_PATHS,
    COMMAND_CHARS,
    IDLE_AFTER_S,
    LENT_S,
    MACHINE_START_S,
    MAX_CALLS,
    MIB,
    PLAN_BUDGET_S,
    TIMEOUT_S,
    TRANSFER_BYTES,
    TRANSFER_S,
    WARM_S,
)
from benchmarks.gpu_check.pack import size_errors
from benchmarks.gpu_check.parts import Call
from benchmarks.gpu_check.rotation import Rotation


def command(call: Call) -> str:
    return f'PYTHONUNBUFFERED=1 python3 -m benchmarks.gpu_check run --call {call.number} --out "$OUT"'


def device_seconds(calls: tuple[Call, ...]) -> int:
    """The most device time the plan spends: one start, each call's timeout and transfers,
    and the warm wait after the last call (counted: a give_back may come late)."""
    return MACHINE_START_S + sum(c.timeout_s + TRANSFER_S for c in calls) + IDLE_AFTER_S


def carried_bytes(call: Call, sizes: dict) -> int:
    return sum(sizes["carry_bytes"].get(c.rsplit("/", 1)[-1], 0) for c in call.carry)


def plan_errors(calls: tuple[Call, ...], sizes: dict | None = None) -> list[str]:
    errors = []
    if len(calls) > MAX_CALLS:
        errors.append(f"{len(calls)} calls > {MAX_CALLS}")
    for call in calls:
        where = f"call {call.number}"
        if len(command(call)) > COMMAND_CHARS:
            errors.append(f"{where}: command of {len(command(call))} characters > {COMMAND_CHARS}")
        if len(call.carry) > CARRY_PATHS:
            errors.append(f"{where}: {len(call.carry)} carried paths > {CARRY_PATHS}")
        if not 1 <= call.timeout_s <= TIMEOUT_S:
            errors.append(f"{where}: timeout_s {call.timeout_s} outside 1..{TIMEOUT_S}")
        serial = sum(p.seconds for p in call.parts if not p.background)
        if serial > call.budget_s:
            errors.append(f"{where}: its parts' limits add up to {serial} s > its budget of {call.budget_s} s")
        errors += [f"{where}: background part {p.name} limit {p.seconds} s > the call's budget of {call.budget_s} s"
                   for p in call.parts if p.background and p.seconds > call.budget_s]
    if device_seconds(calls) > PLAN_BUDGET_S:
        errors.append(f"device time {device_seconds(calls)} s (start, transfers and idle wait included) > "
                      f"{PLAN_BUDGET_S} s")
    if sizes:
        for call in calls:
            together = {f"call {call.number} ({', '.join(call.carry)})": carried_bytes(call, sizes)}
            errors += size_errors(sizes["repo_bytes"], together)
    return errors


def render(calls: tuple[Call, ...], rotation: Rotation, sizes: dict | None = None) -> str:
    spent = device_seconds(calls)
    lines = [f"GPU window: {len(calls)} calls, device time <= {spent} s ({spent / 60:.1f} min) of the plan's "
             f"{PLAN_BUDGET_S // 60} (the lent {LENT_S // 60} less 2 in hand): {MACHINE_START_S} s start + "
             f"the calls' timeouts {' + '.join(str(c.timeout_s) for c in calls)} s + {TRANSFER_S} s transfers per "
             f"call + {IDLE_AFTER_S} s warm after the last.",
             f"Issue the calls IMMEDIATELY one after another (within {WARM_S} s: the machine is given back "
             "after that, with /tmp): call 1 leaves half of SmolLM2 and the burst's data in /tmp for call 2. "
             "Call give_back right after call 2. A call that finds something missing records "
             "'missing: X (call N not run?)' for the parts that need it and runs the rest.",
             "Then: python -m benchmarks.gpu_check collect <folder with the returned files>", ""]
    for call in calls:
        lines += [f"call {call.number}: {call.title}",
                  f"  command:   {command(call)}",
                  f"  carry:     {list(call.carry)}",
                  f"  timeout_s: {call.timeout_s}   (parts within {call.budget_s} s, the rest packs the results)"]
        if sizes:
            carried = carried_bytes(call, sizes)
            lines.append(f"  transfer:  {(carried + sizes['repo_bytes']) / MIB:.1f} MiB of {TRANSFER_BYTES // MIB} "
                         f"(carry {carried / MIB:.1f} + repository {sizes['repo_bytes'] / MIB:.1f})")
        for p in call.parts:
            how = "background" if p.background else ""
            lines.append(f"    - {p.name:<19} {p.seconds:>4} s {('[' + how + ']') if how else ''} {p.what}")
        lines += [f"  returns:   call{call.number}-results.tar.gz, call{call.number}-summary.md", ""]
    lines += rotation.lines() + [""]
    lines.append("not in a lent window (the pipeline's wheels, ~92 MiB, do not fit beside the headline): "
                 + ", ".join(p.name for p in OWN_MACHINE.parts) + ": `make gpu-check` on a CUDA machine with the "
                 "project installed (docs/gpu.md)")
    if not sizes:
        lines.append("not packed yet: run `make gpu-check-pack` (python -m benchmarks.gpu_check pack) "
                     "to build the carries and check their sizes")
    errors = plan_errors(calls, sizes)
    lines += [f"PLAN ERROR: {e}" for e in errors] or ["every limit of the device is kept"]
    return "\n".join(lines)
