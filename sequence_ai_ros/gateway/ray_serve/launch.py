"""
`gateway --ray`: start (or join) Ray, run the application, serve until SIGINT or SIGTERM.

A local Ray is started with no dashboard and a small object store, and shut down on exit;
Serve's HTTP proxy, the only port a client uses, listens on the gateway's `--host` (127.0.0.1 by
default). A local Ray's own ports (GCS, raylet, object manager, agents, workers) listen on
loopback only (see this package's `LOOPBACK_ENV`), and Ray's token authentication guards them
too. `--ray-address` joins an existing cluster and
leaves it running, deleting only this application. Shutting down is bounded: a Serve that does
not stop in time is left to `ray.shutdown`.
"""

from collections.abc import Iterator
import contextlib
import logging
import os
import threading
from typing import Any, NoReturn

from sequence_ai_ros import stop_signals
from sequence_ai_ros.gateway.config import GatewayConfig

from . import LOOPBACK_ENV
from .application import APP_NAME, build_application, Scaling

LOG = logging.getLogger(__name__)
SHUTDOWN_S = 15.0
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # observations are frames of a few kB; Ray's floor is 75 MB


def start_ray(address: str | None) -> None:
    """Join `address`, or start a local Ray reachable on loopback only."""
    import ray
    from ray._private import ray_constants

    # The driver's core worker would install absl's failure signal handler, which takes
    # SIGTERM for a crash and aborts (-6); here SIGTERM is a request to stop. Read when the
    # core worker starts (ray 2.60); Ray's own processes keep their handler.
    ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True
    with _keeping_our_sigterm_handler():
        if address:
            ray.init(address=address, log_to_driver=False)
            return
        # Workers inherit this process's environment, so a --policy module on PYTHONPATH loads.
        ray.init(address='local', include_dashboard=False,
                 object_store_memory=OBJECT_STORE_BYTES, log_to_driver=False,
                 runtime_env={'env_vars': {'PYTHONPATH': os.environ.get('PYTHONPATH', '')}})
    node_ip = ray.util.get_node_ip_address()
    if not node_ip.startswith('127.'):
        # ray was imported before this package, or the variable was set otherwise.
        LOG.warning('the local Ray listens on %s, not loopback (%s=%s)', node_ip, LOOPBACK_ENV,
                    os.environ.get(LOOPBACK_ENV))


@contextlib.contextmanager
def _keeping_our_sigterm_handler() -> Iterator[None]:
    # ray.init installs a SIGTERM handler that raises SystemExit wherever the driver is: in the
    # middle of connecting to the Ray it just started (signalled on a busy machine), which left
    # a half-started Ray whose shutdown hung. Ours only records the request, acted on after.
    from ray._private import utils

    installed = utils.set_sigterm_handler
    utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        utils.set_sigterm_handler = installed


def http_options(config: GatewayConfig) -> dict[str, Any]:
    """Return the Serve proxy's options from the gateway's flags."""
    options: dict[str, Any] = {'host': config.host, 'port': config.port,
                               'keep_alive_timeout_s': config.keep_alive_s}
    if config.certfile:
        options.update(ssl_certfile=config.certfile, ssl_keyfile=config.keyfile)
    return options


def serve_on_ray(config: GatewayConfig, scaling: Scaling) -> NoReturn:
    """Run the gateway on Ray Serve until SIGINT or SIGTERM, then end the process (status 0)."""
    from ray import serve

    try:
        start_ray(scaling.address)
    finally:
        # Ours again, whatever a library set while Ray started.
        stop_signals.install()
    try:
        # Each step takes seconds; a signal during one stops the gateway after it.
        if not stop_signals.requested():
            serve.start(http_options=http_options(config), proxy_location='HeadOnly')
        if not stop_signals.requested():
            serve.run(build_application(config, scaling), name=APP_NAME, route_prefix='/')
            LOG.info('serving on Ray Serve at %s:%d: %d policy replica(s)%s', config.host,
                     config.port, scaling.replicas,
                     f', autoscaling to {scaling.max_replicas}' if scaling.max_replicas
                     else '')
        stop_signals.wait()
    finally:
        shut_down(scaling.address)
    # Ray's C++ threads outlive ray.shutdown, and the interpreter's finalization under them can
    # crash (SIGSEGV, ray 2.60, stopped while Serve was starting): all is stopped, so end here.
    stop_signals.exit_now(0)


def shut_down(address: str | None) -> None:
    """Delete this application; on a Ray started here, stop Serve and Ray too."""
    import ray
    from ray import serve

    if ray.is_initialized():  # else Serve would start a Ray of its own to look for itself
        stopper = threading.Thread(target=serve.delete if address else serve.shutdown,
                                   args=(APP_NAME,) if address else (), daemon=True)
        stopper.start()
        stopper.join(SHUTDOWN_S)
        if stopper.is_alive():
            LOG.warning('Serve did not stop within %.0f s; shutting Ray down', SHUTDOWN_S)
    ray.shutdown()
