"""
API keys never leak: not into responses, headers, logs or stats (reliability).

The module-level helpers (`leak_forms`, `find_secret`, `assert_no_secret`, `response_text`)
are shared by every part of this file. Parts:

- client: every error path's str, repr, attributes and traceback, the Policy's repr and the
  debug logs of httpx/httpcore; the credentials file's mode under umask 0.
- node: a node whose key is refused: its log, /diagnostics, episode outcome and parameters.
- gateway: a keyed gateway at `--log-level debug` serving the plug-in policy (so a 500 can be
  provoked) gets the right key, near-miss keys, keys in odd places and every error path; then
  every response and the whole log are searched for every key sent, and /v1/_local/stats must
  name keys only in masked form.
"""

import base64
import json
import logging
import os
import re
import socket
import stat
import traceback
from urllib.parse import quote

from fixtures_gateway import act_body, gateway_fixture, TEST_DIR, TIME_SCALE
import httpx
import observations as obs_module
import pytest
from ros_harness import (
    node_parameters,
    outcome_after,
    PolicyNodeProcess,
    Robot,
    wait_until,
)
import sequence_ai_ros as sai
from sequence_ai_ros.client import write_credentials_file
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.fault_matrix import FaultRow
from sequence_ai_ros.harness.ros_side import RosSide

# -- helpers for every part ---------------------------------------------------------------------


def leak_forms(secret: str) -> dict[str, str]:
    """
    Return the forms in which `secret` would count as leaked, by name.

    The whole key; the part a mask hides (all but the last four characters), which catches a
    truncated echo; its URL-quoted form; and its base64 form at each of the three alignments
    (as in `Authorization: Basic ...`), trimmed to the characters that depend only on the key.
    """
    forms = {'verbatim': secret, 'url-quoted': quote(secret, safe='')}
    if len(secret) >= 16:
        forms['unmasked part'] = secret[:-4]
    for offset in range(3):
        encoded = base64.b64encode(b'\0' * offset + secret.encode()).decode()
        forms[f'base64 (offset {offset})'] = encoded[4:-4]
    return forms


def masked(secret: str) -> str:
    """Name a secret in a failure message without printing it."""
    return f'{secret[:4]}…{secret[-2:]} ({len(secret)} chars)'


def find_secret(text: str, *secrets: str) -> str | None:
    """Describe the first leak of any of `secrets` in `text` (never quoting it), else None."""
    for secret in secrets:
        for form, needle in leak_forms(secret).items():
            at = text.find(needle)
            if at >= 0:
                before = text[max(0, at - 40):at].replace('\n', ' ')
                return f'key {masked(secret)} found {form} at offset {at}, after {before!r}'
    return None


def assert_no_secret(text: str, *secrets: str, where: str = 'text') -> None:
    """Raise AssertionError saying where and in what form a secret leaked (never quoting it)."""
    leak = find_secret(text, *secrets)
    if leak is not None:
        raise AssertionError(f'{where}: {leak}')


def response_text(response: httpx.Response) -> str:
    """Return the status line, every header and the body of a response, as one text to search."""
    headers = '\n'.join(f'{name}: {value}' for name, value in response.headers.items())
    return f'{response.status_code} {response.reason_phrase}\n{headers}\n\n{response.text}'


# -- gateway ------------------------------------------------------------------------------------

VALID_KEY = 'seq_secret_test_key_valid_0000000001'
ONE_CREDIT_KEY = 'seq_secret_test_key_one_credit_0002'
SHORT_KEY = 'seq_short_k3'
GATEWAY_KEYS = {VALID_KEY: 10_000, ONE_CREDIT_KEY: 1, SHORT_KEY: 10}
# Keys a careless or hostile client sends: one character off, one too many, one too few.
NEAR_MISSES = (VALID_KEY[:-1] + '2', VALID_KEY + '0', VALID_KEY[:-1],
               'seq_secret_test_key_valid_0000000009')
SENT = (*GATEWAY_KEYS, *NEAR_MISSES)
MASK = re.compile(r'^seq_…([^\s]{4}|#\d+)$')


secrets_gateway = gateway_fixture(
    ['--time-scale', str(TIME_SCALE), '--start-warm', '--log-level', 'debug',
     '--max-body-bytes', '300000', '--policy', 'fixtures_gateway:make_plugin_policy'],
    name='secrets_gateway', keys=GATEWAY_KEYS, import_paths=[TEST_DIR],
    doc='A keyed gateway at debug level serving fixtures_gateway.PluginPolicy (for 500s).')


def _bearer(key: str) -> dict[str, str]:
    return {'Authorization': f'Bearer {key}'}


def _send(gateway, method: str, path: str, headers: dict[str, str] | None = None,
          **kwargs: object) -> httpx.Response:
    with httpx.Client(base_url=gateway.base_url, timeout=15.0) as client:
        return client.request(method, path, headers=headers, **kwargs)


def _check_everything(gateway, responses: list[httpx.Response]) -> int:
    """Search every response, the whole log and the stats for every key sent; return log size."""
    for response in responses:
        assert_no_secret(response_text(response), *SENT,
                         where=f'{response.request.method} {response.request.url.path} '
                               f'-> {response.status_code}')
    log = gateway.log()
    assert 'DEBUG' in log, 'the gateway is not logging at debug level'
    assert_no_secret(log, *SENT, where='gateway log')
    assert_no_secret(json.dumps(gateway.stats(), ensure_ascii=False), *SENT,
                     where='/v1/_local/stats')
    return len(log)


def test_right_and_near_miss_keys(secrets_gateway, fault_matrix):
    body = act_body()
    responses = [_send(secrets_gateway, 'POST', '/v1/act', _bearer(VALID_KEY), json=body)]
    assert responses[0].status_code == 200
    for key in NEAR_MISSES:
        responses.append(_send(secrets_gateway, 'POST', '/v1/act', _bearer(key), json=body))
    basic = base64.b64encode(f'{VALID_KEY}:'.encode()).decode()
    for authorization in (f'Token {VALID_KEY}', f'Basic {basic}', VALID_KEY,
                          f'Bearer {VALID_KEY} {VALID_KEY}', f'Bearer\t{NEAR_MISSES[0]}'):
        responses.append(_send(secrets_gateway, 'POST', '/v1/act',
                               {'Authorization': authorization}, json=body))
    assert [r.status_code for r in responses[1:]] == [401] * (len(responses) - 1)
    log_chars = _check_everything(secrets_gateway, responses)
    fault_matrix.record(FaultRow(
        area='secrets', case=f'right key, {len(NEAR_MISSES)} near-miss keys (a character off, '
        'extra, missing) and 5 malformed Authorization headers (Token, Basic, no scheme, '
        'twice, tab)', outcome=f'200 / {len(responses) - 1} x 401; no key in any response, in '
        f'the debug log ({log_chars} chars) or in stats', extra={'requests': len(responses)}))


def test_keys_in_odd_places(secrets_gateway, fault_matrix):
    responses = []

    def send(method: str, path: str, headers: dict[str, str] | None = None,
             **kwargs: object) -> httpx.Response:
        response = _send(secrets_gateway, method, path, headers, **kwargs)
        responses.append(response)
        return response

    # The query string, with and without a proper header.
    assert send('POST', f'/v1/act?api_key={VALID_KEY}', json=act_body()).status_code == 401
    assert send('POST', f'/v1/act?key={VALID_KEY}', _bearer(VALID_KEY),
                json=act_body()).status_code == 200
    assert send('GET', f'/v1/models?api_key={VALID_KEY}').status_code == 200
    assert send('GET', f'/v1/health?token={NEAR_MISSES[0]}').status_code == 200
    # Other headers and the path.
    for headers in ({'X-API-Key': VALID_KEY}, {'Cookie': f'api_key={VALID_KEY}'},
                    {'Proxy-Authorization': f'Bearer {VALID_KEY}'}):
        assert send('POST', '/v1/act', headers, json=act_body()).status_code == 401
    assert send('GET', f'/v1/models/{VALID_KEY}').status_code == 404
    assert send('POST', f'/v1/act/{VALID_KEY}', _bearer(VALID_KEY)).status_code == 404
    # The body: as an option's value and name, and in every field the gateway quotes back.
    auth = _bearer(VALID_KEY)
    response = send('POST', '/v1/act', auth, json=act_body(api_key=VALID_KEY,
                                                           **{NEAR_MISSES[1]: 1}))
    assert response.status_code == 200
    assert any('seq_[redacted]' in w for w in response.json()['warnings'])
    quoted = {'model': 404, 'robot': 422}
    for field, status in quoted.items():
        body = act_body()
        body[field] = VALID_KEY
        assert send('POST', '/v1/act', auth, json=body).status_code == status
    body = act_body()
    body['observation']['images'][0]['view'] = NEAR_MISSES[2]
    assert send('POST', '/v1/act', auth, json=body).status_code == 422
    body = act_body()
    body['observation']['instruction'] = f'use {VALID_KEY} please'
    assert send('POST', '/v1/act', auth, json=body).status_code == 200
    assert send('POST', '/v1/act', {**auth, 'Content-Type': f'text/{VALID_KEY}'},
                content=json.dumps(act_body()).encode()).status_code == 415
    # A header line without its colon: refused by uvicorn before the app runs.
    with socket.create_connection((secrets_gateway.host, secrets_gateway.port), 10) as sock:
        sock.sendall(f'POST /v1/act HTTP/1.1\r\nHost: x\r\nAuthorization {VALID_KEY}\r\n'
                     f'Content-Length: 2\r\n\r\n{{}}'.encode())
        raw = sock.recv(65536).decode('latin-1')
    assert raw.startswith('HTTP/1.1 400')
    assert_no_secret(raw, *SENT, where='answer to a malformed header line')
    log_chars = _check_everything(secrets_gateway, responses)
    fault_matrix.record(FaultRow(
        area='secrets', case='keys in odd places: query string, X-API-Key, Cookie, '
        'Proxy-Authorization, URL path, option value and name, model, robot, view, '
        'instruction, Content-Type, a header line without a colon',
        outcome=f'{len(responses) + 1} answers (200/401/404/415/422/400); fields the gateway '
        "quotes show 'seq_[redacted]'; no key in any response, in the debug log "
        f'({log_chars} chars) or in stats', extra={'requests': len(responses) + 1}))


def test_error_paths_carry_no_key(secrets_gateway, fault_matrix):
    statuses = {}
    responses = []

    def act(name: str, key: str, **kwargs: object) -> None:
        response = _send(secrets_gateway, 'POST', '/v1/act', _bearer(key), **kwargs)
        responses.append(response)
        statuses[name] = response.status_code

    act('200 (the one credit)', ONE_CREDIT_KEY, json=act_body())
    act('402', ONE_CREDIT_KEY, json=act_body())
    act('401', NEAR_MISSES[3], json=act_body())
    bad = act_body()
    bad['observation']['proprioception']['joint_positions'] = [VALID_KEY] * 7
    act('422', VALID_KEY, json=bad)
    act('413', VALID_KEY, content=b'{"pad": "' + VALID_KEY.encode() * 10_000 + b'"}')
    act('400', VALID_KEY, content=f'{{"model": "{VALID_KEY}"'.encode())
    for mode in ('raise', 'shape', 'nan'):
        body = act_body()
        body['observation']['instruction'] = mode
        act(f'500 ({mode})', VALID_KEY, json=body)
    act('200 (short key)', SHORT_KEY, json=act_body())
    assert statuses == {
        '200 (the one credit)': 200, '402': 402, '401': 401, '422': 422, '413': 413, '400': 400,
        '500 (raise)': 500, '500 (shape)': 500, '500 (nan)': 500, '200 (short key)': 200}
    assert 'plug-in exploded' in secrets_gateway.log()  # the 500s were logged...
    log_chars = _check_everything(secrets_gateway, responses)  # ...without a key
    fault_matrix.record(FaultRow(
        area='secrets', case='every error path with a key sent: 401, 402, 413, 400, 422, '
        '500 (plug-in raised, wrong shape, NaN)', outcome='no key in any error body or header, '
        f'in the debug log with the plug-in traceback ({log_chars} chars) or in stats',
        extra={'statuses': statuses}))


def test_local_stats_show_only_masked_keys(secrets_gateway, fault_matrix):
    assert _send(secrets_gateway, 'POST', '/v1/act', _bearer(VALID_KEY),
                 json=act_body()).status_code == 200
    response = _send(secrets_gateway, 'GET', '/v1/_local/stats')
    assert response.status_code == 200
    assert_no_secret(response_text(response), *SENT, where='/v1/_local/stats')
    names = sorted(response.json()['keys'])
    assert len(names) == len(GATEWAY_KEYS)
    assert all(MASK.match(name) for name in names), names
    assert 'seq_…0001' in names and 'seq_…#3' in names  # the short key shows no characters
    fault_matrix.record(FaultRow(
        area='secrets', case='/v1/_local/stats after calls with every key',
        outcome=f'keys shown only masked: {", ".join(names)}'))


# -- client -------------------------------------------------------------------------------------

CLIENT_KEY = 'seq_secret_test_client_key_000000003'  # not a key of the gateway: 401


def _everything_about(error: BaseException) -> str:
    """Return every text a user could see of an error: str, repr, attributes, traceback."""
    parts = [str(error), repr(error), ''.join(traceback.format_exception(
        type(error), error, error.__traceback__))]
    parts += [str(value) for value in vars(error).values()]
    return '\n'.join(parts)


def test_client_errors_reprs_and_logs_carry_no_key(secrets_gateway, tls_files, caplog,
                                                   fault_matrix):
    caplog.set_level(logging.DEBUG)  # httpx and httpcore log every request at debug
    cert, key = tls_files
    seen = []
    with GatewayProcess(['--time-scale', '0.02', '--start-warm'], keys={VALID_KEY: 100},
                        certfile=cert, keyfile=key) as tls_gateway:
        cases = {
            '401 wrong key': (secrets_gateway.base_url, CLIENT_KEY, {}),
            '402 no credit': (secrets_gateway.base_url, ONE_CREDIT_KEY, {}),
            'invalid model': (secrets_gateway.base_url, VALID_KEY, {'model': 'no-such-model'}),
            '500 from the policy': (secrets_gateway.base_url, VALID_KEY,
                                    {'instruction': 'raise'}),
            'unreachable': (f'http://127.0.0.1:{_closed_port()}', VALID_KEY, {}),
            'untrusted certificate': (tls_gateway.base_url, VALID_KEY, {}),
        }
        for name, (base_url, api_key, extra) in cases.items():
            model = extra.get('model', 'pi05-droid')
            with sai.connect(model, base_url=base_url, api_key=api_key,
                             timeout_s=5.0) as policy:
                seen.append(repr(policy))
                observation = obs_module.observation(instruction=extra.get('instruction',
                                                                           'reach'))
                for _ in range(2):  # ONE_CREDIT_KEY: the second call is the 402
                    try:
                        policy.predict(observation)
                    except sai.SequencesError as error:
                        seen.append(_everything_about(error))
                        break
                else:
                    pytest.fail(f'{name}: no error raised')
    joined = '\n'.join(seen + [record.getMessage() for record in caplog.records])
    secrets = (CLIENT_KEY, VALID_KEY, ONE_CREDIT_KEY)
    assert_no_secret(joined, *secrets, where='client errors, reprs and debug logs')
    assert any(r.name.startswith(('httpx', 'httpcore')) for r in caplog.records), \
        'the debug logs of httpx were not captured: the search proved nothing'
    fault_matrix.record(FaultRow(
        area='secrets', case=f'client: {len(cases)} error paths (401, 402, 404, 500, '
        'unreachable, bad certificate), reprs, tracebacks, httpx/httpcore debug logs',
        outcome=f'no key in {len(joined)} characters searched ({len(caplog.records)} log '
        'records)'))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def test_credentials_file_is_private_from_the_first_byte(tmp_path, monkeypatch, fault_matrix):
    monkeypatch.setattr(os, 'umask', os.umask)  # restored whatever happens
    previous = os.umask(0)  # the most permissive umask: the file must not rely on it
    try:
        path = write_credentials_file(CLIENT_KEY, tmp_path / 'sub' / 'credentials')
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    fault_matrix.record(FaultRow(
        area='secrets', case='credentials file written under umask 0',
        outcome='file 0600, its new folder 0700'))


# -- node ---------------------------------------------------------------------------------------

def test_node_logs_diagnostics_outcome_and_parameters_carry_no_key(secrets_gateway,
                                                                   fault_matrix):
    """A node whose key the gateway refuses: everything it says is searched for the key."""
    side = RosSide()
    robot = Robot(side.node, 'secrets', watch_diagnostics=True)
    process = PolicyNodeProcess('secrets', node_parameters(
        # v1: the refusal comes at the first act; on direct, configure's connect is refused
        # (test_node_direct).
        base_url=secrets_gateway.base_url, start_on_activate=False, protocol='v1'),
        {'SEQUENCES_API_KEY': CLIENT_KEY})
    try:
        assert wait_until(robot.change_client.service_is_ready, 20), process.log()
        assert robot.configure() and robot.activate(), process.log()
        assert robot.start_episode().success
        outcome = outcome_after(robot, 0, 15)
        assert outcome is not None and outcome['outcome'] == 'error', outcome
        assert wait_until(lambda: any('refused' in s.message.lower() or 'key' in
                                      s.message.lower() for _, s in robot.diagnostics), 10)
        names = [*node_parameters(), 'api_key_file', 'base_url']
        parameters = {name: robot.get_parameter(name) for name in names}  # messages' reprs
    finally:
        robot.close()
        side.close()
        process.stop()
    texts = {
        'node log': process.log(),
        'diagnostics': '\n'.join(f'{s.name} {s.message} {[(kv.key, kv.value) for kv in s.values]}'
                                 for _, s in robot.diagnostics),
        'episode outcome': json.dumps(outcome),
        'parameters': repr(parameters),
    }
    for where, text in texts.items():
        assert_no_secret(text, CLIENT_KEY, where=where)
    fault_matrix.record(FaultRow(
        area='secrets', case='node with a refused key: log, /diagnostics, episode outcome, '
        'parameters', outcome=f'no key in {sum(map(len, texts.values()))} characters; '
        f'{len(robot.diagnostics)} statuses; episode ended: {outcome["reason"][:60]}'))
