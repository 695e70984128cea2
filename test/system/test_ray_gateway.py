"""
The gateway on Ray Serve under the in-process gateway's contract tests, and a replica killed.

`gateway --ray` with 2 policy replicas, the published sequence-ai client and this project's.

One local Ray cluster serves the whole module: the `gateway` and `http` fixtures below take the
place of the session's, so the imported contract tests run unchanged against it. The gateway
serves the fleet bench's stamping plug-in (the reference policy plus a (loop, request, step)
stamp), so the kill test checks what each loop really played.
"""

import os
import signal
import threading
import time

from fixtures_gateway import AUTH, TEST_KEYS
import httpx
import pytest
from ray_cluster import descendants, is_loopback, listening, policy_replicas, ray_gateway
from unit.test_gateway_auth import (  # noqa: F401 (collected here, against the Ray gateway)
    test_401_with_a_string_detail_and_no_key_echo,
    test_bearer_scheme_is_case_insensitive,
    test_credit_runs_out_and_failures_are_free,
    test_stats_mask_keys_and_logs_never_hold_them,
)
from unit.test_gateway_contract import (  # noqa: F401
    test_act_response_shape_for_every_model,
    test_bare_model_name_is_accepted,
    test_health_is_public_and_reports_keys,
    test_models_catalogue_rows,
    test_seed_makes_a_chunk_repeatable_and_no_seed_varies,
    test_unknown_options_are_passed_but_warned,
    test_unknown_route_and_method_answer_json_detail,
)
from unit.test_gateway_published_client import (  # noqa: F401
    test_errors_map_to_the_clients_types,
    test_models_lists_the_catalogue,
    test_predict_returns_a_chunk,
)
from unit.test_gateway_validation import (  # noqa: F401
    test_400_for_a_body_that_is_not_a_json_object,
    test_404_for_an_unknown_model_lists_the_known_ones,
    test_422_names_the_field,
    test_nulls_for_optional_fields_mean_not_reported,
)

pytest.importorskip('ray.serve', reason='the Ray gateway needs ray[serve] (requirements-dev.txt)')

REPLICAS = 2


@pytest.fixture(scope='module')
def gateway():
    """Serve the gateway on Ray: 2 policy replicas, warm, keyed as the session's gateway is."""
    process = ray_gateway(
        ['--replicas', str(REPLICAS), '--start-warm', '--seed', '7', '--idle-cold-s', '1000000',
         '--policy', 'bench._fleet_policy:make_fleet_policy'], keys=TEST_KEYS)
    yield process
    process.close()


@pytest.fixture(scope='module')
def http(gateway):
    """One keep-alive client on the Ray gateway, authorised with MAIN_KEY."""
    with httpx.Client(base_url=gateway.base_url, headers=AUTH, timeout=30.0) as client:
        yield client


def test_stats_say_the_policy_runs_on_ray_replicas(gateway):
    stats = gateway.stats()
    assert (stats['backend'], stats['replicas'], stats['launcher_pid']) == (
        'ray', REPLICAS, gateway.pid)
    assert stats['pid'] != gateway.pid  # the ingress is a Ray actor of its own
    assert len(policy_replicas(gateway.pid)) == REPLICAS


def test_rays_own_ports_listen_on_loopback_only(gateway):
    # GCS, raylet, object manager, dashboard and runtime-env agents, workers, Serve's proxy:
    # every TCP socket any process of this Ray listens on.
    sockets = listening(descendants(gateway.pid))
    names = {name.rsplit('/', 1)[-1] for _, _, name in sockets}
    assert {'gcs_server', 'raylet'} <= names, sockets
    assert ('127.0.0.1', gateway.port) in {(a, p) for a, p, _ in sockets}
    outside = [s for s in sockets if not is_loopback(s[0])]
    assert not outside, f'listening beyond loopback: {outside}'


def _acts(gateway) -> dict[str, int]:
    return dict(gateway.stats()['acts'].get('accounts/sequences/models/pi05-droid', {}))


def test_a_replica_killed_mid_run_is_replaced_and_nothing_plays_twice(gateway):
    from bench._fleet_clients import run_fleet, synthetic_frames  # the bench's stamped loops

    before = policy_replicas(gateway.pid)
    acts_before = _acts(gateway)
    killed: list[int] = []

    def kill_one() -> None:
        time.sleep(1.5)
        os.kill(before[0], signal.SIGKILL)  # as a crash would: no goodbye to Serve
        killed.append(before[0])

    killer = threading.Thread(target=kill_one)
    killer.start()
    results, _ = run_fleet(gateway.base_url, next(iter(TEST_KEYS)), 'pi05-droid',
                           list(range(4)), 15 * 20, synthetic_frames(), time.monotonic() + 0.2)
    killer.join()
    assert killed and len(results) == 4
    for result in results:
        # Each loop played its chunks in observation order, every step once; every request
        # it sent was answered or failed (typed), none vanished.
        assert result.breaks == 0, result.check
        assert result.lost == 0 and not result.error, result
        assert result.received > 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = policy_replicas(gateway.pid)
        if len(now) == REPLICAS and killed[0] not in now:
            break
        time.sleep(0.5)
    assert len(now) == REPLICAS and killed[0] not in now, now
    # The calls the dead replica held were answered 503 (transient: the loops retried), the
    # rest 200; nothing else.
    statuses = {k: n - acts_before.get(k, 0) for k, n in _acts(gateway).items()}
    assert {k for k, n in statuses.items() if n} <= {'200', '503'}, statuses
