"""`duplexeval compare A B`: two runs of one dataset, paired by sample id (B minus A).

A and B are each a run of the store (its id, or `latest`) or an archive file made by `duplexeval
archive` (.tar.gz / .tar.zst; verified, extracted and its aggregate stage run again from its
archived stage outputs, rescore.rescored: an archive whose stored numbers the rescore does not
reproduce is refused, and the rescored folder is compared). The scored folder of each (its aggregate stage) goes to the aggregator's own paired comparison, run as the
component's command (`aggregator compare --json-out`, as every stage runs it: the orchestrator does
not import the aggregator): samples paired over those eligible in both runs with the counts of each
side's exclusions, the differences with their paired-bootstrap 95% intervals, and for each yes/no
metric the exact McNemar test (discordant pairs b and c, two-sided p). Written as an HTML page
(html/compare_page.py), by default runs/<A's run id>/compare-<B's run id>.html.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import atomic_write_text
from duplexeval_common.samples import NAME_PATTERN, name_problem

from .store import Store

ARCHIVE_SUFFIXES = (".tar.gz", ".tar.zst")
_RUN_ID = re.compile(NAME_PATTERN)


@dataclass
class Side:
    """One side of a comparison: its run record and the folder its scores are in."""
    role: str              # "A" or "B"
    run: dict              # run.json
    scored: Path           # the aggregate stage's folder (metrics.json, unified-samples.jsonl)
    archive: Path | None   # the archive file it came from, or None for a run of the store

    @property
    def run_id(self) -> str:
        return self.run["run_id"]

    @property
    def label(self) -> str:
        where = f"archive {self.archive.name}" if self.archive else "store"
        return f"{self.role} (run {self.run_id}, {where})"

    def info(self) -> dict:
        """What a reader needs to know of this side (no local paths: the page is the same bytes
        wherever the runs lie)."""
        r = self.run
        return {"role": self.role, "run_id": self.run_id, "model": r.get("model"), "dataset": r.get("dataset"),
                "runtime": r.get("runtime"), "limit": r.get("limit"), "status": r.get("status"),
                "asr": r.get("asr"), "judge": r.get("judge"),
                "source": "archive" if self.archive else "run",
                "archive": self.archive.name if self.archive else None}


def is_archive_ref(store: Store, ref: str) -> bool:
    """An archive: a name ending .tar.gz/.tar.zst or holding a slash, or a file that is no run id."""
    if ref.endswith(ARCHIVE_SUFFIXES) or "/" in ref:
        return True
    return not (store.runs / ref / "run.json").is_file() and Path(ref).exists()


def _aggregate_stage(run: dict, where: str) -> dict:
    from .reports import benchmark_of
    bench = benchmark_of(run)
    if not bench.has("compare"):
        raise DuplexEvalError(f"{where}: a {bench.name} run; benchmark {bench.name} has no paired comparison "
                              "(its doc page says how to compare its runs)")
    stage = next((s for s in run.get("stages") or [] if s.get("name") == "aggregate"), None)
    if stage is None or stage.get("status") == "failed":
        raise DuplexEvalError(f"{where}: the run has no completed aggregate stage (nothing scored to compare)")
    bad = name_problem(stage.get("key"))
    if bad:  # the key names a store folder
        raise DuplexEvalError(f"{where}: its aggregate stage's key {bad}")
    return stage


def _check_run_id(run: dict, where: str) -> None:
    rid = run.get("run_id") if isinstance(run, dict) else None
    if not isinstance(rid, str) or not _RUN_ID.match(rid):
        raise DuplexEvalError(f"{where}: run.json has no valid run_id")


def open_side(store: Store, ref: str, role: str, stack: contextlib.ExitStack) -> Side:
    """A run of the store or an archive (verified, then extracted for as long as `stack` is open)."""
    if ref and is_archive_ref(store, ref):
        return _open_archive(Path(ref), role, stack)
    run = store.read_run(ref)
    where = f"{role}: run {run.get('run_id', ref)}"
    _check_run_id(run, where)
    stage = _aggregate_stage(run, where)
    scored = store.stage_dir(stage["key"])
    if store.record(stage["key"]) is None or not (scored / "metrics.json").is_file():
        raise DuplexEvalError(f"{where}: its aggregate stage {stage['key'][:12]} is not in the store "
                              f"{store.root} (or is incomplete)")
    return Side(role, run, scored, None)


def _open_archive(path: Path, role: str, stack: contextlib.ExitStack) -> Side:
    """An archive verified and its aggregate stage run again from its archived stage outputs
    (rescore.rescored): the rescored folder is compared, and an archive whose stored aggregate
    outputs the rescore does not reproduce is refused."""
    from . import archive as arc
    from .rescore import NotVerified, first_change, rescored
    where = f"{role}: archive {path}"
    if not path.name.endswith(ARCHIVE_SUFFIXES):
        raise DuplexEvalError(f"{where}: not an archive (.tar.gz or .tar.zst) nor a run id")
    if not path.is_file():
        raise DuplexEvalError(f"{where}: no such file")

    def accept(run: dict) -> None:
        _check_run_id(run, where)
        _aggregate_stage(run, where)
    try:
        _root, run, res, scored = stack.enter_context(rescored(path, accept=accept))
    except NotVerified as exc:
        raise DuplexEvalError(f"{where}: does not verify: {exc.differences[0]}") from None
    except arc.ArchiveError as exc:
        raise DuplexEvalError(f"{where}: {exc}") from None
    if res.changes:
        raise DuplexEvalError(f"{where}: its stored aggregate outputs differ from a rescore of its archived "
                              f"stages ({first_change(res)})")
    if not (Path(scored) / "metrics.json").is_file():
        raise DuplexEvalError(f"{where}: its aggregate stage has no metrics.json")
    return Side(role, run, Path(scored), path)


def check_datasets(a: Side, b: Side) -> None:
    from .reports import benchmark_of
    ba, bb = benchmark_of(a.run).name, benchmark_of(b.run).name
    if ba != bb:
        raise DuplexEvalError(f"{a.label} is a run of benchmark {ba} and {b.label} of benchmark {bb}: "
                              "runs of different benchmarks do not pair")
    da, db = a.run.get("dataset"), b.run.get("dataset")
    if da != db:
        raise DuplexEvalError(f"{a.label} is a run of dataset {da} and {b.label} of dataset {db}: "
                              "runs of different datasets do not pair")


def _aggregator() -> str:
    exe = Path(sys.executable).parent / "aggregator"
    found = str(exe) if exe.is_file() else shutil.which("aggregator")
    if not found:
        raise DuplexEvalError("the aggregator's command `aggregator` is not installed in this environment "
                              "(make setup)")
    return found


def aggregator_compare(a: Side, b: Side, options: tuple[str, ...] = ()) -> tuple[dict, str]:
    """The aggregator's paired comparison of the two scored folders: (its JSON, its table)."""
    with tempfile.TemporaryDirectory(prefix="duplexeval-compare-") as tmp:
        out = Path(tmp) / "compare.json"
        from .reports import benchmark_of
        cmd = [_aggregator(), "compare", "--benchmark", benchmark_of(a.run).name, str(a.scored), str(b.scored),
               "--json-out", str(out)]
        for opt in options:
            cmd += ["--option", opt]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0 or not out.is_file():
            lines = [x for x in p.stderr.splitlines() if x.strip()]
            msg = lines[-1] if lines else f"exit code {p.returncode}"
            msg = msg.removeprefix("error: ")
            # name the runs, not the folders they were extracted to
            for side in (a, b):
                msg = msg.replace(f"{side.role} ({side.scored})", side.label).replace(str(side.scored), side.label)
            raise DuplexEvalError(f"compare: {msg}")
        return json.loads(out.read_text(encoding="utf-8")), p.stdout


def default_output(store: Store, a: Side, b: Side) -> Path:
    return store.runs / a.run_id / f"compare-{b.run_id}.html"


def compare_runs(store: Store, ref_a: str, ref_b: str, out: Path | None = None,
                 options: tuple[str, ...] = ()) -> tuple[dict, str, Path]:
    """Compare two runs (or archives); write the HTML page. Returns (result, text, page path).

    result: {"a": side info, "b": side info, "comparison": the aggregator's compare() result}."""
    from .reports import benchmark_of
    with contextlib.ExitStack() as stack:
        a = open_side(store, ref_a, "A", stack)
        b = open_side(store, ref_b, "B", stack)
        check_datasets(a, b)
        comparison, table = aggregator_compare(a, b, tuple(options))
        result = {"a": a.info(), "b": b.info(), "comparison": comparison}
        path = Path(out) if out is not None else default_output(store, a, b)
        if path.exists() and path.is_dir():
            raise DuplexEvalError(f"{path}: is a folder (give the HTML file's name)")
        text = header(result) + table
        atomic_write_text(path, benchmark_of(a.run).hook("compare").page(result))
    return result, text, path


def header(result: dict) -> str:
    lines = []
    for side in (result["a"], result["b"]):
        src = f"archive {side['archive']}" if side["archive"] else "store"
        lines.append(f"{side['role']}: run {side['run_id']} ({src}): model {side['model']}, dataset "
                     f"{side['dataset']}, runtime {side['runtime']}, limit {side['limit']}")
    return "\n".join(lines) + "\n"
