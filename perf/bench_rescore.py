"""Benchmark: rescoring an archived full-size FDB v1.0 run against the official scripts.

    python perf/bench_rescore.py --official PATH/TO/Full-Duplex-Bench/v1_v1.5/evaluation \
        [--work /tmp/fdb-rescore] [--scale 1.0] [--jobs N] [--format tar.zst|tar.gz]

1. Builds the full-size tree of bench_fdb_scoring.py (727 samples: synthetic Piper speech placed on
   each sample's timeline), under <work>/src/samples.
2. Makes the run's upstream stages from that tree through the stage API (duplexeval_common.stage):
   `bench-dataset` (input.wav and the task annotation), `bench-runner` (output.wav), `bench-asr`
   (output.json) and `bench-judge` (judge.json). They are NOT the real dataset/runner/asr/judge
   components: they copy the tree's files into stage folders so that a run of the real aggregate
   stage can be made and archived at full size. Their stage keys, configs and a run.json are
   written as `eval` writes them (component identity "bench:tree-copy").
3. Runs the real aggregate stage through the engine and the local runtime (cold VAD cache), writes
   the run record, and archives the run with `duplexeval archive` (timed).
4. Times `duplexeval rescore ARCHIVE` (verify, safe extraction, the aggregate stage again, warm from
   the archived VAD cache entries, byte comparison), and checks it reports identical outputs.
5. Times the official eval_*.py scripts on the same tree (bench_fdb_scoring.run_official), and
   prints rescore / official, wall and CPU (target: under 1/10).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_fdb_scoring as fdb  # noqa: E402

TASK_FILES = ("pause.json", "turn_taking.json", "interrupt.json")

def copy_stage(name: str, files: tuple[str, ...], root_files: dict | None = None):
    """A stage (stage API) that copies each sample's `files` from the tree source input."""
    from duplexeval_common.stage import Stage

    def process(ctx) -> None:
        for f in files:
            if ctx.has_input(f):
                ctx.copy_input(f)

    def finalize(sctx) -> None:
        for fname, obj in (root_files or {}).items():
            sctx.write_json(fname, obj)
    return Stage(name, "bench", process, finalize=finalize if root_files else None)


def make_run(home: Path, src: Path, icc: Path, jobs: int) -> tuple[str, float]:
    """The upstream stages (stage API), the real aggregate stage, run.json; (run id, aggregate s)."""
    from duplexeval import __version__, provenance
    from duplexeval.engine import Engine
    from duplexeval.plan import StageSpec
    from duplexeval.runtime import Limits
    from duplexeval.runtime_local import LocalRuntime
    from duplexeval.store import Store, content_digest, stage_key
    from duplexeval_common.jsonio import atomic_write_text
    from duplexeval_common.stage import numeric_environment

    store = Store(home)
    specs = [("dataset", "bench-dataset", ("input.wav", *TASK_FILES), [], None),
             ("runner", "bench-runner", ("output.wav",), ["dataset"], None),
             ("asr", "bench-asr", ("output.json",), ["dataset", "runner"], None),
             ("judge", "bench-judge", (), ["dataset", "asr"],
              {"judge.json": {"judge": "stub", "model": "stub-hash-judge", "official": False}})]
    done: dict[str, dict] = {}
    stages = []
    identity = "bench:tree-copy"
    for name, component, files, needs, root_files in specs:
        config = {"copies": list(files), "tree": "bench_fdb_scoring.build_tree"}
        digests = [content_digest(done[n]) for n in needs] or [f"source:bench-tree:{src.name}"]
        key = stage_key(component, identity, config, digests, numeric_environment())
        store.write_config(key, config)
        out = store.stage_dir(key)
        os.environ["DUPLEXEVAL_STAGE_KEY"], os.environ["DUPLEXEVAL_IDENTITY"] = key, identity
        t0 = time.perf_counter()
        rc = copy_stage(component, files, root_files).run([src] + [store.stage_dir(done[n]["key"]) for n in needs],
                                                          out, config)
        assert rc == 0, f"{name}: exit {rc}"
        rec = {**store.record(key), "key": key}
        done[name] = rec
        stages.append({"name": name, "component": component, "key": key, "identity": identity, "cached": False,
                       "status": "ok", "seconds": round(time.perf_counter() - t0, 2), "failed_samples": 0,
                       "skipped_samples": 0, "config": config, "inputs": digests, "reason": "",
                       "provenance": {"identity": identity, "note": "bench_rescore.py: a copy of the tree"}})
    for k in ("DUPLEXEVAL_STAGE_KEY", "DUPLEXEVAL_IDENTITY"):
        os.environ.pop(k, None)
    run_id = store.new_run()
    run_dir = store.run_dir(run_id)
    _, pk = provenance.packages()
    atomic_write_text(run_dir / "packages.txt", "".join(f"{line}\n" for line in pk))
    cache = home / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    engine = Engine(store, LocalRuntime(), Limits(), run_dir, cache)
    spec = StageSpec("aggregate", "aggregator", {"benchmark": "fdb-v1", "icc_gt": str(icc)},
                     ["dataset", "runner", "asr", "judge"])
    t0 = time.perf_counter()
    res = engine.run([spec], {n: done[n] for n in ("dataset", "runner", "asr", "judge")})[0]
    t_agg = time.perf_counter() - t0
    assert res.status == "ok", res.reason
    stages.append(res.record())
    record = {"run_id": run_id, "command": ["bench_rescore.py"], "runtime": "local",
              "dataset": "fdb-v1.0-synthetic-tree", "model": "bench-tree", "asr": "bench", "judge": "stub",
              "limit": None, "status": "ok", "stages": stages, "limits": Limits().record(),
              "environment": {**provenance.environment(), "duplexeval": __version__}, "summary": None,
              "missing": {}, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "seconds": 0.0, "executor": {"name": "local"}}
    store.write_run(run_id, record)
    return run_id, t_agg


def extraction_pass(archive: Path) -> tuple[float, float, str]:
    """(seconds of verified()'s one pass, seconds removing its folder, where it extracted)."""
    from duplexeval.archive import verified
    t0 = time.perf_counter()
    with verified(archive) as (root, diffs):
        t1 = time.perf_counter()
        assert diffs == [], diffs[:3]
        where = str(root.parent.parent)
    return t1 - t0, time.perf_counter() - t1, where


def dx(home: Path, *args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "duplexeval"), "--home", str(home), *args]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--official", type=Path, required=True,
                    help="the v1_v1.5/evaluation folder of a Full-Duplex-Bench checkout")
    ap.add_argument("--work", type=Path, default=Path("/tmp/fdb-rescore"))
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the full-size tree")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--format", choices=["tar.zst", "tar.gz"], default="tar.zst")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    work = args.work.resolve()
    src = work / "src"
    tree = src / "samples"
    home = work / "home"
    icc = args.official / "icc_gt_distribution.json"
    for d in (src, home):
        shutil.rmtree(d, ignore_errors=True)
    tree.mkdir(parents=True)
    t0 = time.perf_counter()
    sizes = fdb.build_tree(tree, fdb.speech_pool(work / "pool"), json.loads(icc.read_text()), args.scale, args.seed)
    n = sum(sizes.values())
    print(f"tree {tree}: {sizes} ({n} samples) built in {time.perf_counter() - t0:.1f}s", flush=True)

    os.environ["DUPLEXEVAL_CACHE"] = str(home / "cache")
    run_id, t_agg = make_run(home, src, icc, args.jobs)
    print(f"run {run_id}: upstream stages from the tree (stage API), aggregate stage cold {t_agg:.1f}s", flush=True)

    archive = work / f"run.{args.format}"
    proc, t_arch, c_arch = fdb.timed(dx(home, "archive", run_id, "-o", str(archive)), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(proc.stdout.strip(), flush=True)
    proc, t_ver, c_ver = fdb.timed(dx(home, "verify", str(archive)), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    print(proc.stdout.strip(), flush=True)

    load0 = os.getloadavg()[0]
    out = work / "rescored"
    shutil.rmtree(out, ignore_errors=True)
    proc, t_res, c_res = fdb.timed(dx(home, "rescore", str(archive), "-o", str(out)), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    print(proc.stdout.strip(), flush=True)
    warm = "[vad] computing" not in proc.stderr
    print(f"rescore warm from the archived VAD cache (no VAD computed): {warm}", flush=True)
    m = re.search(r"aggregate ok in ([0-9.]+)s", proc.stderr)
    t_stage = float(m.group(1)) if m else float("nan")
    t_pass, t_clean, where = extraction_pass(archive)
    print(f"parts: the one pass (check, hash, write every member into {where}) {t_pass:.2f}s, removing the "
          f"extracted folder {t_clean:.2f}s (timed again in this process); the aggregate stage "
          f"{t_stage:.2f}s (as the rescore printed it)", flush=True)

    official_work = work / "official"
    official_work.mkdir(exist_ok=True)
    _, t_off, c_off = fdb.run_official(args.official, tree, official_work)
    load1 = os.getloadavg()[0]
    size = archive.stat().st_size
    print(f"\nsamples {n}; archive {archive.name}: {size / 1e6:.1f} MB; {os.cpu_count()} cores, "
          f"load average {load0:.1f} at start, {load1:.1f} at end")
    print(f"{'':34}{'wall s':>8}{'cpu s':>8}")
    print(f"{'aggregate stage, cold (make run)':34}{t_agg:8.1f}")
    print(f"{'duplexeval archive':34}{t_arch:8.1f}{c_arch:8.1f}")
    print(f"{'duplexeval verify':34}{t_ver:8.1f}{c_ver:8.1f}")
    print(f"{'duplexeval rescore':34}{t_res:8.1f}{c_res:8.1f}")
    print(f"{'  of which the one pass':34}{t_pass:8.1f}")
    print(f"{'  of which the aggregate stage':34}{t_stage:8.1f}")
    print(f"{'official scripts (5 subsets)':34}{t_off:8.1f}{c_off:8.1f}")
    print(f"rescore / official: wall {t_res / t_off:.3f}, cpu {c_res / c_off:.3f} (target < 0.1)")
    if not warm or t_res / t_off >= 0.1:
        sys.exit(1)


if __name__ == "__main__":
    main()
