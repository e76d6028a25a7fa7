"""Algorithm 1, steps 3 and 4, and the response windows (duplexeval_segmenter.voting): the IoU
threshold at 0.29 and 0.30, the clustering against each cluster's current median, the upper
median, min votes, the final overlap merge the released code lacks, and the windows."""

import pytest

from duplexeval_segmenter import voting
from duplexeval_segmenter.voting import Turn, vote


def test_iou():
    assert voting.iou((0, 10), (0, 3)) == pytest.approx(0.3)
    assert voting.iou((0, 10), (10, 20)) == 0.0
    assert voting.iou((5, 5), (5, 5)) == 0.0  # an empty union
    assert voting.iou((2, 4), (1, 5)) == 0.5


@pytest.mark.parametrize("end, joins", [(3.0, True), (2.9, False)])
def test_iou_threshold_030_joins_029_does_not(end, joins):
    # IoU((0,10),(0,end)) = end/10: 0.30 joins the cluster, 0.29 starts its own
    v = vote([[(0.0, 10.0)], [(0.0, end)]])
    assert len(v.candidates) == (1 if joins else 2)
    if joins:
        assert v.candidates[0]["votes"] == 2 and [(t.start, t.end, t.votes) for t in v.turns] == [(0.0, 10.0, 2)]
    else:
        assert v.turns == [] and all(c["dropped"] == "1 vote(s) < 2" for c in v.candidates)


def test_iou_exactly_at_the_threshold_despite_float_rounding():
    # 0.1 + 0.2 style noise: IoU 0.3 on paper, 0.29999999999999993 in floats
    a, b = (31.2, 32.2), (31.2, 31.5)
    assert voting.iou(b, a) < 0.3
    assert len(vote([[a], [b]]).candidates) == 1


def test_threshold_is_a_setting():
    v = vote([[(0.0, 10.0)], [(0.0, 3.0)]], threshold=0.31)
    assert len(v.candidates) == 2 and v.turns == []


def test_representative_is_the_current_median_not_the_first_member():
    # after (0,10), (4,10), (4,10) the representative is the median (4,10); (6,11) has IoU 4/7
    # with it and joins at threshold 0.5, though against the first member (0,10) it has 4/11
    runs = [[(0.0, 10.0)], [(4.0, 10.0)], [(4.0, 10.0)], [(6.0, 11.0)]]
    v = vote(runs, threshold=0.5)
    assert len(v.candidates) == 1 and v.candidates[0]["votes"] == 4 and v.candidates[0]["runs"] == [1, 2, 3, 4]
    assert (v.turns[0].start, v.turns[0].end) == (4.0, 10.0)
    # in the other order the first member (6,11) stands alone against (0,10): IoU 4/11 < 0.5
    assert len(vote([[(6.0, 11.0)], [(0.0, 10.0)]], threshold=0.5).candidates) == 2


def test_upper_median_and_middle_median():
    runs = [[(1.0, 5.0)], [(1.2, 5.4)], [(1.4, 5.2)], [(1.6, 5.6)]]
    up = vote(runs).turns[0]
    mid = vote(runs, median_kind="middle").turns[0]
    assert (up.start, up.end, up.votes) == (1.4, 5.4, 4)      # sorted[n // 2], as the code
    assert (mid.start, mid.end) == (1.3, 5.3)                 # mean of the two middle values
    three = vote(runs[:3]).turns[0]
    assert (three.start, three.end) == (1.2, 5.2)
    assert voting.median([3.0, 1.0, 2.0]) == 2.0
    with pytest.raises(ValueError):
        voting.median([1.0, 2.0], "mean")


def test_min_votes():
    runs = [[(0.0, 2.0), (5.0, 8.0)], [(0.05, 2.0)], [(10.0, 12.0)]]
    assert [(t.start, t.votes) for t in vote(runs).turns] == [(0.05, 2)]  # the upper of 0.0, 0.05
    assert [(t.start, t.votes) for t in vote(runs, min_votes=1).turns] == [(0.05, 2), (5.0, 1), (10.0, 1)]
    assert vote(runs, min_votes=3).turns == []


def test_rounding_and_empty_median_span():
    v = vote([[(1.234, 2.345)], [(1.236, 2.347)]])
    assert (v.turns[0].start, v.turns[0].end) == (1.24, 2.35)
    assert vote([]).turns == [] and vote([[], []]).candidates == []


def test_final_overlap_merge():
    # two kept candidates overlapping with IoU 0.1 (separate clusters): merged by step 4
    runs = [[(10.0, 20.0), (18.0, 30.0)], [(10.0, 20.0), (18.0, 30.0)], [(40.0, 45.0), (45.0, 50.0)],
            [(40.0, 45.0), (45.0, 50.0)]]
    v = vote(runs)
    assert [t.as_dict() for t in v.turns] == [
        {"start": 10.0, "end": 30.0, "votes": 4, "merged": 2},
        {"start": 40.0, "end": 45.0, "votes": 2, "merged": 1},   # touching turns stay apart
        {"start": 45.0, "end": 50.0, "votes": 2, "merged": 1}]
    unmerged = vote(runs, merge=False)
    assert [(t.start, t.end) for t in unmerged.turns] == [(10.0, 20.0), (18.0, 30.0), (40.0, 45.0), (45.0, 50.0)]


def test_merge_overlaps_chains_and_nested():
    turns = [Turn(5.0, 6.0, 2), Turn(0.0, 3.0, 3), Turn(2.0, 4.0, 2), Turn(3.5, 3.8, 2)]
    assert [t.as_dict() for t in voting.merge_overlaps(turns)] == [
        {"start": 0.0, "end": 4.0, "votes": 7, "merged": 3}, {"start": 5.0, "end": 6.0, "votes": 2, "merged": 1}]
    assert voting.merge_overlaps([Turn(0.0, 1.0), Turn(0.5, 2.0)])[0].votes is None


def test_windows_last_to_the_dialogue_end():
    turns = [Turn(1.0, 3.0), Turn(6.0, 8.0), Turn(12.0, 14.0)]
    assert voting.windows(turns, 120.0) == [{"round": 1, "start": 1.0, "end": 8.0},
                                            {"round": 2, "start": 6.0, "end": 14.0},
                                            {"round": 3, "start": 12.0, "end": 120.0}]
    assert voting.windows([Turn(1.0, 2.0)], 9.5) == [{"round": 1, "start": 1.0, "end": 9.5}]


def test_continuations_as_the_code_defines_them():
    turns = [Turn(1.0, 3.0), Turn(6.0, 8.0), Turn(12.0, 14.0)]
    model = [(2.5, 7.0), (9.0, 11.0)]   # speaking at 3.0 and at 6.0; not at 8.0
    assert voting.continuations(turns, model) == [
        {"round": 2, "current_turn": 1, "start_time_of_continuation_user_turn": 6.0,
         "end_time_of_continuation_response": 7.0}]
    assert voting.continuations(turns, []) == []
