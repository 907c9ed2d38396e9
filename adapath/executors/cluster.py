"""Ray clusters for the Ray executor: start a local one on loopback, or join an existing one.

Only the Ray executor imports this module, and Ray is imported inside it: ``adapath`` itself never
needs Ray (``pip install 'adapath[distributed]'``).

Loopback, for real: Ray's gRPC servers (GCS, raylet, object manager, every worker) listen on
127.0.0.1 only when the node's IP address *is* 127.0.0.1, and its HTTP agents bind the node's
IP address. But on Linux ``ray.init(_node_ip_address="127.0.0.1")`` swaps loopback for the
machine's routable address (``resolve_ip_for_localhost``), unless Ray runs in its local-only
mode (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, the default on macOS and Windows). So a local
cluster is started in that mode, with the dashboard off, and its listening sockets are
checked once it is up: any that is not on loopback is named in one line.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from contextlib import contextmanager, nullcontext

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
        with local_only_mode(ray):
            ray.init(address="local", num_cpus=max(1, cpus), include_dashboard=False,
                     _node_ip_address=LOOPBACK, object_store_memory=max(MIN_OBJECT_STORE, object_store_bytes),
                     logging_level=logging.ERROR, log_to_driver=False)
        exposed = exposed_sockets()
        if exposed:
            print(f"warning: this local Ray cluster listens beyond loopback: {', '.join(exposed)}", file=sys.stderr)
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
    # a cluster on loopback (a local one another process started) is joined in the same
    # local-only mode: outside it the driver would look for its node at a routable address
    bare_host = host.strip("[]") if address != "auto" else ""
    joining_loopback = bare_host == "localhost" or is_loopback_address(bare_host)
    try:
        with local_only_mode(ray) if joining_loopback else nullcontext():
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError, TimeoutError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"--ray-address {address}: could not join a Ray cluster there ({first})") from None
    return True


LOOPBACK = "127.0.0.1"
LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextmanager
def local_only_mode(ray):
    """Ray's local-only mode while a local cluster starts: in the environment its processes
    inherit, and in the flag Ray read from it when it was imported (which may have been
    before this call). Both are restored afterwards, so joining a cluster later is unchanged."""
    try:
        from ray._private import ray_constants
    except ImportError:  # another Ray layout: the environment alone, and the start-up check
        ray_constants = None
    saved_env = os.environ.get(LOCAL_ONLY_ENV)
    saved_flag = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    os.environ[LOCAL_ONLY_ENV] = "0"
    if saved_flag is not None:
        ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if saved_flag is not None:
            ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(LOCAL_ONLY_ENV, None)
        else:
            os.environ[LOCAL_ONLY_ENV] = saved_env


def is_loopback_address(ip: str) -> bool:
    ip = ip.removeprefix("::ffff:")  # an IPv4 address on an IPv6 socket
    return ip.startswith("127.") or ip == "::1"


def listening_sockets(pid: int | None = None) -> list[tuple[str, str, int]]:
    """(process name, address, port) of every listening TCP socket and bound UDP socket of a
    process and its descendants (this process by default); [] without psutil."""
    try:
        import psutil
    except ImportError:
        return []
    root = psutil.Process(pid)
    found = set()
    for proc in [root, *root.children(recursive=True)]:
        try:
            name = proc.name()
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN or (conn.type == socket.SOCK_DGRAM and conn.laddr):
                    found.add((name, conn.laddr.ip, conn.laddr.port))
        except psutil.Error:  # a process that ended, or one we may not inspect
            continue
    return sorted(found)


def exposed_sockets(pid: int | None = None) -> list[str]:
    """``name ADDRESS:PORT`` of each socket of the process tree not bound to loopback."""
    return [f"{name} {ip}:{port}" for name, ip, port in listening_sockets(pid) if not is_loopback_address(ip)]
