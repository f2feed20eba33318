"""Why a stage misses the cache: its key parts against the outputs already in the store.

Every published output records the parts of its key (``key_parts`` in its manifest,
:class:`stages.framework.keys.KeyParts`). For a miss, the planner compares the new parts with
each earlier output of the same stage and names the differences of the closest one (fewest
differing parts; the latest among equals):

    code changed (1:3f0c.. -> 1:9ab2..); config changed: nugget.ratio 0.25 -> 0.1
    upstream changed: build_pi; environment changed: transformers 5.22.0 -> 5.23.0

so ``--dry-run`` tells a user what a rerun would recompute and why before it costs anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stages.config.rehearsal import flatten
from stages.framework.keys import KeyParts

SHOWN = 3  # changed config keys / libraries named before "+N more"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _changes(old: dict[str, Any], new: dict[str, Any], arrow: bool = True) -> str:
    names = sorted(k for k in set(old) | set(new) if old.get(k, "absent") != new.get(k, "absent"))
    shown = [f"{k} {_short(old.get(k, 'absent'))} -> {_short(new.get(k, 'absent'))}" if arrow else k
             for k in names[:SHOWN]]
    more = f" (+{len(names) - SHOWN} more)" if len(names) > SHOWN else ""
    return ", ".join(shown) + more


def differences(parts: KeyParts, recorded: dict[str, Any]) -> list[str]:
    """How ``parts`` differ from an earlier output's recorded parts, one phrase per part."""
    new = parts.record()
    found = []
    if recorded.get("code") != new["code"]:
        found.append(f"code changed ({recorded.get('code')} -> {new['code']})")
    if recorded.get("framework") != new["framework"]:
        found.append(f"framework output version changed ({recorded.get('framework')} -> {new['framework']})")
    if recorded.get("config") != new["config"]:
        found.append("config changed: " + _changes(flatten(recorded.get("config") or {}), flatten(new["config"])))
    if recorded.get("upstream") != new["upstream"]:
        found.append("upstream changed: " + _changes(recorded.get("upstream") or {}, new["upstream"], arrow=False))
    if (recorded.get("external") or {}) != new["external"]:
        found.append("inputs read by path changed: "
                     + _changes(recorded.get("external") or {}, new["external"], arrow=False))
    if recorded.get("environment") != new["environment"]:
        found.append("environment changed: " + _changes(recorded.get("environment") or {}, new["environment"]))
    return found


def explain_miss(parts: KeyParts, manifests: Iterable[dict[str, Any]]) -> str:
    """Why no output of ``parts.stage`` in the store has these parts (see the module
    docstring); empty when the store holds none of that stage (nothing to compare)."""
    earlier = list(manifests)
    if not earlier:
        return ""
    recorded = [m for m in earlier if isinstance(m.get("key_parts"), dict)]
    if not recorded:
        return f"{len(earlier)} earlier output(s), made before outputs recorded their key parts"
    latest_first = sorted(recorded, key=lambda m: str(m.get("finished_at", "")), reverse=True)
    closest = min(latest_first, key=lambda m: len(differences(parts, m["key_parts"])))  # min keeps the first
    found = differences(parts, closest["key_parts"])
    if not found:  # same parts, so the same key: its folder never completed
        return "an earlier attempt with this key did not complete"
    return "; ".join(found) + f" (vs key {closest.get('key')})"

