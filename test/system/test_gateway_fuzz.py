"""
Fuzzing the gateway's HTTP API from the openapi.json it serves (schemathesis).

Every operation gets schema-valid and schema-violating requests (schemathesis's examples,
coverage and fuzzing phases) with a key, so /v1/act is exercised past the 401. Every answer
must be documented in openapi.json (status, content type, body schema, headers), no answer may
be a 5xx, and the process must still be alive and healthy at the end.

`positive_data_acceptance` is off: /v1/act's validity depends on the model a body names (its
robot, camera views and action horizon) and on the frames decoding as JPEG or PNG, which one
JSON Schema cannot say, so a schema-valid body can rightly get 404 or 422. The reverse check,
`negative_data_rejection` (what the schema forbids must be refused), stays on.

Random strings rarely name a real model or carry a decodable frame, so a schema-level hook
steers part of the /v1/act bodies towards real model ids, real frames and seven joints, to
reach the checks behind them. Generation is deterministic (derandomized, fixed seed, no
example database), and each operation is bounded by a number of examples.
"""

from collections import Counter
import copy
import json

from fixtures_gateway import encode, MODELS, PREFIX, render_scene, start_gateway
import httpx
from hypothesis import strategies as st
from PIL import Image
import pytest
import schemathesis
from schemathesis.checks import positive_data_acceptance
from sequence_ai_ros.gateway.app import OPENAPI_FILE
from sequence_ai_ros.harness.fault_matrix import FaultRow
from sequence_ai_ros.harness.proc_stats import resident_kib
from sequence_ai_ros.world import arm_model

FUZZ_KEY = 'seq_fuzz_key_for_schemathesis_0001'
SEED = 7_2026
# Per operation: /v1/act is where the parsing and validation are; the GETs are simple.
ACT_EXAMPLES = 1000
OTHER_EXAMPLES = 100
REQUEST_TIMEOUT_S = 20.0
RSS_BOUND_MB = 100
# What the generated requests got, per operation and status; read by the liveness test.
TALLY: dict[str, Counter] = {}
FAILED: list[str] = []
RSS_START_KIB: dict[int, int] = {}

_FRAME = encode(render_scene((0.55, 0.2)))
_WRIST = encode(Image.new('RGB', (224, 224), (40, 40, 40)))
_FRAME_SETS = ([], [('exterior_1', _FRAME)], [('wrist', _WRIST)],
               [('exterior_1', _FRAME), ('wrist', _WRIST)])
_HOME = [float(v) for v in arm_model.HOME]


@pytest.fixture(scope='module')
def fuzz_gateway():
    """Run a keyed gateway that stays warm for the whole run (no 503 warming)."""
    process = start_gateway(['--start-warm', '--idle-cold-s', '1000000', '--seed', '11'],
                            keys={FUZZ_KEY: 10 ** 9})
    RSS_START_KIB[process.pid] = resident_kib(process.pid)
    yield process
    process.close()


def _steer(body: object, choice: int, model: str, frames: list[tuple[str, str]]) -> object:
    """Make a generated /v1/act body reach further: 0 keeps it, 1-3 fix ever more of it."""
    if choice == 0 or not isinstance(body, dict):
        return body
    body = copy.deepcopy(body)
    body['model'] = PREFIX + model
    observation = body.get('observation')
    if choice >= 2 and isinstance(observation, dict):
        observation['images'] = [{'view': view, 'data': data} for view, data in frames]
        proprioception = observation.get('proprioception')
        if choice >= 3 and isinstance(proprioception, dict):
            proprioception['joint_positions'] = list(_HOME)
    return body


def flatmap_case(context: schemathesis.HookContext, case: schemathesis.Case) -> st.SearchStrategy:
    """Let Hypothesis pick how much of a /v1/act body to make real (a schema hook)."""
    if case.operation.path != '/v1/act':
        return st.just(case)
    original = case.body

    def steered(choice: tuple[int, str, list[tuple[str, str]]]) -> schemathesis.Case:
        # Assigning the body makes schemathesis re-judge whether the case is schema-valid.
        case.body = _steer(original, *choice)
        return case

    # Most bodies go deep; a quarter keep their generated model (unknown, missing, wrong type).
    return st.tuples(st.sampled_from((0, 1, 2, 3)), st.sampled_from(MODELS),
                     st.sampled_from(_FRAME_SETS)).map(steered)


# Loaded from the package's file at import, as the pytest integration needs; the liveness test
# checks that the gateway serves exactly this file. The port is only known once the gateway
# runs, so each call is given the base URL.
SCHEMA = schemathesis.openapi.from_path(OPENAPI_FILE, config=schemathesis.Config.from_dict({
    'seed': SEED,
    # Generation can be slow on a loaded CI machine; that is not what this test is about.
    'suppress-health-check': ['too_slow'],
    'headers': {'Authorization': f'Bearer {FUZZ_KEY}'},
    'request-timeout': REQUEST_TIMEOUT_S,
    'generation': {'mode': 'all', 'max-examples': OTHER_EXAMPLES, 'deterministic': True,
                   'database': 'none'},
    'operations': [{'include-path': '/v1/act', 'generation': {
        'mode': 'all', 'max-examples': ACT_EXAMPLES, 'deterministic': True, 'database': 'none'}}],
    'checks': {'positive_data_acceptance': {'enabled': False}},
    'phases': {'stateful': {'enabled': False}},
}))
SCHEMA.hook(flatmap_case)


@SCHEMA.parametrize()
def test_fuzzed_requests_get_documented_answers(case, fuzz_gateway):
    sent = {'base_url': fuzz_gateway.base_url, 'timeout': REQUEST_TIMEOUT_S}
    try:
        response = case.call(**sent)
        TALLY.setdefault(case.operation.label, Counter())[response.status_code] += 1
        case.validate_response(response, excluded_checks=[positive_data_acceptance],
                               transport_kwargs=sent)
    except Exception as error:
        FAILED.append(f'{case.operation.label}: {type(error).__name__}')
        raise


def test_the_gateway_is_alive_and_healthy_after_fuzzing(fuzz_gateway, fault_matrix):
    assert TALLY, 'run the whole file: the fuzzing tests above must run first'
    served = httpx.get(fuzz_gateway.base_url + '/openapi.json', timeout=5.0).json()
    assert served == json.loads(OPENAPI_FILE.read_text(encoding='utf-8')), \
        'GET /openapi.json differs from sequence_ai_ros/gateway/openapi.json'
    assert not FAILED, f'fuzzing found failures: {sorted(set(FAILED))}'
    assert fuzz_gateway.running(), fuzz_gateway.log()[-4000:]
    health = httpx.get(fuzz_gateway.base_url + '/v1/health', timeout=5.0)
    assert health.status_code == 200 and health.json()['status'] == 'ok'
    stats = fuzz_gateway.stats()
    # The gateway's own counters include the extra requests the checks send.
    seen = Counter()
    for statuses in stats['requests'].values():
        seen.update({int(code): n for code, n in statuses.items()})
    assert not [code for code in seen if code >= 500], stats['requests']
    log = fuzz_gateway.log()
    assert 'Traceback' not in log and ' ERROR ' not in log, log[-4000:]
    growth_mb = (resident_kib(fuzz_gateway.pid) - RSS_START_KIB[fuzz_gateway.pid]) / 1024
    assert growth_mb < RSS_BOUND_MB
    generated = sum(sum(counts.values()) for counts in TALLY.values())
    act = TALLY.get('POST /v1/act', Counter())
    fault_matrix.record(FaultRow(
        area='fuzz', case=f'schemathesis: {generated} requests generated from openapi.json',
        outcome=f'no 5xx, schema-conformant, gateway alive; /v1/act got {act[200]} x 200 and '
                f'{sum(act.values()) - act[200]} refusals (4xx); RSS {growth_mb:+.1f} MB',
        extra={'per_operation': {label: dict(sorted(counts.items()))
                                 for label, counts in sorted(TALLY.items())},
               'requests_seen_by_gateway': sum(seen.values()),
               'statuses_seen_by_gateway': dict(sorted(seen.items())),
               'max_examples': {'act': ACT_EXAMPLES, 'others': OTHER_EXAMPLES}, 'seed': SEED,
               'rss_growth_mb': round(growth_mb, 1)}))
