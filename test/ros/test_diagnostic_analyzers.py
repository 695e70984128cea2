"""
config/diagnostic_analyzers.yaml: what diagnostic_aggregator makes of the node's statuses.

rqt_robot_monitor shows /diagnostics_agg, which diagnostic_aggregator builds from /diagnostics
with the analyzers of this file. GenericAnalyzer below applies the rules of ros/diagnostics'
GenericAnalyzer (ros2 branches): diagnostic_aggregator/src/generic_analyzer.cpp (init(): the
parameters read, in the std::map's name order, and the refusal of an analyzer that cannot
match anything; match(): regex, startswith, contains) and
include/diagnostic_aggregator/status_item.hpp (getOutputName, removeLeadingNameChaff: how a
status is named in the tree). In those sources `expected` only pre-creates items (shown stale
until received); it neither selects statuses nor counts as a way of matching.
"""

from pathlib import Path
import re

import pytest
import rclpy
from rclpy.node import Node
from sequence_ai_ros.node.diagnostics import build_statuses, Health
import yaml

REPO = Path(__file__).resolve().parents[2]
ANALYZERS = REPO / 'config/diagnostic_analyzers.yaml'
# The node name upstream's aggregator_node runs as, and the launch file keeps.
AGGREGATOR_NODE = 'analyzers'
GENERIC = 'diagnostic_aggregator/GenericAnalyzer'
GENERIC_KEYS = {'type', 'path', 'find_and_remove_prefix', 'remove_prefix', 'startswith',
                'contains', 'expected', 'regex', 'timeout', 'num_items', 'discard_stale'}
NODE = 'policy_node'


def output_name(name):
    """Return a status name as an item of the tree: slashes become spaces."""
    return name.replace('/', ' ')


def remove_leading_chaff(name, chaff):
    """Drop `chaff` from the start of the last path element, then a ':' and spaces."""
    if not chaff:
        return name
    slash = name.rfind('/')
    head, last = name[:slash + 1], name[slash + 1:]
    if last.startswith(chaff):
        last = last[len(chaff):]
    if last.startswith(':'):
        last = last[1:]
    return head + last.lstrip(' ')


class GenericAnalyzer:
    """The selection and naming rules of diagnostic_aggregator's GenericAnalyzer."""

    def __init__(self, base_path, params):
        self.startswith, self.contains, self.regex, self.chaff = [], [], [], []
        self.expected = []
        self.path = params['path']
        for key in sorted(params):  # rclcpp hands them over as a std::map, in name order
            value = params[key]
            if key == 'find_and_remove_prefix':
                self.chaff, self.startswith = list(value), list(value)
            elif key == 'remove_prefix':
                self.chaff = list(value)
            elif key == 'startswith':
                self.startswith = list(value)
            elif key == 'contains':
                self.contains = list(value)
            elif key == 'regex':
                self.regex = [re.compile(pattern) for pattern in value]
            elif key == 'expected':
                self.expected = list(value)
        if not (self.startswith or self.contains or self.regex):
            raise ValueError(f'GenericAnalyzer {self.path!r} was not initialized with any way '
                             'of checking diagnostics')
        self.chaff = [output_name(c) for c in self.chaff]
        self.full_path = f'{base_path}/{self.path}'

    def match(self, name):
        return (any(r.fullmatch(name) for r in self.regex)
                or any(name.startswith(s) for s in self.startswith)
                or any(c in name for c in self.contains))

    def shown_as(self, name):
        shown = f'{self.full_path}/{output_name(name)}'
        for chaff in self.chaff:
            shown = remove_leading_chaff(shown, chaff)
        return shown


@pytest.fixture(scope='module')
def parameters():
    """Return the aggregator's parameters from the file: ros__parameters of its node."""
    document = yaml.safe_load(ANALYZERS.read_text())
    assert list(document) == [AGGREGATOR_NODE], 'written for the node named analyzers'
    return document[AGGREGATOR_NODE]['ros__parameters']


@pytest.fixture(scope='module')
def analyzers(parameters):
    base = '/' + parameters['path']
    found = []
    for name, params in parameters.items():
        if isinstance(params, dict):
            assert params.get('type') == GENERIC, f'{name}: only GenericAnalyzers here'
            assert set(params) <= GENERIC_KEYS, set(params) - GENERIC_KEYS
            found.append(GenericAnalyzer(base, params))
    return found


def node_status_names(node=NODE):
    return [s.name for s in build_statuses(Health(), node, f'/{node}')]


def test_rcl_reads_the_file_as_the_aggregator_node_s_parameters():
    # The same parser the aggregator's rclcpp uses; it declares every parameter it is given.
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = Node(AGGREGATOR_NODE, context=context,
                    cli_args=['--ros-args', '--params-file', str(ANALYZERS)],
                    allow_undeclared_parameters=True,
                    automatically_declare_parameters_from_overrides=True)
        values = {name: p.value for name, p in node.get_parameters_by_prefix('').items()}
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
    assert values['policy.type'] == GENERIC
    assert values['policy.startswith'] == [f'{NODE}: ']
    assert isinstance(values['policy.timeout'], float)
    assert isinstance(values['pub_rate'], float)


def test_every_status_of_the_node_lands_in_one_analyzer_under_its_own_name(analyzers):
    names = node_status_names()
    assert [n.split(': ', 1)[1] for n in names] == ['gateway', 'buffer', 'inputs', 'episode']
    for name in names:
        matched = [a for a in analyzers if a.match(name)]
        assert len(matched) == 1, f'{name}: {[a.path for a in matched]}'
        assert matched[0].shown_as(name) == f'/Robot/Policy/{name.split(": ", 1)[1]}'


def test_the_expected_items_are_the_node_s_statuses(analyzers):
    (policy,) = analyzers
    # Each shows as stale until the node publishes it: a node that is down stands out.
    assert sorted(policy.expected) == sorted(node_status_names())


@pytest.mark.parametrize('name', ['sim_arm: joints', 'controller_manager: policy_node',
                                  'policy_node_watchdog: gateway', 'gateway'])
def test_other_nodes_statuses_are_left_to_other_analyzers(analyzers, name):
    assert not any(a.match(name) for a in analyzers)


def test_an_analyzer_that_cannot_match_anything_is_refused_as_upstream_does():
    with pytest.raises(ValueError, match='any way of checking'):
        GenericAnalyzer('/Robot', {'type': GENERIC, 'path': 'X', 'expected': ['a: b']})


def test_remove_prefix_shortens_the_name_as_upstream_documents():
    # status_item.hpp's own example: "/Hokuyo/Tilt HK/tilt_node: Connection".
    assert remove_leading_chaff('/Hokuyo/Tilt HK/tilt_node: Connection', 'tilt_node') == \
        '/Hokuyo/Tilt HK/Connection'
