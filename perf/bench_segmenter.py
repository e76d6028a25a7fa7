"""Benchmark: the turn-segmenter stage on N (200) ten-round synthetic dialogues.

    .venv/bin/python perf/bench_segmenter.py [N]

Transcripts are written once (user.json/model.json, as an asr stage would cache them); then the
stage runs offline, then with the LLM segmenter against the chat-completions test double
(tests/judge/chat_server.py, replaying six scripted segmentations per dialogue with no delay:
its latency is the local HTTP round trip only), first with an empty judge cache, then again
with every request cached. The voting alone (steps 3-4, no I/O) is timed too. Prints JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from duplexeval_segmenter import voting
from duplexeval_segmenter.stage import make_stage

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.judge import chat_server  # noqa: E402  (the test suite's chat-completions double)
from tests.turn_segmenter.dialogues import dialogue, scripted_runs, write  # noqa: E402


def main(n: int = 200) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="segbench-"))
    try:
        return _measure(n, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(n: int, tmp: Path) -> dict:
    os.environ["DUPLEXEVAL_CACHE"] = str(tmp / "cache")
    os.environ["OPENAI_API_KEY"] = "bench"
    ds = {f"mtr_dq/d{s:03d}": dialogue(s, start=round(1.0 + s * 0.01, 2)) for s in range(n)}
    inputs = write(tmp / "in", ds)
    out: dict = {"dialogues": n, "rounds": 10}

    def stage(name: str, cfg: dict) -> float:
        t = time.perf_counter()
        rc = make_stage(cfg).run([inputs], tmp / name, cfg)
        assert rc == 0, name
        return round(time.perf_counter() - t, 3)
    out["offline_s"] = stage("offline", {})
    scripts = {k: scripted_runs(d["turns"], i) for i, (k, d) in enumerate(ds.items())}
    first = {round(d["user"]["words"][0]["start"], 2): k for k, d in ds.items()}  # unique per dialogue

    def answer(body, _n):
        text = body["messages"][0]["content"]
        start = float(text.split("(", 1)[1].split(",", 1)[0])
        turns = scripts[first[round(start, 2)]][body["seed"]]
        return chat_server.ok(json.dumps({"filtered_turn": turns, "continuation_info": []}))
    srv = chat_server.start(answer)
    try:
        for workers in (1, 4):
            cfg = {"llm": {"args": {"base_url": srv.base_url, "max_concurrency": 6, "max_retries": 0}},
                   "workers": workers}
            os.environ["DUPLEXEVAL_CACHE"] = str(tmp / f"cache-{workers}")
            out[f"llm_workers{workers}_s"] = stage(f"llm{workers}", cfg)
            out[f"llm_workers{workers}_cached_s"] = stage(f"llm{workers}-again", cfg)
        out["requests"] = len(srv.requests)
    finally:
        srv.shutdown()
        srv.server_close()
    runs = [[[(t["start"], t["end"]) for t in r] for r in scripts[k]] for k in ds]
    t = time.perf_counter()
    for r in runs:
        voting.vote(r)
    out["voting_only_s"] = round(time.perf_counter() - t, 4)
    return out


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200), indent=2))
