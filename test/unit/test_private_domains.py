"""A private ROS domain: one no DDS participant on this machine has bound, never the caller's."""

import pytest
from sequence_ai_ros.harness import child_processes
from sequence_ai_ros.harness.child_processes import domain_in_use, random_domain_id


def ports_of(domain_id):
    """Return the first two ports Fast DDS binds for a domain's first participant."""
    return {7410 + 250 * domain_id, 7411 + 250 * domain_id}


def test_a_domain_is_in_use_by_its_own_ports_only():
    assert domain_in_use(5, ports_of(5))
    assert not domain_in_use(4, ports_of(5))
    assert not domain_in_use(6, ports_of(5))
    assert domain_in_use(6, {7400 + 250 * 6 + 249})
    assert not domain_in_use(6, {7400 + 250 * 7})


def test_the_choice_skips_every_domain_in_use(monkeypatch):
    busy = set().union(*(ports_of(d) for d in range(1, 101) if d != 42))
    monkeypatch.setattr(child_processes, 'bound_udp_ports', lambda: busy)
    monkeypatch.delenv('ROS_DOMAIN_ID', raising=False)
    assert {random_domain_id() for _ in range(50)} == {42}


@pytest.mark.parametrize('own', ['42', ' 42 '])
def test_the_callers_own_domain_is_never_chosen(monkeypatch, own):
    busy = set().union(*(ports_of(d) for d in range(1, 101) if d not in (42, 43)))
    monkeypatch.setattr(child_processes, 'bound_udp_ports', lambda: busy)
    monkeypatch.setenv('ROS_DOMAIN_ID', own)
    assert {random_domain_id() for _ in range(50)} == {43}
