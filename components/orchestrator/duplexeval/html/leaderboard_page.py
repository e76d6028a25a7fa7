"""The HTML page of `duplexeval leaderboard`: archived runs' headline metrics side by side.

From leaderboard.build's board only (archive paths relative to the page), so the same archives
give the same bytes. Every row links to its archive file.
"""

from __future__ import annotations

from duplexeval_common.html.page import escape, link, page, table


def _overview(board: dict) -> str:
    rows = [[link(r["archive"], str(r["model"])), r["dataset"], r["runtime"], r["run_id"], r["status"], r["asr"],
             r["judge"], r["definitions"], r["official_revision"] or "-", link(r["archive"], r["archive_name"]),
             r["samples"], r["eligible"]] for r in board["rows"]]
    return table(["model", "dataset", "runtime", "run", "status", "ASR", "judge", "unified definitions",
                  "official revision", "archive", "samples", "eligible"], rows, left=10)


def _subset(board: dict, subset: str) -> str:
    from ..leaderboard import subset_table
    headers, body = subset_table(board, subset)
    rows = [r for r in board["rows"] if subset in r["subsets"]]
    cells = []
    for r, line in zip(rows, body):
        # model linked to the archive, the archive column as its link too
        cells.append([link(r["archive"], line[0]), *line[1:-1], link(r["archive"], r["archive_name"])])
    task = rows[0]["subsets"][subset]["task"] if rows else ""
    return (f'<h2 id="{escape(subset)}">{escape(subset)} <span class="muted">({escape(task)})</span></h2>\n'
            + table(headers, cells, left=3))


def _rejected(board: dict) -> str:
    if not board["rejected"]:
        return ""
    rows = [[link(r["archive"], r["archive_name"]), r["problem"]] for r in board["rejected"]]
    return ('<h2 id="rejected" class="bad">Rejected archives (not scored)</h2>\n'
            + table(["archive", "first problem"], rows, left=2))


def render(board: dict) -> str:
    from ..leaderboard import subsets_of
    subsets = subsets_of(board)
    nav = " ".join(f'<a href="#{escape(s)}">{escape(s)}</a>' for s in subsets)
    if board["rejected"]:
        nav += ' <a href="#rejected">rejected</a>'
    body = [
        "<h1>Leaderboard</h1>",
        f"<p>{len(board['rows'])} archived run(s) scored, {len(board['rejected'])} rejected. Each archive "
        "was verified before it was read; one that failed is "
        "listed below with its first problem and not scored. Per subset: the official headline metrics "
        "(the upstream scripts' numbers) and the unified headline metrics with their 95% intervals "
        "(Wilson for shares, cluster bootstrap for medians and pooled ratios). Samples: eligible / "
        "selected. Rows are sorted by dataset, model, runtime and run id; the board does not rank: "
        "compare two runs with <code>duplexeval compare</code> for paired differences.</p>",
        f"<nav>{nav}</nav>" if nav else "",
        _overview(board) if board["rows"] else '<p class="muted">No archive was scored.</p>',
    ]
    body += [_subset(board, s) for s in subsets]
    body.append(_rejected(board))
    return page("duplexeval leaderboard", "\n".join(x for x in body if x))
