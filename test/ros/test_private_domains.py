"""What DDS binds is what tells a domain in use: a live participant's domain is never chosen."""

from sequence_ai_ros.harness.child_processes import domain_in_use, random_domain_id
from sequence_ai_ros.harness.ros_side import RosSide


def test_a_live_participant_marks_its_domain_in_use_until_it_closes():
    domain = random_domain_id()
    assert not domain_in_use(domain)
    side = RosSide('domain_probe', domain_id=domain)
    try:
        assert domain_in_use(domain)
        assert domain not in {random_domain_id() for _ in range(300)}
    finally:
        side.close()
    assert not domain_in_use(domain)
