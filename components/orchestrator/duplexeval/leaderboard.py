"""`duplexeval leaderboard FILE...`: archived runs' headline metrics side by side.

From archive files only (made by `duplexeval archive`), so every number on the board can be
checked against the file it links to. Each archive is verified, then its aggregate stage is run
again from its archived stage outputs (rescore.rescored): the numbers on the board are the
rescored ones, and an archive whose stored aggregate outputs the rescore does not reproduce (a
metrics.json edited with its hashes recomputed) is rejected. One that does not verify, cannot be
read, or holds no scored aggregate stage is listed as rejected with its first problem and not
scored. For each accepted archive: model, dataset, runtime, samples, and per subset the headline
metrics of its benchmark (the benchmark's declaration: each with its column, and its 95% interval
where it has one). Rows are sorted by dataset, model, runtime, run
id and archive name, so the same archives give the same board in any order; the board does not
rank systems (the headline metrics point in different directions and their intervals overlap on
small runs).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import atomic_write_text, read_json

from .compare_runs import ARCHIVE_SUFFIXES
from .reports import benchmark_of


def _label(h) -> str:
    return f"{h.metric} ({h.column})"


def _link(path: Path, out: Path) -> str:
    """The archive's path relative to the page's folder (forward slashes)."""
    rel = os.path.relpath(Path(path).resolve(), Path(out).resolve().parent)
    return Path(rel).as_posix()


def _subsets(metrics: dict, bench, tasks: dict[str, str]) -> dict:
    """Per subset: its task, samples and eligible ones, and each headline metric's value,
    interval and status (the benchmark's declaration)."""
    out = {}
    subsets = metrics.get("subsets")
    if not isinstance(subsets, dict):
        raise DuplexEvalError("metrics.json has no subsets")
    for name in sorted(subsets):
        m = subsets[name]
        if not isinstance(m, dict):
            raise DuplexEvalError(f"metrics.json: subset {name} is not an object")
        task = m.get("task") or tasks.get(name)
        counts = m.get("counts") or {}
        out[name] = {
            "task": task, "n": m.get("n", m.get("rounds_declared")),
            "eligible": counts.get("eligible", m.get("rounds_observed")),
            "headline": {_label(h): {**h.read(m), "higher_is_better": h.higher_is_better}
                         for h in bench.headline_of(task)},
        }
    return out


def _tasks(scored: Path) -> dict[str, str]:
    """{subset: task} of a scored folder whose metrics.json does not name them (unified.json's)."""
    try:
        u = read_json(scored / "unified.json")
    except (OSError, ValueError):
        return {}
    subs = u.get("subsets") if isinstance(u, dict) else None
    return {k: v["task"] for k, v in (subs or {}).items() if isinstance(v, dict) and isinstance(v.get("task"), str)}


def _num(x) -> int:
    return x if isinstance(x, int) and not isinstance(x, bool) else 0


def _accept(run: dict) -> None:
    if not isinstance(run, dict) or not isinstance(run.get("run_id"), str):
        raise DuplexEvalError("run.json is not a run record")
    benchmark_of(run)  # a benchmark this installation does not have: one line
    stage = next((s for s in run.get("stages") or [] if isinstance(s, dict) and s.get("name") == "aggregate"),
                 None)
    if stage is None or stage.get("status") == "failed":
        raise DuplexEvalError("the run has no completed aggregate stage (nothing scored)")


def read_entry(path: Path, out: Path) -> dict:
    """One accepted archive's row; a DuplexEvalError (its first problem) when it is rejected.

    The archive is verified, and its aggregate stage run again from its archived stage outputs
    (rescore.rescored, the installed aggregator): an archive whose stored aggregate outputs the
    rescore does not reproduce is rejected, and the row's numbers are the rescored ones."""
    from .rescore import NotVerified, first_change, rescored
    if not path.name.endswith(ARCHIVE_SUFFIXES):
        raise DuplexEvalError("not an archive (.tar.gz or .tar.zst)")
    if not path.is_file():
        raise DuplexEvalError("no such file")
    with contextlib.ExitStack() as stack:
        try:
            root, run, res, scored = stack.enter_context(rescored(path, accept=_accept))
        except NotVerified as exc:
            raise DuplexEvalError(exc.differences[0]) from None
        if res.changes:
            raise DuplexEvalError("its stored aggregate outputs differ from a rescore of its archived stages "
                                  f"({first_change(res)})")
        bench = benchmark_of(run)
        try:
            metrics = read_json(Path(scored) / "metrics.json")
        except (OSError, ValueError) as exc:
            raise DuplexEvalError(f"metrics.json of the rescored aggregate stage not readable ({exc})") from None
        tasks = _tasks(Path(scored))
    if not isinstance(metrics, dict):
        raise DuplexEvalError("metrics.json is not an object")
    subsets = _subsets(metrics, bench, tasks)
    revision = metrics.get("official_revision")
    return {
        "archive": _link(path, out), "archive_name": path.name, "path": str(path), "run_id": run["run_id"],
        "benchmark": bench.name, "model": run.get("model"), "dataset": run.get("dataset"),
        "runtime": run.get("runtime"), "status": run.get("status"), "limit": run.get("limit"), "asr": run.get("asr"), "judge": run.get("judge"),
        "definitions": metrics.get("definitions"),
        "official_revision": revision.get("name") if isinstance(revision, dict) else None,
        "samples": sum(_num(s["n"]) for s in subsets.values()),
        "eligible": sum(_num(s["eligible"]) for s in subsets.values()),
        "subsets": subsets,
    }


def _key(row: dict) -> tuple:
    return tuple(str(row.get(k) or "") for k in ("dataset", "model", "runtime", "run_id", "archive_name",
                                                  "archive"))


def build(files: list[Path], out: Path) -> dict:
    """{"rows": accepted archives (sorted), "rejected": [{"archive", "archive_name", "path", "problem"}]}.

    "archive" is the file's path relative to the page `out` (the page's links), "path" as given
    (the console's)."""
    from .archive import ArchiveError
    rows, rejected = [], []
    for f in files:
        f = Path(f)
        try:
            rows.append(read_entry(f, out))
        except (ArchiveError, DuplexEvalError) as exc:
            problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            rejected.append({"archive": _link(f, out), "archive_name": f.name, "path": str(f), "problem": problem})
    rows.sort(key=_key)
    rejected.sort(key=lambda r: (r["archive_name"], r["archive"], r["problem"]))
    return {"rows": rows, "rejected": rejected}


def subsets_of(board: dict) -> list[str]:
    return sorted({name for row in board["rows"] for name in row["subsets"]})


def _f(x) -> str:
    return "-" if x is None else f"{float(x):.4f}"


def _iv(iv) -> str:
    if iv is None:
        return "-"
    return "[" + ", ".join("inf" if x is None else f"{float(x):.4f}" for x in iv) + "]"


def subset_table(board: dict, subset: str) -> tuple[list[str], list[list[str]]]:
    """Headers and rows (strings) of one subset's part of the board: a column per headline metric,
    and its 95% interval beside it where any row has one."""
    rows = [r for r in board["rows"] if subset in r["subsets"]]
    labels = list(dict.fromkeys(k for r in rows for k in r["subsets"][subset]["headline"]))
    with_iv = {k for k in labels if any((r["subsets"][subset]["headline"].get(k) or {}).get("interval") is not None
                                        for r in rows)}
    headers = ["model", "dataset", "runtime", "samples"]
    for k in labels:
        headers += [k, "95% interval"] if k in with_iv else [k]
    headers.append("archive")
    body = []
    for r in rows:
        s = r["subsets"][subset]
        line = [str(r["model"]), str(r["dataset"]), str(r["runtime"]),
                f"{'-' if s['eligible'] is None else s['eligible']}/{'-' if s['n'] is None else s['n']}"]
        for k in labels:
            u = s["headline"].get(k) or {"value": None, "interval": None, "status": None}
            line.append(_f(u["value"]) if u["value"] is not None or u["status"] in (None, "ok")
                        else str(u["status"]).replace("_", " "))
            if k in with_iv:
                line.append(_iv(u["interval"]))
        line.append(r["path"])
        body.append(line)
    return headers, body


def _text_table(headers: list[str], rows: list[list[str]], left: int) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def fmt(cells):
        return "  ".join(c.ljust(w) if i < left or i == len(cells) - 1 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [fmt(headers)] + [fmt(r) for r in rows]


def render_text(board: dict) -> str:
    rows, rejected = board["rows"], board["rejected"]
    lines = [f"leaderboard: {len(rows)} archive(s) scored, {len(rejected)} rejected"]
    for subset in subsets_of(board):
        task = next(r["subsets"][subset]["task"] for r in rows if subset in r["subsets"])
        lines.append(f"\n== {subset} ({task}); samples eligible/selected")
        lines += ["   " + x for x in _text_table(*subset_table(board, subset), left=3)]
    if rejected:
        lines.append("\nrejected (not scored):")
        lines += [f"   {r['path']}: {r['problem']}" for r in rejected]
    return "\n".join(lines) + "\n"


def write(board: dict, out: Path) -> Path:
    from .html import leaderboard_page
    out = Path(out)
    if out.is_dir():
        raise DuplexEvalError(f"{out}: is a folder (give the HTML file's name)")
    atomic_write_text(out, leaderboard_page.render(board))
    return out
