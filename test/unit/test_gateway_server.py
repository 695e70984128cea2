"""The command line, TLS, the process wrapper, and latency scenarios."""

import math
import ssl
import statistics
import subprocess
import sys

from fixtures_gateway import act_body, AUTH, REPO_ROOT, start_gateway
import httpx
import pytest
from sequence_ai_ros.gateway.catalogue import load_catalogue
from sequence_ai_ros.gateway.latency import LatencySampler
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.gateway.server import build_parser, main


def test_parser_defaults():
    args = build_parser().parse_args([])
    assert (args.host, args.port, args.time_scale, args.scenario) == (
        '127.0.0.1', 8765, 1.0, 'steady')
    assert (args.concurrency, args.max_body_bytes, args.keep_alive_s) == (16, 8 << 20, 75)
    assert (args.idle_cold_s, args.step_after_s, args.start_warm) == (900.0, 30.0, False)


@pytest.mark.parametrize('argv', [['--time-scale', '0'], ['--concurrency', '0'],
                                  ['--certfile', 'only.pem'], ['--policy', 'nocolon'],
                                  ['--keys-file', '/nonexistent/keys']])
def test_bad_settings_exit_2_with_a_message(argv, capsys):
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert 'gateway: error:' in capsys.readouterr().err


def test_importing_the_gateway_does_not_import_rclpy():
    code = ('import sys, sequence_ai_ros.gateway.server, sequence_ai_ros.gateway.process; '
            'assert "rclpy" not in sys.modules')
    subprocess.run([sys.executable, '-c', code], check=True, cwd=REPO_ROOT)


def test_startup_failure_reports_the_log():
    with pytest.raises(RuntimeError) as caught:
        GatewayProcess(['--scenario', 'nonsense'], startup_timeout_s=10).start()
    assert 'invalid choice' in str(caught.value)


def test_a_taken_port_is_not_mistaken_for_ours(gateway):
    squatter = GatewayProcess(port=gateway.port, startup_timeout_s=10)
    with pytest.raises(RuntimeError) as caught:
        squatter.start()
    assert 'address already in use' in str(caught.value).lower()
    assert squatter.port == gateway.port and gateway.running()


def test_stop_and_restart_on_the_same_port():
    process = start_gateway(['--start-warm'])
    try:
        port = process.port
        assert httpx.post(process.base_url + '/v1/act', json=act_body()).status_code == 200
        assert process.stop() is not None and not process.running()
        with pytest.raises(httpx.ConnectError):
            httpx.get(process.base_url + '/v1/health')
        process.restart()
        assert process.port == port and process.running()
        assert process.stats()['requests'] == {}  # fresh state
    finally:
        process.close()


def test_tls_with_a_self_signed_certificate(tls_files):
    cert, key = tls_files
    with GatewayProcess(['--time-scale', '0.02', '--start-warm'], certfile=cert, keyfile=key,
                        keys={'seq_tls_key_000000001': 5}) as process:
        assert process.base_url.startswith('https://')
        context = ssl.create_default_context(cafile=cert)
        with httpx.Client(base_url=process.base_url, verify=context) as client:
            assert client.get('/v1/health').json()['auth'] == 'keys'
            response = client.post('/v1/act', json=act_body(),
                                   headers={'Authorization': 'Bearer seq_tls_key_000000001'})
            assert response.status_code == 200
        with pytest.raises(httpx.ConnectError):
            httpx.get(process.base_url + '/v1/health')  # not trusted without the certificate
        with pytest.raises(httpx.HTTPError):
            httpx.get(process.base_url.replace('https', 'http') + '/v1/health')


def test_slow_latency_override_is_what_the_call_takes():
    process = start_gateway(['--start-warm', '--latency-median-s', '10'])  # 0.2 s each
    try:
        with httpx.Client(base_url=process.base_url, headers=AUTH) as client:
            for _ in range(3):
                response = client.post('/v1/act', json=act_body())
                inference_s = response.json()['perf']['inference_ms'] / 1000
                assert 0.1 < inference_s < 0.4
                assert response.elapsed.total_seconds() >= inference_s
    finally:
        process.close()


PROFILE = load_catalogue(time_scale=0.02).get('pi05-droid')


def _medians(sampler: LatencySampler, n: int = 4000) -> float:
    return statistics.median(sampler.sample(PROFILE) for _ in range(n))


def test_steady_latency_is_the_profiles_lognormal():
    sampler = LatencySampler('steady', 0.02, seed=1)
    samples = sorted(sampler.sample(PROFILE) for _ in range(4000))
    assert statistics.median(samples) == pytest.approx(0.78 * 0.02, rel=0.05)
    spread = statistics.stdev(math.log(s) for s in samples)
    assert spread == pytest.approx(PROFILE.latency_sigma, rel=0.1)
    assert samples[-40] > statistics.median(samples) * 1.3  # right-skewed tail


def test_heavy_tail_slows_about_one_call_in_a_hundred():
    sampler = LatencySampler('heavy_tail', 1.0, seed=2)
    samples = [sampler.sample(PROFILE.scaled(1.0)) for _ in range(20000)]
    slow = sum(s > 0.78 * 2.6 for s in samples) / len(samples)
    assert 0.005 < slow < 0.015
    assert max(samples) < 0.78 * 5 * math.exp(5 * PROFILE.latency_sigma)


def test_step_doubles_latency_after_the_uptime_mark():
    now = [0.0]
    sampler = LatencySampler('step', 0.02, step_after_s=30, seed=3, clock=lambda: now[0])
    before = _medians(sampler)
    now[0] = 30 * 0.02 + 0.001
    after = _medians(sampler)
    assert before == pytest.approx(0.78 * 0.02, rel=0.05)
    assert after == pytest.approx(2 * before, rel=0.08)


def test_fast_scenario_and_zero_latency():
    assert _medians(LatencySampler('fast', 0.02, seed=4)) == pytest.approx(0.15 * 0.02, rel=0.05)
    silent = load_catalogue(time_scale=0.02, latency_median_s=0.0).get('pi05-droid')
    assert LatencySampler('steady', 0.02).sample(silent) == 0.0


def test_time_scale_keeps_step_counts_and_ratios():
    native = load_catalogue().get('lingbot-va-5b')
    scaled = load_catalogue(time_scale=0.1).get('lingbot-va-5b')
    assert native.covers_seconds == pytest.approx(0.64)
    assert scaled.action_horizon == native.action_horizon == 16
    assert scaled.covers_seconds == pytest.approx(0.064)
    assert scaled.cold_start_s / scaled.latency_median_s == pytest.approx(
        native.cold_start_s / native.latency_median_s)
