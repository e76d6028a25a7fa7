"""Speech probabilities per file, computed in parallel and cached by content.

The cache lives in <root>/<namespace>/, root = --cache-dir or user_cache_dir()/vad (see
duplexeval_common.cache), namespace = "vad-<backend>-<library><version>-<model sha256[:16]>":
the backend, the version of the library that computes the probabilities (onnxruntime for the
ONNX model, torch for the JIT one) and the Silero model file's hash. Inside it an entry is
keyed by the audio file's sha256 and the feed (how the file's samples become 16 kHz mono
model input), so any rescore of audio already seen is warm, whatever the output folder.
Workers are processes with one thread each. With ONNX a worker runs each file through silero's
sequence export of the same network (vad.SEQUENCE_FILE, SEQUENCE_BLOCK windows per call) when its
start-up check finds it bit-equal to the stock model; otherwise the stock model, files of similar
length as rows of one batch where that is bit-equal too. Which path ran never changes a probability.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from duplexeval_common.cache import cache_namespace, private_dir, user_cache_dir
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import atomic_write_bytes as write_bytes_atomic

from .vad import SR, WINDOW, feed_audio, model_info


def hash_files(paths: list[Path], workers: int) -> dict[Path, str]:
    uniq = sorted(set(paths))
    if workers <= 1 or len(uniq) < 4:
        return {p: sha256_file(p) for p in uniq}
    with ThreadPoolExecutor(max_workers=workers) as ex:
        return dict(zip(uniq, ex.map(sha256_file, uniq)))


@dataclass(frozen=True)
class Job:
    path: Path
    sha256: str
    feed: str
    seconds: float  # audio length, for load balancing and progress


RUNTIME_PACKAGE = {"onnx": ("onnxruntime", "ort"), "jit": ("torch", "torch")}


def runtime_version(backend: str) -> str:
    """The installed version of the library that runs the backend's model (not imported)."""
    import importlib.metadata
    package, _ = RUNTIME_PACKAGE[backend]
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def namespace(backend: str) -> str:
    """e.g. "vad-onnx-ort1.32.0-<model sha16>": everything besides the input that changes
    the probabilities."""
    _, label = RUNTIME_PACKAGE[backend]
    return cache_namespace(f"vad-{backend}", **{label: runtime_version(backend)},
                           model=model_info(backend)["model_sha256"])


def default_root() -> Path:
    """user_cache_dir()/vad: $DUPLEXEVAL_CACHE/vad, $XDG_CACHE_HOME/duplexeval/vad or
    ~/.cache/duplexeval/vad."""
    return user_cache_dir() / "vad"


class ProbStore:
    """Probabilities under root/<namespace(backend)>/<sha[:2]>/<sha>-<feed>.npz."""

    def __init__(self, root: Path, backend: str):
        self.root = Path(root)
        self.backend = backend
        self.model_sha = model_info(backend)["model_sha256"]
        self.dir = self.root / namespace(backend)

    def file(self, sha: str, feed: str) -> Path:
        return self.dir / sha[:2] / f"{sha}-{feed.replace('/', '_')}.npz"

    def load(self, sha: str, feed: str) -> tuple[np.ndarray, int] | None:
        f = self.file(sha, feed)
        try:
            with np.load(f) as z:
                return z["probs"], int(z["n"])
        except (OSError, ValueError, KeyError):
            return None

    def save(self, sha: str, feed: str, probs: np.ndarray, n: int) -> None:
        buf = io.BytesIO()
        np.savez(buf, probs=np.asarray(probs, dtype=np.float32), n=np.int64(n))
        f = self.file(sha, feed)
        try:
            private_dir(f.parent)  # the cache folders are the user's only (0o700)
            write_bytes_atomic(f, buf.getvalue())
        except OSError:  # a read-only or full cache costs a recomputation later, never a result
            pass


# ---- model side (runs in the worker processes) ----

_MODEL = None
BATCH = 8           # files run side by side through the ONNX model (one row each)
_BATCH_OK = False   # set by the worker's self-check: batched rows equal single runs bit for bit
_SEQUENCE = None    # the sequence model's session, when its self-check passed
SEQUENCE_BLOCK = 512  # windows per call of the sequence model (silero's default, 16.4 s)
CONTEXT = 64        # samples of the previous window each window is fed with


def _session(path: str):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.inter_op_num_threads = 1
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3  # the sequence export's unused initializers are not news
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"], sess_options=opts)


def _init_worker(backend: str) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # a worker process of ours: one thread
    _load(backend)


def _load(backend: str) -> None:
    global _MODEL, _BATCH_OK, _SEQUENCE
    _SEQUENCE = None
    if backend == "onnx":
        info = model_info("onnx")
        _MODEL = ("onnx", _session(info["path"]))
        _BATCH_OK = _batch_self_check()
        if "sequence_model" in info:
            seq = _session(str(Path(info["path"]).parent / info["sequence_model"]["file"]))
            if _sequence_self_check(seq):
                _SEQUENCE = seq
    else:
        import torch
        torch.set_num_threads(1)
        from silero_vad import load_silero_vad
        _MODEL = ("jit", load_silero_vad(onnx=False))
        _BATCH_OK = False


def load_model(backend: str = "onnx") -> None:
    """Load the model into this process once, for speech_probs here (as a worker does, but
    leaving the caller's environment as it is: a stage records its numeric variables)."""
    if _MODEL is None or _MODEL[0] != backend:
        _load(backend)


def _onnx_rows(x: np.ndarray) -> np.ndarray:
    """Probabilities for each row of x (rows, windows * 512): silero's OnnxWrapper per row.

    Each row carries its own LSTM state and 64 samples of context, as a batch of the ONNX
    model; a row's result does not depend on the other rows (checked at start-up).
    """
    _, sess = _MODEL
    rows = x.shape[0]
    state = np.zeros((2, rows, 128), np.float32)
    ctx = np.zeros((rows, 64), np.float32)
    sr = np.array(SR, dtype=np.int64)
    out = np.empty((rows, x.shape[1] // WINDOW), dtype=np.float32)
    run = sess.run
    for j, i in enumerate(range(0, x.shape[1], WINDOW)):
        inp = np.concatenate([ctx, x[:, i:i + WINDOW]], axis=1)
        p, state = run(None, {"input": inp, "state": state, "sr": sr})
        ctx = inp[:, -64:]
        out[:, j] = p[:, 0]
    return out


def _batch_self_check() -> bool:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, WINDOW * 24)) * np.array([[0.0], [0.05], [0.3], [1.0]])).astype(np.float32)
    together = _onnx_rows(x)
    return all(np.array_equal(together[k], _onnx_rows(x[k:k + 1])[0]) for k in range(len(x)))


def _sequence_rows(sess, x: np.ndarray, block: int = SEQUENCE_BLOCK) -> np.ndarray:
    """Probabilities of one zero-padded signal (windows * 512,) from the sequence model: each
    window with the last 64 samples of the one before (zeros first), `block` windows per
    call, the LSTM's h and c carried from call to call, as the stock model carries its state."""
    frames = x.reshape(-1, WINDOW)
    ctx = np.zeros((len(frames), CONTEXT), np.float32)
    ctx[1:] = frames[:-1, -CONTEXT:]
    fed = np.concatenate([ctx, frames], axis=1)
    h = np.zeros((1, 1, 128), np.float32)
    c = np.zeros((1, 1, 128), np.float32)
    out = np.empty(len(frames), np.float32)
    for i in range(0, len(frames), block):
        p, h, c = sess.run(None, {"input": fed[i:i + block], "h": h, "c": c})
        out[i:i + block] = p
    return out


def _sequence_self_check(sess) -> bool:
    """The sequence model's probabilities equal the stock model's bit for bit, across a call
    boundary (a whole block, as the files' calls are, and a short one), on low and loud noise."""
    rng = np.random.default_rng(1)
    n = (SEQUENCE_BLOCK + 8) * WINDOW
    for level in (0.02, 0.5):
        x = (rng.standard_normal(n) * level).astype(np.float32)
        if not np.array_equal(_sequence_rows(sess, x), _onnx_rows(x[None, :])[0]):
            return False
    return True


def _padded(audio: np.ndarray, windows: int) -> np.ndarray:
    out = np.zeros(windows * WINDOW, np.float32)
    out[:len(audio)] = audio
    return out


def speech_probs(audio: np.ndarray) -> np.ndarray:
    """One probability per 512-sample window, the last one zero-padded, state carried over.

    ONNX: the same inputs as silero's OnnxWrapper (64 samples of context, the LSTM state);
    JIT: the model called chunk by chunk as get_speech_timestamps calls it.
    """
    return speech_probs_many([audio])[0]


def speech_probs_many(audios: list[np.ndarray]) -> list[np.ndarray]:
    kind, model = _MODEL
    windows = [-(-len(a) // WINDOW) for a in audios]
    if kind == "onnx":
        if _SEQUENCE is not None:
            return [_sequence_rows(_SEQUENCE, _padded(a, w)) for a, w in zip(audios, windows)]
        if _BATCH_OK and len(audios) > 1:
            rows = _onnx_rows(np.stack([_padded(a, max(windows)) for a in audios]))
            return [rows[k, :w].copy() for k, w in enumerate(windows)]
        return [_onnx_rows(_padded(a, w)[None, :])[0] for a, w in zip(audios, windows)]
    import torch
    out = []
    for a, w in zip(audios, windows):
        model.reset_states()
        t = torch.from_numpy(_padded(a, w))
        probs = np.empty(w, dtype=np.float32)
        with torch.no_grad():
            for j in range(w):
                probs[j] = model(t[j * WINDOW:(j + 1) * WINDOW], SR).item()
        out.append(probs)
    return out


def _compute(batch: list[tuple[str, str, str]], store_root: str, backend: str) -> float:
    import soundfile as sf
    audios = []
    for path, feed, _ in batch:
        data, _sr = sf.read(path, dtype="float32", always_2d=True)
        audios.append(feed_audio(data, feed))
    store = ProbStore(Path(store_root), backend)
    for (_, feed, sha), audio, probs in zip(batch, audios, speech_probs_many(audios)):
        store.save(sha, feed, probs, len(audio))
    return sum(len(a) for a in audios) / SR


def ensure(jobs: list[Job], store: ProbStore, workers: int, quiet: bool = False) -> dict:
    """Make sure every job's probabilities are cached; return {(sha, feed): (probs, n)}."""
    result, todo = {}, {}
    for j in jobs:
        key = (j.sha256, j.feed)
        if key not in result:
            got = store.load(*key)
            if got is None:
                todo.setdefault(key, j)
            else:
                result[key] = got
    if todo:
        _run(sorted(todo.values(), key=lambda j: -j.seconds), store, workers, quiet)
        for key, j in todo.items():
            got = store.load(*key)
            if got is None:
                raise RuntimeError(f"VAD cache entry for {j.path} could not be read back")
            result[key] = got
    return result


def _progress(quiet: bool, done: int, total: int, secs: float, total_secs: float, t0: float) -> None:
    if quiet:
        return
    el = time.monotonic() - t0
    eta = el / secs * (total_secs - secs) if secs else 0.0
    print(f"[vad] {done}/{total} files, {secs / 60:.1f}/{total_secs / 60:.1f} min of audio, "
          f"{el:.1f}s elapsed, ~{eta:.0f}s left", file=sys.stderr, flush=True)


def _batches(jobs: list[Job], backend: str) -> list[list[Job]]:
    """Jobs sorted longest first, in groups of similar length (ONNX) or one by one (JIT)."""
    size = BATCH if backend == "onnx" else 1
    return [jobs[i:i + size] for i in range(0, len(jobs), size)]


def _run(jobs: list[Job], store: ProbStore, workers: int, quiet: bool) -> None:
    t0 = time.monotonic()
    total_secs = sum(j.seconds for j in jobs)
    if not quiet:
        print(f"[vad] computing speech probabilities for {len(jobs)} files "
              f"({total_secs / 60:.1f} min of audio, {workers} process(es), {store.backend})",
              file=sys.stderr, flush=True)
    batches = _batches(jobs, store.backend)
    args = [([(str(j.path), j.feed, j.sha256) for j in b], str(store.root), store.backend) for b in batches]
    done, secs, last = 0, 0.0, 0.0
    if workers <= 1 or len(batches) == 1:
        _init_worker(store.backend)
        for a, b in zip(args, batches):
            secs += _compute(*a)
            done += len(b)
            if time.monotonic() - last > 2 or done == len(jobs):
                last = time.monotonic()
                _progress(quiet, done, len(jobs), secs, total_secs, t0)
        return
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(batches)), mp_context=ctx,
                             initializer=_init_worker, initargs=(store.backend,)) as ex:
        futs = {ex.submit(_compute, *a): len(b) for a, b in zip(args, batches)}
        for fut in as_completed(futs):
            secs += fut.result()
            done += futs[fut]
            if time.monotonic() - last > 2 or done == len(jobs):
                last = time.monotonic()
                _progress(quiet, done, len(jobs), secs, total_secs, t0)
