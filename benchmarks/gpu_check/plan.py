"""The remote calls of a GPU check, exactly as the device tool takes them, and their limits.

Each call is one short shell line that runs `runner` for that call; its parts and their
limits live in `calls`. `plan_errors` checks the plan against the device's limits:
at most three calls, each command within 2,000 characters, at most 8 carried paths, each
timeout within the tool's 600 s, each call's parts within its budget, the whole within
25 minutes of device time with the machine's start, and (once packed) each carry with the
repository within 64 MiB.
"""

from __future__ import annotations

from benchmarks.gpu_check.limits import (
    BUDGET_S,
    CARRY_PATHS,
    COMMAND_CHARS,
    MACHINE_START_S,
    MAX_CALLS,
    MIB,
    TIMEOUT_S,
    TRANSFER_BYTES,
)
from benchmarks.gpu_check.pack import size_errors
from benchmarks.gpu_check.parts import Call


def command(call: Call) -> str:
    return f'PYTHONUNBUFFERED=1 python3 -m benchmarks.gpu_check run --call {call.number} --out "$OUT"'


def device_seconds(calls: tuple[Call, ...]) -> int:
    return MACHINE_START_S + sum(c.timeout_s for c in calls)


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
    if device_seconds(calls) > BUDGET_S:
        errors.append(f"device time {device_seconds(calls)} s (start included) > {BUDGET_S} s")
    if sizes:
        for call in calls:
            carried = {c: sizes["carry_bytes"].get(c.rsplit("/", 1)[-1], 0) for c in call.carry}
            together = {f"call {call.number} ({', '.join(carried)})": sum(carried.values())}
            errors += size_errors(sizes["repo_bytes"], together)
    return errors


def render(calls: tuple[Call, ...], sizes: dict | None = None) -> str:
    lines = [f"GPU check: {len(calls)} calls, device time <= {device_seconds(calls)} s "
             f"({device_seconds(calls) / 60:.1f} min: {MACHINE_START_S} s machine start + the calls' timeouts; "
             f"budget {BUDGET_S // 60} min).",
             "Issue them IMMEDIATELY one after another on the same warm machine (it is given back 30 s after a "
             "call): call N installs carry N into /tmp/site, which later calls use; a call that finds something "
             "missing records 'missing: X (call N not run?)' for the parts that need it and runs the rest.",
             "Then: python -m benchmarks.gpu_check collect <folder with the returned files>", ""]
    for call in calls:
        lines += [f"call {call.number}: {call.title}",
                  f"  command:   {command(call)}",
                  f"  carry:     {list(call.carry)}",
                  f"  timeout_s: {call.timeout_s}   (parts within {call.budget_s} s, the rest packs the results)"]
        if sizes:
            carried = sum(sizes["carry_bytes"].get(c.rsplit("/", 1)[-1], 0) for c in call.carry)
            lines.append(f"  transfer:  {(carried + sizes['repo_bytes']) / MIB:.1f} MiB of {TRANSFER_BYTES // MIB} "
                         f"(carry {carried / MIB:.1f} + repository {sizes['repo_bytes'] / MIB:.1f})")
        for p in call.parts:
            how = "background" if p.background else f"after {', '.join(p.after)}" if p.after else ""
            lines.append(f"    - {p.name:<17} {p.seconds:>4} s {('[' + how + ']') if how else ''} {p.what}")
        lines += [f"  returns:   call{call.number}-results.tar.gz, call{call.number}-summary.md", ""]
    if not sizes:
        lines.append("not packed yet: run `make gpu-check-pack` (python -m benchmarks.gpu_check pack) "
                     "to build the carries and check their sizes")
    errors = plan_errors(calls, sizes)
    lines += [f"PLAN ERROR: {e}" for e in errors] or ["every limit of the device is kept"]
    return "\n".join(lines)
