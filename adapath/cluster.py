"""Ray clusters for executors: start a local one on loopback, or join an existing one.

Only executors import this module, and Ray is imported inside it: ``adapath`` itself never
needs Ray (``pip install 'adapath[distributed]'``).
"""

from __future__ import annotations

import logging
import socket

from adapath.errors import InputError

CONNECT_TIMEOUT_S = 5.0
MIN_OBJECT_STORE = 96 * 2**20  # Ray refuses less than 75 MiB


def import_ray():
    try:
        import ray
    except ImportError:
        raise InputError("--executor ray needs Ray: pip install 'adapath[distributed]'") from None
    return ray


def connect(address: str | None, cpus: int, object_store_bytes: int = MIN_OBJECT_STORE) -> bool:
    """Make this process a Ray driver; True when this call connected (and so should
    ``ray.shutdown()`` at the end), False when Ray was already initialized here.

    No address: a local cluster on the loopback interface, without the dashboard, with
    ``cpus`` CPUs and an object store of ``object_store_bytes`` (not Ray's 30% of RAM). With
    an address (``HOST:PORT`` as ``ray start --head`` prints it, or ``auto``), that cluster is
    joined after a quick check that something answers there (Ray's own attempt hangs for
    minutes on a wrong address)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    if not address:
        ray.init(address="local", num_cpus=max(1, cpus), include_dashboard=False,
                 _node_ip_address="127.0.0.1", object_store_memory=max(MIN_OBJECT_STORE, object_store_bytes),
                 logging_level=logging.ERROR, log_to_driver=False)
        return True
    if address != "auto":
        host, sep, port = address.removeprefix("ray://").rpartition(":")
        if not sep or not host or not port.isdigit():
            raise InputError(f"--ray-address {address!r}: expected HOST:PORT (as `ray start --head` prints it)")
        try:
            socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise InputError(f"--ray-address {address}: no Ray cluster answers there ({reason})") from None
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError, TimeoutError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"--ray-address {address}: could not join a Ray cluster there ({first})") from None
    return True
