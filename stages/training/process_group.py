"""The torch process group of every fit, with each listener it opens bound to the Ray node's
own address (127.0.0.1 on the local private Ray), never to all interfaces.

Ray Train's stock setup (2.60, ``_TorchBackend.on_start``) sets MASTER_ADDR / MASTER_PORT
and calls ``init_process_group("env://")``. Rank 0's torch ``TCPStore`` then listens on
``*:<port>`` (the libuv server binds ``::``), unauthenticated: anyone reaching any address
of the host could read and write the rendezvous store or hang the fit. torch has no
bind-address setting, but a ``TCPStore`` master accepts a listening socket
(``master_listen_fd``), so here rank 0 binds one to its node address and every rank builds
the store itself and hands it to ``init_process_group(store=...)``.

Gloo's and NCCL's own sockets bind to the interface ``GLOO_SOCKET_IFNAME`` /
``NCCL_SOCKET_IFNAME`` names; without it Gloo takes the address the hostname resolves to and
NCCL the first non-loopback interface. Each worker sets both, unless they are already set,
to the interface holding its node's Ray address (`interface_of`).

The hook: ``TorchConfig`` (Ray's public, stable config class) whose ``backend_cls``
(``BackendConfig``'s documented extension point) is a subclass of Ray's ``_TorchBackend``
that replaces only ``on_start`` (its shutdown and per-run env setup stay Ray's). Ray Train
2.60 has no setting for the address its process group listens on; the test of this module
(tests/training/test_fit_listeners.py) fails if a later Ray changes ``on_start``'s
contract under it in a way that reopens a wildcard listener.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from typing import Any

from ray.train.backend import BackendConfig
from ray.train.torch import TorchConfig
from ray.train.torch.config import _set_torch_distributed_env_vars, _TorchBackend

BACKENDS = ("gloo", "nccl")
IFNAME_VARS = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")

_listener: socket.socket | None = None  # rank 0's bound store socket, between the two setup calls


def interface_of(address: str) -> str | None:
    """The name of this machine's network interface holding ``address``, or None."""
    import psutil

    for name, addrs in psutil.net_if_addrs().items():
        if any(a.address.split("%")[0] == address for a in addrs):
            return name
    return None


def _node_address() -> str:
    import ray

    return ray.util.get_node_ip_address()


def listen_for_store() -> tuple[str, int]:
    """On rank 0: bind a socket to this node's address (a free port) and keep it for
    `join_process_group`; returns (address, port) for every rank."""
    global _listener
    address = _node_address()
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((address, 0))
    sock.listen(socket.SOMAXCONN)
    _listener = sock
    return address, sock.getsockname()[1]


def bind_collectives_to_node() -> None:
    """Gloo and NCCL listen on the interface of this node's Ray address (NCCL's ``=``:
    that name exactly, not as a prefix); a value the user set is kept."""
    name = interface_of(_node_address())
    if name is None:  # the node address is on no interface here (NAT): the libraries choose
        return
    os.environ.setdefault("GLOO_SOCKET_IFNAME", name)
    os.environ.setdefault("NCCL_SOCKET_IFNAME", f"={name}")


def join_process_group(backend: str, world_rank: int, world_size: int, address: str, port: int, timeout_s: int) -> None:
    """Create the store (rank 0: the master, on `listen_for_store`'s socket; others: clients
    of ``address:port``) and the default process group on it."""
    import torch.distributed as dist

    global _listener
    timeout = timedelta(seconds=timeout_s)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = address, str(port)  # DeepSpeed reads them
    if backend == "nccl" and not {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_BLOCKING_WAIT"} & set(os.environ):
        os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"  # as Ray's setup: fail on collective timeouts
    if world_rank == 0:
        if _listener is None:
            raise RuntimeError("rank 0 joins the process group before binding the store's socket")
        sock, _listener = _listener, None
        # the store owns the descriptor from now on (and closes it)
        store = dist.TCPStore(address, port, world_size, True, timeout=timeout, master_listen_fd=sock.detach())
    else:
        store = dist.TCPStore(address, port, world_size, False, timeout=timeout)
    dist.init_process_group(backend=backend, store=store, rank=world_rank, world_size=world_size, timeout=timeout)


class _NodeBoundTorchBackend(_TorchBackend):
    def on_start(self, worker_group: Any, backend_config: BackendConfig) -> None:
        import ray
        from ray.train._internal.worker_group import WorkerGroup as V1WorkerGroup

        if not isinstance(backend_config, TorchConfig):  # Ray hands each backend its own config
            raise TypeError(f"{type(backend_config).__name__}: the node-bound torch backend takes a TorchConfig")
        backend = backend_config.backend
        if backend not in BACKENDS:
            raise ValueError(f"torch backend {backend!r}: the node-bound process group supports {BACKENDS}")
        address, port = worker_group.execute_single(0, listen_for_store)
        worker_group.execute(bind_collectives_to_node)
        if not isinstance(worker_group, V1WorkerGroup):  # Train V2: LOCAL_RANK etc. before the group (as Ray)
            worker_group.execute(_set_torch_distributed_env_vars)
        ray.get([
            worker_group.execute_single_async(i, join_process_group, backend=backend, world_rank=i,
                                              world_size=len(worker_group), address=address, port=port,
                                              timeout_s=backend_config.timeout_s)
            for i in range(len(worker_group))
        ])


class NodeBoundTorchConfig(TorchConfig):
    """``TorchConfig`` whose process group listens on the node address only (module docstring)."""

    @property
    def backend_cls(self) -> type:
        return _NodeBoundTorchBackend
