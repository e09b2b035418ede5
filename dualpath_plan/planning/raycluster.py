"""Connecting to a Ray cluster for ``--executor ray``, and every way that fails said in one line within seconds.

Ray's own connect waits where the cause is already known, and then names the wrong one:

* nothing answers at the address (a stale ``RAY_ADDRESS`` too): Ray retries for minutes, writing C++ warnings on
  stderr. A TCP connect of :data:`CONNECT_S` says it first.
* the cluster runs Ray's token authentication (``RAY_AUTH_MODE=token``, Ray 2.52 and later) and this process sends
  no token or another one: the Ray client gives up after 30 s with "ray client connection timeout", a GCS address
  after 20 s with "Failed to connect". One gRPC call, with the token Ray would send (Ray's own loader), answers
  ``UNAUTHENTICATED`` at once: the head's client server (``ray://HOST:PORT``, ``RayletDriver.ClusterInfo``) or the
  GCS (``HOST:PORT``, ``NodeInfoGcsService.GetClusterId``).
* the cluster runs another Ray or Python version: Ray raises "Version mismatch" over six lines; one line names both.
"""

from __future__ import annotations

import logging
import os
import re
import warnings

from dualpath_plan.model.errors import PlanError, shown

CONNECT_S = 5.0  # how long a cluster's port may take to answer before it is called unreachable
TOKEN_SETUP = ("set RAY_AUTH_MODE=token and the cluster's token in RAY_AUTH_TOKEN (or in a file named by RAY_AUTH_TOKEN_PATH, "
               "or in ~/.ray/auth_token); `ray get-auth-token` on the cluster's head prints it")


def connect(ray, address: str | None) -> None:
    """``ray.init`` at ``address`` (None or ``auto``: ``RAY_ADDRESS``, else the local cluster), after the checks of the
    module docstring; a Ray already initialised in this process is used as it is (a malformed ``address`` is still
    refused: the flag is wrong wherever it runs)."""
    if address not in (None, "auto"):
        _host_port(address, "--address")
    if ray.is_initialized():
        return
    if address not in (None, "auto"):
        _reachable(address)
        _authenticated(address)
    elif (env := os.environ.get("RAY_ADDRESS", "").strip()) not in ("", "auto", "local"):  # what "auto" dials: a stale one hung
        _reachable(env, "RAY_ADDRESS")
        _authenticated(env, "RAY_ADDRESS")
    try:
        with warnings.catch_warnings():  # Ray warns on stderr before it raises; the one line below says it
            warnings.simplefilter("ignore")
            ray.init(address=address or "auto", log_to_driver=False, include_dashboard=False, logging_level=logging.ERROR)
    except Exception as exc:  # noqa: BLE001 (Ray raises ConnectionError, ValueError or RuntimeError here)
        raise PlanError(_refusal(exc, address or "auto"), 1) from None


def _refusal(exc: BaseException, address: str) -> str:
    """The one line for a failed ``ray.init``: a version mismatch names both versions, anything else its first line."""
    text = str(exc)
    if "Version mismatch" in text and len(found := re.findall(r"Ray: (\S+)\s+Python: (\S+)", text)) == 2:
        (ray_there, py_there), (ray_here, py_here) = found
        return (f"--executor ray: the Ray cluster at {address} runs Ray {ray_there} on Python {py_there}, this process Ray {ray_here} "
                f"on Python {py_here}; Ray needs the same Ray and Python minor version on both sides: pip install 'ray[client]=={ray_there}' "
                f"here (on Python {'.'.join(py_there.split('.')[:2])}), or start the cluster with this one")
    return (f"--executor ray: cannot connect to the Ray cluster at {address} ({first_line(exc)}); start one with `ray start --head`, "
            "or give --address HOST:PORT or ray://HOST:PORT")


def _reachable(address: str, given_by: str = "--address") -> None:
    """Refuse a HOST:PORT (or ray://HOST:PORT) nothing answers at within :data:`CONNECT_S`: Ray itself retries for
    minutes there, writing its C++ warnings on stderr. ``given_by``: where the address came from, for the message."""
    import socket

    host, port = _host_port(address, given_by)
    try:
        socket.create_connection((host, port), timeout=CONNECT_S).close()
    except (OSError, ValueError) as exc:
        fix = "unset it, or start the cluster's head with `ray start --head`" if given_by == "RAY_ADDRESS" else \
            "start the cluster's head with `ray start --head`, or give its address"
        raise PlanError(f"{given_by} {address}: nothing answers there ({first_line(exc)}); {fix}", 1) from None


def _host_port(address: str, given_by: str) -> tuple[str, int]:
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not (port.isascii() and port.isdigit() and len(port) <= 5 and 1 <= int(port) <= 65535):
        raise PlanError(f"{given_by} {shown(address)}: port {shown(port)} is not allowed; give HOST:PORT with a port from 1 to 65535", 2)
    return host.strip("[]"), int(port)


def _authenticated(address: str, given_by: str = "--address") -> None:
    """Refuse an address whose cluster answers ``UNAUTHENTICATED`` to the token this process would send (module
    docstring). A Ray without these modules, or any other answer, leaves it to ``ray.init``."""
    try:
        import grpc
        from ray._private.authentication.grpc_authentication_client_interceptor import _get_authentication_metadata_tuple
    except ImportError:  # a Ray before token authentication: nothing to check
        return
    host, port = _host_port(address, given_by)
    metadata = _get_authentication_metadata_tuple()
    channel = grpc.insecure_channel(f"{host}:{port}")
    try:
        _ask(channel, address.startswith("ray://"), metadata)
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.UNAUTHENTICATED:
            sent = "refused the token this process sends" if metadata else "this process sends none"
            raise PlanError(f"--executor ray: the Ray cluster at {address} requires token authentication and {sent}; {TOKEN_SETUP}", 1) from None
    finally:
        channel.close()


def _ask(channel, client_server: bool, metadata) -> None:
    """One call that any authenticated peer answers: a ping of the Ray client server, or the GCS's cluster id."""
    if client_server:
        from ray.core.generated import ray_client_pb2, ray_client_pb2_grpc

        request = ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING)
        ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(request, timeout=CONNECT_S, metadata=metadata)
    else:
        from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

        gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(gcs_service_pb2.GetClusterIdRequest(), timeout=CONNECT_S,
                                                                          metadata=metadata)


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's text (its type's name when it has none)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
