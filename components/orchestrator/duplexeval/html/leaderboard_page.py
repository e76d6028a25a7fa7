"""The HTML page of `duplexeval leaderboard`: archived runs' headline metrics side by side.

From leaderboard.build's board only (archive paths relative to the page), so the same archives
give the same bytes. Every row links to its archive file. Rendered from templates/leaderboard.html
(Jinja2, autoescape).
"""

from __future__ import annotations

from duplexeval_common.html import templates
from duplexeval_common.html.page import link, page


def _overview(board: dict) -> dict | None:
    if not board["rows"]:
        return None
    rows = [[link(r["archive"], str(r["model"])), r["dataset"], r["runtime"], r["run_id"], r["status"], r["asr"],
             r["judge"], r["definitions"], r["official_revision"] or "-", link(r["archive"], r["archive_name"]),
             r["samples"], r["eligible"]] for r in board["rows"]]
    return {"headers": ["model", "dataset", "runtime", "run", "status", "ASR", "judge", "unified definitions",
                        "official revision", "archive", "samples", "eligible"], "rows": rows}


def _subset(board: dict, subset: str) -> dict:
    from ..leaderboard import subset_table
    headers, body = subset_table(board, subset)
    rows = [r for r in board["rows"] if subset in r["subsets"]]
    cells = []
    for r, line in zip(rows, body):
        # model linked to the archive, the archive column as its link too
        cells.append([link(r["archive"], line[0]), *line[1:-1], link(r["archive"], r["archive_name"])])
    task = rows[0]["subsets"][subset]["task"] if rows else ""
    return {"name": subset, "task": task, "headers": headers, "rows": cells}


def render(board: dict) -> str:
    from ..leaderboard import subsets_of
    body = templates.render(
        "leaderboard.html", near=__file__, n_rows=len(board["rows"]), overview=_overview(board),
        subsets=[_subset(board, s) for s in subsets_of(board)],
        rejected=[[link(r["archive"], r["archive_name"]), r["problem"]] for r in board["rejected"]])
    return page("duplexeval leaderboard", body)
