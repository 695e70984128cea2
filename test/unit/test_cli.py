"""The `sequence-ai-ros` command against real gateway processes, run as a user runs it."""

import io
import re
import subprocess
import sys
import time
import types

from fixtures_gateway import MAIN_KEY, TEST_DIR
import httpx
import pytest
from sequence_ai_ros import cli
from sequence_ai_ros.contract.key_masking import mask_key
from sequence_ai_ros.doctor import Doctor, DoctorOptions, EXIT_CODES, PLAIN_JPEG, probe_observation
from sequence_ai_ros.gateway.process import free_port, GatewayProcess
from sequence_ai_ros.harness.child_processes import child_env

MODELS = ('pi05-droid', 'cosmos3-edge-policy-droid', 'lingbot-va-5b', 'lingbot-vla-v2-6b')
GOOD = 'seq_cli_good_key_for_doctor_0001'
ZERO = 'seq_cli_zero_credit_key_00002'
BOGUS = 'seq_cli_not_a_configured_key_0009'
OTHER = 'seq_cli_other_key_in_a_file_0004'
SECRETS = (GOOD, ZERO, BOGUS, OTHER)
SAMPLES = 3


def run_cli(*args, key=None, xdg, env=None, check_secrets=True):
    """Run `python -m sequence_ai_ros.cli` in a clean environment; never leak a key."""
    environment = {k: v for k, v in child_env().items() if not k.startswith('SEQUENCES_')}
    environment['XDG_CONFIG_HOME'] = str(xdg)
    if key is not None:
        environment['SEQUENCES_API_KEY'] = key
    environment.update(env or {})
    result = subprocess.run([sys.executable, '-m', 'sequence_ai_ros.cli', *args],
                            env=environment, capture_output=True, text=True, timeout=120)
    if check_secrets:
        for secret in SECRETS:
            assert secret not in result.stdout + result.stderr
    return result


def verdicts(stdout):
    """{check number: (status, rest of line)} from doctor's output."""
    found = {}
    for line in stdout.splitlines():
        match = re.match(r'^(OK|WARN|FAIL)\s+(\d) (.*)$', line)
        if match:
            assert int(match[2]) not in found, f'check {match[2]} reported twice'
            found[int(match[2])] = (match[1], match[3])
    return found


def key_stats(gateway, key, index):
    return gateway.stats()['keys'][mask_key(key, index)]


class BrokenPolicy:
    """A `--policy` plug-in that always raises: the gateway answers 500."""

    def __init__(self, profile):
        self.profile = profile

    def act(self, observation, options, rng):
        raise RuntimeError('plug-in exploded')


def make_broken_policy(profile):
    return BrokenPolicy(profile)


@pytest.fixture
def xdg(tmp_path):
    folder = tmp_path / 'xdg'
    folder.mkdir()
    return folder


@pytest.fixture(scope='module')
def warm():
    """Warm, keyed: GOOD has credit, ZERO has none."""
    process = GatewayProcess(['--time-scale', '0.02', '--start-warm'],
                             keys={GOOD: 1000, ZERO: 0}).start()
    yield process
    process.close()


@pytest.fixture(scope='module')
def cold():
    """Cold workers that take 50 model s (0.5 s here) to warm; each test uses its own model."""
    process = GatewayProcess(['--time-scale', '0.01', '--cold-start-s', '50'],
                             keys={GOOD: 1000}).start()
    yield process
    process.close()


def doctor(gateway, *args, **kwargs):
    return run_cli('doctor', '--base-url', gateway.base_url, '--samples', str(SAMPLES), *args,
                   **kwargs)


# -- models ---------------------------------------------------------------------------------

def test_models_table_lists_the_four_models_from_the_live_catalogue(warm, xdg):
    result = run_cli('models', '--base-url', warm.base_url, xdg=xdg)
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split()[:3] == ['MODEL', 'ROBOT', 'ACTION']
    assert [row.split()[0] for row in rows] == list(MODELS)
    pi05 = rows[0].split()
    # 15 Hz at --time-scale 0.02 is served as 750 Hz: the table is read live, not made up.
    assert pi05[1:6] == ['droid', 'joint_velocity', '8', '15', '750']
    assert pi05[-1] == 'exterior_1,wrist'
    # Aligned: every column starts at the same offset on every line.
    starts = {line.index(' droid') for line in rows}
    assert len(starts) == 1 and header.index(' ROBOT') in starts


def test_models_with_an_endpoint_nobody_serves_fails(warm, xdg):
    result = run_cli('models', '--base-url', warm.base_url, '--endpoint', 'chat', xdg=xdg)
    assert result.returncode == 1
    assert 'lists no models' in result.stderr and result.stdout == ''


def test_models_without_a_gateway_fails_cleanly(xdg):
    result = run_cli('models', '--base-url', f'http://127.0.0.1:{free_port()}', xdg=xdg)
    assert result.returncode == 1
    assert 'cannot reach' in result.stderr and 'Traceback' not in result.stderr


# -- doctor: the healthy path ---------------------------------------------------------------

def test_doctor_passes_on_a_warm_gateway_with_a_good_key(warm, xdg):
    before = warm.stats()
    acts_before = key_stats(warm, GOOD, 1)['acts']
    result = doctor(warm, key=GOOD, xdg=xdg)
    assert result.returncode == 0, result.stdout + result.stderr
    found = verdicts(result.stdout)
    assert sorted(found) == [1, 2, 3, 4, 5, 6, 7]
    assert all(status == 'OK' for status, _ in found.values()), result.stdout
    assert f'{GOOD[:4]}…{GOOD[-4:]}' in found[1][1] and 'SEQUENCES_API_KEY' in found[1][1]
    assert 'backend local' in found[2][1] and 'auth keys' in found[2][1]
    assert re.search(r'new connection [\d.]+ ms, one reused connection [\d.]+ ms', found[6][1])
    assert 'served' in found[7][1]
    assert result.stdout.rstrip().endswith('all checks passed')
    after = warm.stats()
    # Exactly one billed act; one connection per fresh sample, plus the public and act ones.
    assert key_stats(warm, GOOD, 1)['acts'] == acts_before + 1
    assert after['connections'] - before['connections'] == SAMPLES + 2
    models_200 = after['requests']['/v1/models']['200'] - before['requests']['/v1/models']['200']
    assert models_200 == 1 + 2 * SAMPLES


def test_no_act_spends_nothing_and_says_what_it_did_not_check(warm, xdg):
    before = warm.stats()
    result = doctor(warm, '--no-act', key=GOOD, xdg=xdg)
    assert result.returncode == 0, result.stdout
    found = verdicts(result.stdout)
    assert [found[n][0] for n in (1, 2, 3, 4, 5, 6, 7)] == [
        'OK', 'OK', 'OK', 'WARN', 'WARN', 'OK', 'WARN']
    assert 'unknown' in found[4][1]
    after = warm.stats()
    assert after['requests'].get('/v1/act') == before['requests'].get('/v1/act')
    assert after['connections'] - before['connections'] == SAMPLES + 1
    assert 'all checks passed' not in result.stdout


def test_auth_disabled_gateway_is_a_warning_not_a_pass_for_the_key(open_gateway, xdg):
    result = doctor(open_gateway, key=BOGUS, xdg=xdg)
    assert result.returncode == 0, result.stdout
    found = verdicts(result.stdout)
    assert found[4][0] == 'WARN' and 'auth disabled' in found[4][1]
    assert found[7][0] == 'OK'


# -- doctor: each failure has its own exit code ---------------------------------------------

def test_no_key_fails_first_and_touches_nothing(warm, xdg):
    before = warm.stats()['requests']
    result = doctor(warm, xdg=xdg)
    assert result.returncode == 10
    found = verdicts(result.stdout)
    assert list(found) == [1] and found[1][0] == 'FAIL'
    assert str(xdg / 'sequence-ai' / 'credentials') in found[1][1]
    assert warm.stats()['requests'] == before


def test_gateway_down(xdg):
    url = f'http://127.0.0.1:{free_port()}'
    result = run_cli('doctor', '--base-url', url, key=GOOD, xdg=xdg)
    assert result.returncode == 11
    found = verdicts(result.stdout)
    assert list(found) == [1, 2] and found[2][0] == 'FAIL'
    assert url in found[2][1] and 'sequence-ai-ros gateway' in found[2][1]


def test_unknown_model_lists_the_real_ones(warm, xdg):
    result = doctor(warm, '--model', 'pi99-droid', key=GOOD, xdg=xdg)
    assert result.returncode == 12
    found = verdicts(result.stdout)
    assert list(found) == [1, 2, 3] and found[3][0] == 'FAIL'
    assert 'pi99-droid' in found[3][1]
    assert all(name in found[3][1] for name in MODELS)


def test_invalid_key_is_401(warm, xdg):
    result = doctor(warm, key=BOGUS, xdg=xdg)
    assert result.returncode == 13
    found = verdicts(result.stdout)
    assert list(found) == [1, 2, 3, 4] and found[4][0] == 'FAIL' and '401' in found[4][1]
    assert f'seq_…{BOGUS[-4:]}' in found[1][1]


def test_no_credit_is_402(warm, xdg):
    result = doctor(warm, key=ZERO, xdg=xdg)
    assert result.returncode == 14
    found = verdicts(result.stdout)
    assert found[4][0] == 'OK' and found[5][0] == 'FAIL' and '402' in found[5][1]
    assert 6 not in found
    assert key_stats(warm, ZERO, 2) == {'acts': 0, 'credit_left': 0}


def test_request_too_large_is_refused_with_the_servers_message(xdg):
    with GatewayProcess(['--time-scale', '0.02', '--start-warm', '--max-body-bytes', '1000'],
                        keys={GOOD: 10}) as gateway:
        result = doctor(gateway, key=GOOD, xdg=xdg)
    assert result.returncode == 15
    status, text = verdicts(result.stdout)[5]
    assert status == 'FAIL' and '413' in text and '1000' in text


def test_server_error_on_the_test_call(xdg):
    with GatewayProcess(['--time-scale', '0.02', '--start-warm',
                         '--policy', 'unit.test_cli:make_broken_policy'], keys={GOOD: 10},
                        import_paths=[TEST_DIR]) as gateway:
        result = doctor(gateway, key=GOOD, xdg=xdg)
        assert key_stats(gateway, GOOD, 1) == {'acts': 0, 'credit_left': 10}
    assert result.returncode == 16
    status, text = verdicts(result.stdout)[4]
    assert status == 'FAIL' and '500' in text and 'plug-in exploded' in text


# -- doctor: warmth -------------------------------------------------------------------------

def test_cold_model_warns_with_the_eta_and_exits_20(cold, xdg):
    result = doctor(cold, '--model', 'pi05-droid', key=GOOD, xdg=xdg)
    assert result.returncode == 20, result.stdout
    found = verdicts(result.stdout)
    assert [found[n][0] for n in range(1, 8)] == ['OK'] * 6 + ['WARN']
    eta = re.search(r'ready in about ([\d.]+) s', found[7][1])
    assert eta and 0 < float(eta[1]) <= 0.5
    assert '--wait' in found[7][1]
    assert cold.stats()['models']['accounts/sequences/models/pi05-droid']['state'] == 'warming'
    assert key_stats(cold, GOOD, 1)['acts'] == 0


def test_wait_warms_the_model_then_passes(cold, xdg):
    model = 'accounts/sequences/models/lingbot-va-5b'
    assert cold.stats()['models'][model]['state'] == 'cold'
    started = time.monotonic()
    result = doctor(cold, '--model', 'lingbot-va-5b', '--wait', '30', key=GOOD, xdg=xdg)
    assert result.returncode == 0, result.stdout
    assert time.monotonic() - started >= 0.45  # it really waited out the 0.5 s warm-up
    status, text = verdicts(result.stdout)[7]
    assert status == 'OK' and 'warm-up' in text
    assert cold.stats()['models'][model]['state'] == 'warm'


def test_wait_gives_up_at_its_limit(cold, xdg):
    result = doctor(cold, '--model', 'cosmos3-edge-policy-droid', '--wait', '0.1', key=GOOD,
                    xdg=xdg)
    assert result.returncode == 20
    status, text = verdicts(result.stdout)[7]
    assert status == 'WARN' and 'still warming after waiting' in text


# -- TLS with a private CA: --ca-file ------------------------------------------------------

def test_doctor_fails_check_2_on_an_untrusted_certificate_and_ca_file_fixes_it(
        tls_gateway, tls_files, xdg):
    result = doctor(tls_gateway, key=MAIN_KEY, xdg=xdg)
    assert result.returncode == 11, result.stdout + result.stderr
    assert result.stderr == ''  # a verdict, not a traceback
    found = verdicts(result.stdout)
    assert list(found) == [1, 2] and found[2][0] == 'FAIL'
    assert f'TLS certificate of {tls_gateway.base_url} is not trusted' in found[2][1]
    assert 'self-signed certificate' in found[2][1] and 'hint: pass --ca-file PATH' in found[2][1]
    before = tls_gateway.stats()['connections']
    result = doctor(tls_gateway, '--ca-file', tls_files[0], key=MAIN_KEY, xdg=xdg)
    assert result.returncode == 0, result.stdout + result.stderr
    found = verdicts(result.stdout)
    # Every connection trusted the CA file: the public client, each fresh latency sample
    # and the act call each made one, and none failed.
    assert [found[n][0] for n in range(1, 8)] == ['OK'] * 7, result.stdout
    assert f'(CA file {tls_files[0]})' in result.stdout.splitlines()[0]
    assert tls_gateway.stats()['connections'] - before == SAMPLES + 2


def test_doctor_names_the_fix_when_a_ca_file_does_not_help(tls_gateway, tls_files, xdg):
    import certifi  # httpx's own dependency: a real bundle that does not hold our CA

    result = doctor(tls_gateway, '--ca-file', certifi.where(), key=MAIN_KEY, xdg=xdg)
    assert result.returncode == 11
    status, text = verdicts(result.stdout)[2]
    assert status == 'FAIL' and 'not trusted' in text
    assert f'--ca-file {certifi.where()} does not sign this certificate' in text
    # Trusted, but issued for 127.0.0.1 only: the CA file is not what needs fixing.
    url = tls_gateway.base_url.replace('127.0.0.1', 'localhost')
    result = run_cli('doctor', '--base-url', url, '--ca-file', tls_files[0], key=MAIN_KEY, xdg=xdg)
    status, text = verdicts(result.stdout)[2]
    assert result.returncode == 11 and status == 'FAIL' and "not valid for 'localhost'" in text
    assert 'names another host' in text


def test_models_over_tls_needs_the_ca_file(tls_gateway, tls_files, xdg):
    result = run_cli('models', '--base-url', tls_gateway.base_url, xdg=xdg)
    assert result.returncode == 1 and result.stdout == ''
    assert 'not trusted (self-signed certificate)' in result.stderr
    assert '--ca-file' in result.stderr and 'Traceback' not in result.stderr
    result = run_cli('models', '--base-url', tls_gateway.base_url, '--ca-file', tls_files[0],
                     xdg=xdg)
    assert result.returncode == 0, result.stderr
    assert [row.split()[0] for row in result.stdout.splitlines()[1:]] == list(MODELS)


@pytest.mark.parametrize('command', ['models', 'doctor'])
def test_an_unusable_ca_file_is_a_usage_error(command, tls_files, tmp_path, xdg):
    for path in (str(tmp_path / 'missing.pem'), tls_files[1]):  # absent; a key, no certificate
        result = run_cli(command, '--ca-file', path, key=MAIN_KEY, xdg=xdg)
        assert result.returncode == 2
        assert f'--ca-file: cannot use {path!r} as a CA file' in result.stderr


# -- the key: where it came from, never what it is ------------------------------------------

def write_key(path, key, mode):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'# robot key\n{key}\n')
    path.chmod(mode)
    return path


def test_key_from_the_credentials_file_and_its_mode(xdg):
    credentials = write_key(xdg / 'sequence-ai' / 'credentials', GOOD, 0o644)
    down = f'http://127.0.0.1:{free_port()}'
    result = run_cli('doctor', '--base-url', down, xdg=xdg)
    status, text = verdicts(result.stdout)[1]
    assert status == 'WARN' and f'credentials file {credentials}' in text
    assert 'chmod 600' in text and f'seq_…{GOOD[-4:]}' in text
    credentials.chmod(0o600)
    result = run_cli('doctor', '--base-url', down, xdg=xdg)
    assert verdicts(result.stdout)[1][0] == 'OK'


def test_key_precedence_names_the_winner_and_the_ignored(xdg, tmp_path):
    write_key(xdg / 'sequence-ai' / 'credentials', OTHER, 0o600)
    down = f'http://127.0.0.1:{free_port()}'
    result = run_cli('doctor', '--base-url', down, key=MAIN_KEY, xdg=xdg)
    text = verdicts(result.stdout)[1][1]
    assert text.startswith(f'key        seq_…{GOOD[-4:]} from environment')
    assert 'ignored, different: credentials file' in text and f'seq_…{OTHER[-4:]}' in text
    key_file = write_key(tmp_path / 'robot.key', ZERO, 0o600)
    result = run_cli('doctor', '--base-url', down, '--api-key-file', str(key_file), key=MAIN_KEY,
                     xdg=xdg)
    text = verdicts(result.stdout)[1][1]
    assert f'seq_…{ZERO[-4:]} from --api-key-file {key_file}' in text
    result = run_cli('doctor', '--base-url', down, '--api-key-file', str(tmp_path / 'nope'),
                     key=MAIN_KEY, xdg=xdg)
    assert result.returncode == 10 and 'does not exist' in result.stdout


def test_a_key_in_a_server_message_is_masked_before_printing():
    out = io.StringIO()
    report = Doctor(DoctorOptions(base_url='http://127.0.0.1:1'), out=out)
    report.key = GOOD
    report.line('FAIL', 4, 'key valid', f'401 unknown key {GOOD}')
    assert GOOD not in out.getvalue() and f'seq_…{GOOD[-4:]}' in out.getvalue()


# -- help, delegation, imports --------------------------------------------------------------

def test_doctor_help_documents_every_exit_code_and_the_credit(xdg):
    result = run_cli('doctor', '--help', xdg=xdg)
    assert result.returncode == 0
    for code, meaning in EXIT_CODES:
        assert re.search(rf'^\s+{code}\s+{re.escape(meaning[:30])}', result.stdout, re.M)
    assert 'costs one credit' in result.stdout and '--no-act' in result.stdout


def test_version_and_usage_errors(xdg):
    result = run_cli('--version', xdg=xdg)
    assert result.returncode == 0 and re.fullmatch(r'sequence-ai-ros \d+\.\d+\.\d+\n',
                                                   result.stdout)
    assert run_cli(xdg=xdg).returncode == 2
    assert run_cli('doctor', '--samples', '0', xdg=xdg).returncode == 2


def test_gateway_subcommand_serves_the_contract(xdg):
    port = free_port()
    env = {k: v for k, v in child_env().items() if k != 'SEQUENCE_AI_ROS_GATEWAY_KEYS'}
    proc = subprocess.Popen([sys.executable, '-m', 'sequence_ai_ros.cli', 'gateway',
                             '--port', str(port), '--time-scale', '0.02', '--log-level', 'error'],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, 'gateway exited'
            try:
                health = httpx.get(f'http://127.0.0.1:{port}/v1/health', timeout=1).json()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, 'gateway never answered'
                time.sleep(0.05)
        assert health == {'status': 'ok', 'backend': 'local', 'auth': 'disabled'}
    finally:
        proc.terminate()
        proc.wait(10)
    usage = run_cli('gateway', '--help', xdg=xdg)
    assert usage.returncode == 0 and usage.stdout.startswith('usage: sequence-ai-ros gateway')


def test_proxy_subcommand_relays_over_a_slow_link(warm, xdg):
    env = {k: v for k, v in child_env().items() if not k.startswith('SEQUENCES_')}
    proc = subprocess.Popen([sys.executable, '-m', 'sequence_ai_ros.cli', 'proxy', '--upstream',
                             f'127.0.0.1:{warm.port}', '--latency-ms', '50', '--jitter-ms', '5',
                             '--bandwidth-kbps', '8000'],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = proc.stdout.readline()
        url = re.match(r'proxy (http://127\.0\.0\.1:\d+) -> 127\.0\.0\.1:(\d+): latency 50 ms',
                       banner)
        assert url and int(url[2]) == warm.port, banner + proc.stderr.read()
        with httpx.Client(base_url=url[1], timeout=10) as client:
            client.get('/v1/health')
            began = time.monotonic()
            assert client.get('/v1/health').json()['status'] == 'ok'
            assert time.monotonic() - began >= 0.1  # 50 ms each way on the kept-alive connection
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert 'relayed 1 connections, 2 plain-HTTP requests' in out
    refused = run_cli('proxy', '--upstream', '10.0.0.1:80', xdg=xdg)
    assert refused.returncode == 2 and 'not loopback' in refused.stderr
    assert run_cli('proxy', '--upstream', '127.0.0.1', xdg=xdg).returncode == 2


def test_demo_not_built_yet(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, cli.DEMO_MODULE, None)
    assert cli.main(['demo', '--anything']) == 2
    assert 'demo not built yet' in capsys.readouterr().err


def test_demo_delegates_its_arguments(monkeypatch):
    seen = []
    runner = types.ModuleType(cli.DEMO_MODULE)
    runner.main = lambda argv: seen.append(argv) or 7
    monkeypatch.setitem(sys.modules, cli.DEMO_MODULE, runner)
    assert cli.main(['demo', '--duration', '5', '--help']) == 7
    assert seen == [['--duration', '5', '--help']]


def test_importing_the_cli_loads_neither_ros_nor_the_gateway():
    code = ('import sys, sequence_ai_ros.cli; print(sorted(m for m in sys.modules if '
            'm.split(".")[0] in ("rclpy", "starlette", "uvicorn", "numpy", "PIL") '
            'or m.startswith(("sequence_ai_ros.gateway", "sequence_ai_ros.node"))))')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            env=child_env(), check=True)
    assert result.stdout.strip() == '[]'
    assert subprocess.run([sys.executable, '-c', 'import rclpy'],
                          capture_output=True).returncode == 0, 'rclpy missing: test is vacuous'


def test_the_probe_observation_is_valid_for_the_model():
    from PIL import Image

    image = Image.open(io.BytesIO(PLAIN_JPEG))
    assert (image.format, image.size, image.mode) == ('JPEG', (224, 224), 'RGB')
    assert image.getextrema() == ((128, 128),) * 3
    row = {'camera_views': ['exterior_1', 'wrist'], 'action_dim': 8}
    observation = probe_observation(row)
    assert [f['view'] for f in observation['images']] == ['exterior_1', 'wrist']
    assert observation['proprioception'] == {'joint_positions': [0.0] * 7, 'gripper': 0.0}
    assert len(probe_observation({**row, 'joint_count': 6})['proprioception'][
        'joint_positions']) == 6
    with pytest.raises(ValueError):
        probe_observation({'camera_views': []})
