import numpy as np
import pytest
import soundfile as sf

from duplexeval_common import wavio
from duplexeval_common.errors import SampleError


def test_roundtrip_is_pcm16_and_clips_not_wraps(tmp_path):
    audio = np.array([0.0, 0.5, 1.0, 1.5, -1.5], dtype=np.float32)
    wavio.write_wav(tmp_path / "a.wav", audio, 16000)
    back, sr = wavio.read_wav(tmp_path / "a.wav")
    assert sr == 16000 and sf.info(str(tmp_path / "a.wav")).subtype == "PCM_16"
    assert back[2] > 0.99 and back[3] > 0.99 and back[4] < -0.99  # +1.5 clips to full scale, not negative


@pytest.mark.parametrize("case, message", [
    ("missing", "a.wav is missing"),
    ("corrupt", "not a readable WAV"),
    ("empty", "a.wav is empty"),
    ("stereo", "2 channels, expected 1"),
    ("rate", "rate 8000 Hz, expected 16000"),
    ("nan", "non-finite"),
])
def test_bad_wavs_name_the_sample_and_problem(tmp_path, case, message):
    p = tmp_path / "a.wav"
    if case == "corrupt":
        p.write_bytes(b"RIFF\x00\x00garbage")
    elif case == "empty":
        sf.write(str(p), np.zeros(0, dtype=np.float32), 16000)
    elif case == "stereo":
        sf.write(str(p), np.zeros((100, 2), dtype=np.float32), 16000)
    elif case == "rate":
        sf.write(str(p), np.zeros(100, dtype=np.float32), 8000)
    elif case == "nan":
        sf.write(str(p), np.array([0.0, np.nan], dtype=np.float32), 16000, subtype="FLOAT")
    with pytest.raises(SampleError) as e:
        wavio.read_wav(p, "subset/7", rate=16000)
    assert str(e.value).startswith("subset/7: ") and message in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("sr_in, sr_out", [(16000, 24000), (48000, 16000), (44100, 16000), (24000, 24000)])
def test_resample_exact_length(sr_in, sr_out):
    x = np.random.default_rng(0).standard_normal(sr_in * 3 + 7).astype(np.float32) * 0.1
    y = wavio.resample(x, sr_in, sr_out)
    assert len(y) == round(len(x) * sr_out / sr_in)


def test_fit_length():
    assert len(wavio.fit_length(np.ones(10), 15)) == 15
    assert wavio.fit_length(np.ones(10), 4).tolist() == [1, 1, 1, 1]
