"""The HTML report of a run, cached like a stage, and the run folder's links.

The report of a run lives in store/reports/<digest>/ (report.html and samples/<subset>/<id>.html),
digest = sha256 over REPORT_VERSION, the run's stages (name and key) and the few fields of
run.json the report shows that no stage key holds (model, dataset, asr, judge, limit, runtime,
status, reason, missing samples). A cached rerun of a run has the same digest and reuses the
folder. It is built in a temporary folder next to it and renamed into place, so a folder under
its digest name is always complete; of two builders of one digest, the second finds the
first's folder taken and removes its own.

The run folder runs/<id>/ gets relative links a person can open: metrics.json and report.md (the
aggregate stage's files), report.html and samples/ (the report's index and its sample pages, so
that the index's links to samples/... and the pages' links back to ../../report.html work from
the run folder too).

The report holds no audio: its sample pages link the stages' WAVs in the store by relative path
(duplexeval_common.html.run.player). `self_contained` writes one file to send instead: the index
and the chosen samples' pages with their audio inlined (`duplexeval report --self-contained`).
"""

from __future__ import annotations

import os
import secrets as _random
import shutil
import tempfile
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_json

REPORT_VERSION = "4"
REPORTS = "reports"
INDEX = "report.html"
RUN_FIELDS = ("model", "dataset", "asr", "judge", "limit", "runtime", "status", "reason", "missing")
AGGREGATE_FILES = ("metrics.json", "report.md")
SELF_CONTAINED = "report-self-contained.html"  # the default file of `report --self-contained`
MAX_BUNDLE = 100  # samples a self-contained file holds without --samples


def digest(record: dict) -> str:
    """What the report of a run depends on (see the module docstring)."""
    return sha256_json({"report_version": REPORT_VERSION,
                        "stages": [[s.get("name"), s.get("key"), s.get("status")] for s in record.get("stages", [])],
                        "run": {k: record.get(k) for k in RUN_FIELDS}})


def benchmark_of(record: dict):
    """The benchmark a run record names (one made before the record named it: the default)."""
    from duplexeval_common import benchmarks
    name = record.get("benchmark")
    return benchmarks.get(name) if name else benchmarks.default()


def report_dir(store, record: dict) -> Path:
    return store.root / REPORTS / digest(record)


def aggregate_dir(store, record: dict) -> Path | None:
    """The folder of the run's aggregate stage when it completed, else None."""
    stages = record.get("stages") or []
    last = stages[-1] if stages else None
    if not last or last.get("name") != "aggregate" or last.get("status") == "failed":
        return None
    d = store.stage_dir(last["key"])
    return d if (d / "metrics.json").is_file() else None


def ensure(store, record: dict) -> tuple[Path, bool]:
    """(the report folder, whether this call built it): built unless it is already in the store."""
    final = report_dir(store, record)
    if (final / INDEX).is_file():
        return final, False
    report = benchmark_of(record).hook("report")
    parent = final.parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = parent / f".tmp-{final.name[:16]}-{os.getpid()}-{_random.token_hex(4)}"
    tmp.mkdir()
    try:
        report.build(store, record, tmp)
        _chmod_tree(tmp)
        try:
            os.rename(tmp, final)
            return final, True
        except OSError:
            if (final / INDEX).is_file():  # another builder won: use its folder
                shutil.rmtree(tmp, ignore_errors=True)
                return final, False
            raise DuplexEvalError(f"{final} exists without {INDEX} (not made by duplexeval report): "
                                  "remove it and build again") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _chmod_tree(root: Path) -> None:
    """Folders and files readable by others, as the store's other outputs are."""
    mask = os.umask(0)
    os.umask(mask)
    for d, _, files in os.walk(root):
        os.chmod(d, 0o777 & ~mask)
        for f in files:
            os.chmod(os.path.join(d, f), 0o666 & ~mask)


def link_aggregate(store, run_id: str, record: dict) -> None:
    """runs/<id>/metrics.json and report.md -> the aggregate stage's files (when it completed)."""
    agg = aggregate_dir(store, record)
    if agg is None:
        return
    for name in AGGREGATE_FILES:
        if (agg / name).is_file():
            store.link_in_run(run_id, name, agg / name)


def link_report(store, run_id: str, folder: Path) -> Path:
    """runs/<id>/report.html and samples/ -> the report's index and sample pages."""
    if (folder / "samples").is_dir():
        store.link_in_run(run_id, "samples", folder / "samples")
    return store.link_in_run(run_id, INDEX, folder / INDEX)


def build_and_link(store, run_ref: str) -> tuple[Path, bool]:
    """`duplexeval report RUN`: the run's report (built or reused) linked from its run folder;
    (runs/<id>/report.html, whether it was built now)."""
    record = store.read_run(run_ref)
    if record.get("status") == "running":
        raise DuplexEvalError(f"run {record['run_id']} is still running (or was killed): no report yet")
    run_id = record["run_id"]
    link_aggregate(store, run_id, record)
    folder, built = ensure(store, record)
    return link_report(store, run_id, folder), built


def paths(store, record: dict) -> dict[str, Path | None]:
    """Where run.json, metrics.json, report.md and report.html of a run are (absolute): the run
    folder's link when it exists, else the store's file; None when there is none."""
    run_dir = store.resolve_run(record["run_id"])
    out: dict[str, Path | None] = {"run.json": run_dir / "run.json"}
    agg = aggregate_dir(store, record)
    for name in AGGREGATE_FILES:
        p = run_dir / name
        out[name] = p if p.exists() else (agg / name if agg and (agg / name).is_file() else None)
    p = run_dir / INDEX
    rep = report_dir(store, record) / INDEX
    out[INDEX] = p if p.exists() else (rep if rep.is_file() else None)
    return out


def self_contained(store, run_ref: str, samples: list[str] | None = None, out: Path | None = None) -> tuple[Path, int]:
    """`duplexeval report RUN --self-contained`: one HTML file with the index and the pages of
    `samples` (every sample's when None, at most MAX_BUNDLE), their audio inlined; written to
    `out` (default runs/<id>/report-self-contained.html). (the file, the number of sample pages)."""
    from duplexeval_common.html import run as html_run
    from duplexeval_common.jsonio import atomic_write_text
    from duplexeval_common.samples import id_sort_key
    record = store.read_run(run_ref)
    run_id = record["run_id"]
    if record.get("status") == "running":
        raise DuplexEvalError(f"run {run_id} is still running (or was killed): no report yet")
    keys = list(dict.fromkeys(samples)) if samples else None
    if keys is None:
        n = len(html_run.sample_keys(html_run.load(store, record)))
        if n > MAX_BUNDLE:
            raise DuplexEvalError(f"run {run_id} has {n} samples: choose at most {MAX_BUNDLE} for one file "
                                  "with --samples SUBSET/ID")
    out = Path(out) if out is not None else store.resolve_run(run_id) / SELF_CONTAINED
    if out.is_dir():
        raise DuplexEvalError(f"{out} is a folder: give a file name with -o")
    report = benchmark_of(record).hook("report")
    with tempfile.TemporaryDirectory(prefix=".duplexeval-bundle-", dir=store.root) as tmp:
        folder = Path(tmp)
        with html_run.self_contained(keys):
            report.build(store, record, folder)
        pages = sorted(folder.joinpath(html_run.SAMPLES_DIR).glob("*/*.html"))
        found = {f"{p.parent.name}/{p.stem}": p for p in pages}
        unknown = [k for k in keys or [] if k not in found]
        if unknown:
            raise DuplexEvalError(f"run {run_id} has no sample {unknown[0]!r} (give SUBSET/ID as the report "
                                  f"lists them; {len(unknown)} unknown)")
        index = (folder / INDEX).read_text(encoding="utf-8")
        order = keys or sorted(found, key=lambda k: (k.partition("/")[0], *id_sort_key(k.partition("/")[2])))
        chosen = [(k, found[k].read_text(encoding="utf-8")) for k in order]
    title = f"duplexeval report {run_id}: {record.get('model')} on {record.get('dataset')}"
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, html_run.bundle(title, index, chosen))
    return out, len(chosen)
