"""The training-free KV presses as evaluation systems (`nugget_core.nugget2d.presses`):
their settings from ``eval.presses`` and the table note that says what they are."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stages.nugget2d.config import PRESS_SYSTEMS, PressSection

if TYPE_CHECKING:
    from nugget_core.nugget2d import PressConfig


def press_config(section: PressSection) -> PressConfig:
    """`PressConfig` of the ``eval.presses`` config section."""
    from nugget_core.nugget2d.presses import PressConfig

    return PressConfig(sink_tokens=section.sink_tokens, window=section.snapkv_window, kernel=section.snapkv_kernel)


def press_notes(section: PressSection, systems: list[str], budget: str) -> list[str]:
    """The note of an evaluation table with press rows (none when it has none)."""
    what = {
        "streaming_llm": f"StreamingLLM the first {section.sink_tokens} tokens (sinks) and the most recent",
        "snapkv": f"SnapKV what the last {section.snapkv_window} document tokens attend to most (pooling "
                  f"{section.snapkv_kernel}), that window first",
        "key_norm": "key_norm the keys of smallest L2 norm",
    }
    used = [s for s in systems if s in PRESS_SYSTEMS]
    if not used:
        return []
    return [f"{' / '.join(used)}: training-free KV presses of the base LM (no adapter, no training), keeping per "
            f"layer and KV head {budget}: " + "; ".join(what[s] for s in used)
            + ". Query-agnostic, like Nugget2D's compressor (a prompt is read after compression)."]
