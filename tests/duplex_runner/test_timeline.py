import numpy as np
import pytest

from duplexeval_runner.timeline import TimelineBuffer


def test_write_starts_at_its_time_or_after_what_is_queued():
    buf = TimelineBuffer(1000)
    assert buf.write(0.5, np.ones(100)) == 500          # round(0.5 * 1000)
    assert buf.write(0.55, np.full(10, 2.0)) == 600      # still playing the first: queued after it
    assert buf.write(1.0, np.full(10, 3.0)) == 1000      # later: at its own time, silence between
    out = buf.audio(1200)
    assert len(out) == 1200
    assert (out[:500] == 0).all() and (out[500:600] == 1).all() and (out[600:610] == 2).all()
    assert (out[610:1000] == 0).all() and (out[1000:1010] == 3).all() and (out[1010:] == 0).all()


def test_start_index_rounds_time():
    buf = TimelineBuffer(16000)
    assert buf.write(0.10003, np.ones(4)) == round(0.10003 * 16000)
    assert TimelineBuffer(44100).write(1 / 3, np.ones(1)) == round(44100 / 3)


def test_interrupt_discards_what_has_not_played():
    buf = TimelineBuffer(1000)
    buf.write(0.2, np.ones(500))                  # plays 200..700
    assert buf.playing(0.5) and not buf.playing(0.7)
    assert buf.interrupt(0.45) == 250             # 450..700 had not played
    assert buf.write_pos == 450
    out = buf.audio(1000)
    assert (out[200:450] == 1).all() and (out[450:] == 0).all()
    # What comes next starts at its own time, not after the discarded tail.
    assert buf.write(0.5, np.ones(10)) == 500


def test_interrupt_before_a_queued_reply_drops_it_and_after_the_end_is_a_no_op():
    buf = TimelineBuffer(1000)
    buf.write(1.0, np.ones(100))
    assert buf.interrupt(0.8) == 100 and buf.write_pos == 800
    assert not buf.audio(2000).any()
    buf2 = TimelineBuffer(1000)
    buf2.write(0.0, np.ones(100))
    assert buf2.interrupt(0.5) == 0
    assert buf2.audio(200)[:100].all()


def test_audio_pads_and_trims_to_exactly_n():
    buf = TimelineBuffer(100)
    buf.write(0.9, np.ones(50))                   # runs past the end at n = 100
    assert len(buf.audio(100)) == 100 and buf.audio(100)[90:].all()
    assert len(buf.audio(1000)) == 1000
    assert len(TimelineBuffer(100).audio(7)) == 7


def test_negative_time_clamps_to_zero():
    buf = TimelineBuffer(100)
    assert buf.write(-1.0, np.ones(3)) == 0
    with pytest.raises(ValueError):
        TimelineBuffer(0)


def test_session_places_interrupts_and_logs_on_the_clock():
    """Session (what the core hands a runner): place at now or at t, interrupt with extra fields on
    the event, and a truncate line only when something was dropped."""
    from duplexeval_runner.events import EventLog
    from duplexeval_runner.protocol import SampleInfo, Session
    clock = {"t": 0.5}
    info = SampleInfo(key="s_turn_taking/1", subset="s_turn_taking", id="1", duration_s=2.0, sr=1000,
                      n_samples=2000)
    log = EventLog(record_wall=False)
    session = Session(info, 1000, log, now=lambda: clock["t"])
    assert session.place(np.ones(300)) == 0.5                 # at now
    assert session.place(np.ones(100), t=0.6) == 0.8          # after what is queued
    clock["t"] = 0.7
    assert session.played(0.5, 0.3) == pytest.approx(0.2)
    assert session.interrupt(reason="user_speech", speech_t=0.65, unheard=False) == pytest.approx(0.2)
    assert [r["type"] for r in log.rows] == ["interrupt", "truncate"]
    assert log.rows[0] == {"t": 0.7, "type": "interrupt", "reason": "user_speech", "discarded_s": 0.2,
                           "speech_t": 0.65, "unheard": False}
    assert session.interrupt(t=1.5) == 0.0 and log.rows[-1]["type"] == "interrupt"   # nothing to drop
    out = session.buf.audio(2000)
    assert out[500:700].all() and not out[700:].any()
