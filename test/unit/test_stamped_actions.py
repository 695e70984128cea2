"""The stamp encoding and the order check the load tests and the fleet bench share."""

from sequence_ai_ros.harness.stamped_actions import LOOP_UNIT, read_stamp, SequenceCheck, stamp


def check(*actions, loop=1, lengths=None):
    """Play (loop, seq, step) actions through a check; return the kinds of break seen."""
    order = SequenceCheck(loop, lengths=dict.fromkeys(range(10), 3) if lengths is None
                          else lengths)
    for action in actions:
        order.act([0.0, stamp(*action)])
    assert order.total == sum(order.breaks().values())
    return {kind: n for kind, n in order.breaks().items() if n}


def test_a_stamp_reads_back_exactly_at_the_largest_numbers():
    for loop, seq, step in [(0, 0, 0), (7, 12, 49), (999_999, 999_999, 999)]:
        assert read_stamp(stamp(loop, seq, step)) == (loop, seq, step)
    assert stamp(999_999, 999_999, 999) < 2 ** 53
    assert read_stamp(stamp(3, 4, 5) + 0.4) == (3, 4, 5), 'rounded, not truncated'
    assert read_stamp(LOOP_UNIT - 0.2) == (1, 0, 0)


def test_the_order_check_sees_every_kind_of_break():
    assert check((1, 0, 0), (1, 0, 1), (1, 0, 2), (1, 2, 0), (1, 2, 1)) == {}
    assert check((2, 0, 0)) == {'foreign': 1}
    assert check((1, 3, 0), (1, 3, 1), (1, 3, 2), (1, 2, 0)) == {'out_of_order': 1}
    assert check((1, 0, 0), (1, 0, 1), (1, 0, 1), (1, 0, 2)) == {'repeated': 1}
    assert check((1, 0, 0), (1, 0, 2)) == {'skipped_steps': 1}
    assert check((1, 0, 0), (1, 0, 1), (1, 1, 0)) == {'cut_short': 1}
    assert check((1, 0, 0), (1, 0, 1), (1, 0, 2), (1, 1, 1)) == {'late_entry': 1}


def test_every_kind_is_reported_and_counted_in_the_total():
    order = SequenceCheck(1)
    assert order.breaks() == dict.fromkeys(
        ['foreign', 'out_of_order', 'repeated', 'skipped_steps', 'cut_short', 'late_entry'], 0)
    assert order.total == 0
    order.lengths[0] = 5
    for action in [(1, 0, 1), (1, 0, 0), (1, 0, 3), (2, 0, 0), (1, 2, 2), (1, 1, 0)]:
        order.act([stamp(*action)])
    assert order.breaks() == {'foreign': 1, 'out_of_order': 1, 'repeated': 1,
                              'skipped_steps': 1, 'cut_short': 1, 'late_entry': 2}
    assert order.total == 7


def test_stray_actions_leave_the_chunk_being_played_as_it_was():
    # One foreign or out-of-order action is one break: the chunk goes on without a cascade.
    assert check((1, 0, 0), (2, 0, 1), (1, 0, 1), (1, 0, 2)) == {'foreign': 1}
    assert check((1, 1, 0), (1, 0, 2), (1, 1, 1), (1, 1, 2)) == {'out_of_order': 1}


def test_steps_are_judged_against_the_furthest_one_played():
    # A step going backwards is a repeat; the steps replayed after it repeat too, and none
    # already played counts as skipped, nor the chunk as cut short.
    assert check((1, 0, 0), (1, 0, 2), (1, 0, 1)) == {'skipped_steps': 1, 'repeated': 1}
    assert check((1, 0, 0), (1, 0, 1), (1, 0, 0), (1, 0, 2)) == {'repeated': 1}
    assert check((1, 0, 0), (1, 0, 1), (1, 0, 2), (1, 0, 1), (1, 0, 2), (1, 1, 0)) == {
        'repeated': 2}


def test_a_chunk_of_unknown_length_left_for_another_counts_as_cut_short():
    assert check((1, 0, 0), (1, 0, 1), (1, 0, 2), (1, 1, 0), lengths={1: 3}) == {'cut_short': 1}
    assert check((1, 0, 0), (1, 0, 1), (1, 0, 2), lengths={}) == {}, 'the last chunk never is'


def test_played_lists_each_chunk_once_in_the_order_first_entered():
    order = SequenceCheck(4, lengths=dict.fromkeys(range(10), 2))
    for seq, step in [(0, 0), (0, 1), (2, 0), (1, 0), (2, 1), (5, 1), (5, 1)]:
        order.act([0.5, 0.0, stamp(4, seq, step)])
    assert order.played == [0, 2, 5]
    assert order.breaks() == {'foreign': 0, 'out_of_order': 1, 'repeated': 1,
                              'skipped_steps': 0, 'cut_short': 0, 'late_entry': 1}
