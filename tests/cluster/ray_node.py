"""``ray start`` for a node that joins a head on 127.0.0.1 (``python -m tests.cluster.ray_node
start --address 127.0.0.1:PORT ...``).

With ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` Ray keeps every address on loopback (its
``get_node_ip_address`` answers 127.0.0.1), but ``ray start --address`` then refuses to
join ("Multi-node Ray clusters are not supported on Windows and OSX"). With the variable
at 1 it joins, but rewrites the head's 127.0.0.1 into this machine's outward address
(where the GCS does not listen) and reports that address as the node's own, ignoring
``--node-ip-address=127.0.0.1`` (measured with Ray 2.60). So this launcher keeps the
variable at 0 and lifts only the CLI's refusal: ``ray start``'s own module sees
``ENABLE_RAY_CLUSTER`` true, every other module sees the loopback setting.
"""

from __future__ import annotations

import types

import ray._private.ray_constants as ray_constants
import ray.scripts.scripts as scripts


def main() -> None:
    view = types.ModuleType("ray_constants_for_ray_start")
    view.__dict__.update(vars(ray_constants))
    view.ENABLE_RAY_CLUSTER = True  # read only by the join check of `ray start`
    scripts.ray_constants = view
    scripts.main()


if __name__ == "__main__":
    main()
