"""The store: content keys, completeness, locking, run ids; and stage outcome classification."""

import multiprocessing
import time

import pytest

from duplexeval.engine import classify
from duplexeval.runtime import Outcome
from duplexeval.store import Store, content_digest, stage_key
from duplexeval_common.jsonio import atomic_write_json


def record(samples, outputs=None, invocation="x"):
    return {"component": "c", "outputs": outputs or {"samples/s/0/out.wav": "a" * 64},
            "samples": samples, "invocation": invocation}


def test_key_changes_with_each_part():
    base = stage_key("asr-aligner", "source:sha256:1", {"backend": "b"}, ["stage:sha256:d"])
    assert base != stage_key("judge", "source:sha256:1", {"backend": "b"}, ["stage:sha256:d"])
    assert base != stage_key("asr-aligner", "image:sha256:2", {"backend": "b"}, ["stage:sha256:d"])
    assert base != stage_key("asr-aligner", "source:sha256:1", {"backend": "c"}, ["stage:sha256:d"])
    assert base != stage_key("asr-aligner", "source:sha256:1", {"backend": "b"}, ["stage:sha256:e"])
    assert base == stage_key("asr-aligner", "source:sha256:1", {"backend": "b"}, ["stage:sha256:d"])


def test_digest_is_the_content_outputs_and_statuses_not_timings():
    a = record({"s/0": {"status": "ok", "seconds": 1.0}})
    b = record({"s/0": {"status": "ok", "seconds": 9.0, "cached": True}}, invocation="y")
    assert content_digest(a) == content_digest(b)
    repaired = record({"s/0": {"status": "failed", "reason": "server died"}})
    assert content_digest(a) != content_digest(repaired)
    other_bytes = record({"s/0": {"status": "ok"}}, outputs={"samples/s/0/out.wav": "b" * 64})
    assert content_digest(a) != content_digest(other_bytes)


def put_stage(store, key, samples):
    """A real stage folder: a sealed sample folder per ok sample, stage.json with their hashes."""
    from duplexeval_common.hashing import sha256_file
    d = store.stage_dir(key)
    outputs = {}
    for sample, status in samples.items():
        if status["status"] == "ok":
            for name, text in (("out.txt", sample), ("_done.json", "{}")):
                p = d / "samples" / sample / name
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text)
                outputs[f"samples/{sample}/{name}"] = sha256_file(p)
    atomic_write_json(d / "stage.json", record(samples, outputs))
    return d


def test_complete_refuses_failed_and_stale_skips(tmp_path):
    store = Store(tmp_path)
    put_stage(store, "k1", {"s/0": {"status": "ok"}})
    put_stage(store, "k2", {"s/0": {"status": "ok"}, "s/1": {"status": "failed", "reason": "x"}})
    put_stage(store, "k3", {"s/0": {"status": "ok"}, "s/1": {"status": "skipped", "reason": "up"}})
    assert store.complete("k1") is not None
    assert store.complete("k2") is None
    assert store.complete("missing") is None
    assert store.complete("k3", {"s/1"}) is not None       # still failed upstream: the skip stands
    assert store.complete("k3", set()) is None             # upstream repaired: the skip is stale


def test_complete_refuses_a_stage_damaged_or_edited_by_hand(tmp_path):
    from duplexeval_common.jsonio import read_json
    store = Store(tmp_path)
    d = put_stage(store, "k1", {"s/0": {"status": "ok"}, "s/1": {"status": "ok"}})
    assert store.complete("k1") is not None
    (d / "samples/s/0/out.txt").write_text("changed")
    assert store.complete("k1") is None                    # an output no longer hashes the same
    d = put_stage(store, "k2", {"s/0": {"status": "ok"}, "s/1": {"status": "failed", "reason": "x"}})
    rec = read_json(d / "stage.json")
    rec["samples"]["s/1"] = {"status": "ok"}               # a failed sample edited to ok
    atomic_write_json(d / "stage.json", rec)
    assert store.complete("k2") is None


def _hold(root, key, seconds, q):
    store = Store(root)
    with store.lock(key):
        q.put(("got", time.monotonic()))
        time.sleep(seconds)
    q.put(("released", time.monotonic()))


def test_lock_makes_a_second_holder_wait(tmp_path):
    q = multiprocessing.get_context("spawn").Queue()
    p = multiprocessing.get_context("spawn").Process(target=_hold, args=(tmp_path, "k", 1.0, q))
    p.start()
    assert q.get(timeout=30)[0] == "got"
    waited = []
    store = Store(tmp_path)
    with store.lock("k", waiting=lambda: waited.append(time.monotonic())):
        got = time.monotonic()
    kind, released = q.get(timeout=30)
    p.join()
    assert waited, "the second holder was not told it waits"
    assert kind == "released" and got >= released - 0.05


def test_run_ids_never_collide(tmp_path):
    store = Store(tmp_path)
    ids = {store.new_run() for _ in range(50)}
    assert len(ids) == 50 and all((store.runs / i).is_dir() for i in ids)


@pytest.mark.parametrize("outcome, fresh, expected", [
    (Outcome(0), True, "ok"),
    (Outcome(1), True, "partial"),
    (Outcome(1), False, "failed"),          # a crash with an old stage.json around is not partial
    (Outcome(0), False, "failed"),
    (Outcome(2, last_error="bad setting"), True, "failed"),
    (Outcome(3), True, "failed"),
    (Outcome(None, reason="timed out after 5 s"), False, "failed"),
    (Outcome(137), True, "failed"),
])
def test_classification(outcome, fresh, expected):
    status, reason = classify(outcome, fresh)
    assert status == expected
    if expected == "failed":
        assert reason


def test_resolve_run_refuses_paths(tmp_path):
    from duplexeval_common.errors import DuplexEvalError
    store = Store(tmp_path)
    for bad in ("../x", "/etc", "", ".latest"):
        with pytest.raises(DuplexEvalError):
            store.resolve_run(bad)
