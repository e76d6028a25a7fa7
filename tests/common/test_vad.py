"""The segmentation re-implementation against silero's own functions."""

import numpy as np
import pytest
import torch

from duplexeval_common import vad, vadcache


def _probs(rng, n):
    p = rng.random(n)
    # runs of speech and silence, and values exactly on the thresholds
    runs = np.repeat(rng.random(n // 8 + 1) < 0.5, 8)[:n]
    p = np.where(runs, 0.5 + 0.5 * p, 0.5 * p)
    edge = rng.random(n) < 0.08
    p[edge] = rng.choice([0.5, 0.35, np.float32(0.49999997), 0.3500001], size=edge.sum())
    return p.astype(np.float32)


@pytest.mark.parametrize("pad,secs", [(30, True), (30, False), (0, False), (0, True)])
def test_post_processing_equals_silero(pad, secs):
    from silero_vad import get_speech_timestamps_from_probs
    rng = np.random.default_rng(pad + secs)
    for _ in range(150):
        n_frames = int(rng.integers(1, 400))
        probs = [float(x) for x in _probs(rng, n_frames)]
        length = n_frames * 512 - int(rng.integers(0, 512))
        for msil, mspeech in ((100, 250), (50, 60), (300, 100)):
            kw = dict(threshold=0.5, min_speech_duration_ms=mspeech, min_silence_duration_ms=msil,
                      speech_pad_ms=pad, return_seconds=secs)
            ref = get_speech_timestamps_from_probs(probs, audio_length_samples=length, **kw)
            assert vad.segments_from_probs(probs, length, **kw) == ref


def test_probabilities_and_segments_equal_get_speech_timestamps(speak):
    from silero_vad import get_speech_timestamps, load_silero_vad
    audio = np.concatenate([np.zeros(8000, np.float32), speak("Yes, I think that is right.", 16000),
                            np.zeros(12000, np.float32), speak("Okay.", 16000),
                            np.zeros(5000, np.float32)]).astype(np.float32)
    for backend in ("onnx", "jit"):
        vadcache._init_worker(backend)
        probs = vadcache.speech_probs(audio)
        model = load_silero_vad(onnx=backend == "onnx")
        ref_official = get_speech_timestamps(torch.from_numpy(audio), model, return_seconds=True)
        assert vad.official_segments(probs, len(audio)) == ref_official
        assert len(ref_official) >= 2
        ref_unified = get_speech_timestamps(torch.from_numpy(audio), model, speech_pad_ms=0)
        got = vad.unified_segments(probs, len(audio))
        assert [(s["start"], s["end"]) for s in ref_unified] == [(a, b) for a, b, _ in got]
        assert not any(o for _, _, o in got)
    torch.set_num_threads(1)


def test_feeds():
    assert vad.unified_feed(16000, 1) == vad.FEED_OFFICIAL
    assert vad.unified_feed(48000, 1) == "decimate3"
    assert vad.unified_feed(24000, 1) == "resample_poly2/3"
    assert vad.unified_feed(24000, 2) == "mean2-resample_poly2/3"
    x = np.arange(48, dtype=np.float32).reshape(-1, 1)
    assert (vad.feed_audio(x, "decimate3") == x[::3, 0]).all()
    assert len(vad.feed_audio(np.zeros((24000, 1), np.float32), "resample_poly2/3")) == 16000
    with pytest.raises(ValueError):
        vad.feed_audio(np.zeros((10, 2), np.float32), vad.FEED_OFFICIAL)


def test_cache_roundtrip(tmp_path):
    store = vadcache.ProbStore(tmp_path, "onnx")
    assert store.load("ab" * 32, "as16000") is None
    store.save("ab" * 32, "as16000", np.array([0.1, 0.9], np.float32), 1000)
    probs, n = store.load("ab" * 32, "as16000")
    assert n == 1000 and probs.dtype == np.float32 and list(probs) == [np.float32(0.1), np.float32(0.9)]


def test_an_unwritable_cache_never_decides_a_result(tmp_path):
    """A cache that cannot be written (here its root is a file: chmod does not stop root) costs
    speed only: save is a no-op and load finds nothing (it once failed the aggregate stage)."""
    blocked = tmp_path / "cache"
    blocked.write_text("not a folder")
    store = vadcache.ProbStore(blocked, "onnx")
    store.save("cd" * 32, "as16000", np.array([0.5], np.float32), 10)  # no OSError
    assert store.load("cd" * 32, "as16000") is None and blocked.read_text() == "not a folder"


def test_batched_rows_equal_single_files(speak):
    vadcache._init_worker("onnx")
    a = speak("Could you say that again?", 16000)
    clips = [a, np.concatenate([np.zeros(7000, np.float32), a]), a[:3000], np.zeros(600, np.float32)]
    together = vadcache.speech_probs_many(clips)
    # Whether rows are batched depends on the machine (a start-up self-check); the contract is
    # that the result is the same bytes either way.
    for clip, probs in zip(clips, together):
        assert len(probs) == -(-len(clip) // 512)
        assert np.array_equal(probs, vadcache.speech_probs_many([clip])[0])


def test_sequence_model_equals_the_stock_model_over_several_blocks(speak):
    """silero's sequence export runs in place of silero_vad.onnx only where every probability
    is the same float: over a file of three blocks of windows (state carried between calls)."""
    vadcache._init_worker("onnx")
    if vadcache._SEQUENCE is None:
        pytest.skip("the sequence model's self-check failed on this machine (the stock model runs)")
    a = speak("Could you say that again, a little slower please?", 16000)
    gap = np.zeros(5000, np.float32)
    long = np.concatenate([a, gap] * 40)[: (2 * vadcache.SEQUENCE_BLOCK + 100) * 512 + 77]
    got = vadcache.speech_probs(long)
    stock = vadcache._onnx_rows(vadcache._padded(long, len(got))[None, :])[0]
    assert len(got) == 2 * vadcache.SEQUENCE_BLOCK + 101
    assert np.array_equal(got, stock) and (got > 0.5).any() and (got < 0.35).any()
    assert vad.model_info("onnx")["sequence_model"]["file"] == vad.SEQUENCE_FILE


def test_a_sequence_model_that_differs_is_not_used():
    """The self-check refuses an engine whose probabilities move by one float step."""
    vadcache._init_worker("onnx")

    class OffByOne:
        def __init__(self, real):
            self.real = real

        def run(self, names, feeds):
            p, h, c = self.real.run(names, feeds)
            return np.nextafter(p, np.float32(1)), h, c

    real = vadcache._SEQUENCE or vadcache._session(
        str(vadcache.Path(vad.model_info("onnx")["path"]).parent / vad.SEQUENCE_FILE))
    assert vadcache._sequence_self_check(real) == (vadcache._SEQUENCE is not None)
    assert not vadcache._sequence_self_check(OffByOne(real))
