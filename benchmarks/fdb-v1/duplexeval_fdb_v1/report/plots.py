"""The Full-Duplex-Bench v1.0 report's plots (matplotlib, inlined PNG): latencies, and rates
with intervals. Each takes plain data (unified-samples.jsonl rows, metrics.json) and returns a
page.Raw <img>, or None when there is nothing to draw; fixed sizes, no jitter: the same data gives
the same PNG bytes."""

from __future__ import annotations

from duplexeval_common.html.page import Raw, figure_png, matplotlib
from duplexeval_common.html.plots import COLORS

LATENCY_TASKS = ("smooth_turn_taking", "user_interruption")
TASK_TITLES = {"pause_handling": "pause handling", "smooth_turn_taking": "smooth turn-taking",
               "user_interruption": "user interruption", "backchannel": "backchannel"}


def _median(values: list[float]) -> float:
    """The ceil(n/2)-th smallest value: the aggregator's quantile rule (no interpolation)."""
    vals = sorted(values)
    return vals[(len(vals) + 1) // 2 - 1]


def latency_plot(rows: list[dict]) -> Raw | None:
    """Response latencies per task: one panel per task with latencies (turn-taking, interruption),
    one line per subset, a dot per responding sample and a bar at the median of the responders.

    rows: unified-samples.jsonl rows ({"subset", "task", "eligible", "latency_s", ...})."""
    by_task: dict[str, dict[str, list[float]]] = {}
    counts: dict[str, list[int]] = {}
    for r in rows:
        if r.get("task") not in LATENCY_TASKS or not r.get("eligible"):
            continue
        lat = by_task.setdefault(r["task"], {}).setdefault(r["subset"], [])
        c = counts.setdefault(r["subset"], [0, 0])
        c[1] += 1
        if isinstance(r.get("latency_s"), (int, float)):
            lat.append(float(r["latency_s"]))
            c[0] += 1
    tasks = [t for t in LATENCY_TASKS if t in by_task]
    if not tasks:
        return None
    plt = matplotlib()
    heights = [max(1, len(by_task[t])) for t in tasks]
    fig, axes = plt.subplots(len(tasks), 1, figsize=(9, 0.9 + 0.75 * sum(heights) + 0.6 * len(tasks)),
                             squeeze=False, gridspec_kw={"height_ratios": heights})
    top = max([v for t in tasks for vs in by_task[t].values() for v in vs] + [1.0])
    for ax, task in zip(axes[:, 0], tasks):
        subsets = sorted(by_task[task])
        for i, subset in enumerate(subsets):
            vals = sorted(by_task[task][subset])
            ys = [i + 0.08 * ((k % 5) - 2) for k in range(len(vals))]  # fixed spread, no jitter
            ax.scatter(vals, ys, s=22, color=COLORS[i % len(COLORS)], alpha=0.8, zorder=3)
            if vals:
                ax.plot([_median(vals)] * 2, [i - 0.3, i + 0.3], color="black", lw=2, zorder=4)
            got, n = counts[subset]
            ax.text(1.01, i, f"{got}/{n} responded", transform=ax.get_yaxis_transform(), va="center",
                    fontsize=8)
        ax.set_yticks(range(len(subsets)), subsets, fontsize=8)
        ax.set_ylim(-0.6, len(subsets) - 0.4)
        ax.set_xlim(0, top * 1.08)
        ax.set_title(f"{TASK_TITLES.get(task, task)}: response latency (s), bar = median of responders",
                     fontsize=9, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("seconds after the end of the user's turn (E) / interruption (R)", fontsize=8)
    fig.subplots_adjust(left=0.3, right=0.82, hspace=0.6, top=0.93, bottom=0.12)
    return figure_png(fig, "response latency per task")


def rates_plot(metrics: dict, tasks: dict[str, str]) -> Raw | None:
    """Per subset: the official take-over rate (TOR, a diamond; no interval) and every unified
    share with the 95% Wilson interval the aggregator computed (metrics.json)."""
    from ..score.report import _ordered
    lines = []  # (label, value, interval or None, official?, subset index)
    subsets = [s for s in metrics.get("subsets", {}) if tasks.get(s)]
    for i, subset in enumerate(subsets):
        m = metrics["subsets"][subset]
        tor = (m.get("official") or {}).get("tor")
        if isinstance(tor, (int, float)):
            lines.append((f"{subset}: official tor", float(tor), None, True, i))
        uni = m.get("unified") or {}
        for name in _ordered(tasks[subset], uni):
            e = uni[name]
            if e.get("kind") == "share" and e.get("value") is not None:
                lines.append((f"{subset}: {name}", e["value"], e.get("interval"), False, i))
    if not lines:
        return None
    plt = matplotlib()
    fig, ax = plt.subplots(figsize=(9, 0.8 + 0.24 * len(lines)))
    for y, (label, value, iv, official, i) in enumerate(lines):
        color = COLORS[i % len(COLORS)]
        if official:
            ax.scatter([value], [y], marker="D", s=30, color="black", zorder=3)
        else:
            if iv and None not in iv:
                ax.plot(iv, [y, y], color=color, lw=2, alpha=0.7)
            ax.scatter([value], [y], s=18, color=color, zorder=3)
    ax.set_yticks(range(len(lines)), [x[0] for x in lines], fontsize=7)
    ax.set_ylim(len(lines) - 0.5, -0.5)
    ax.set_xlim(-0.02, 1.02)
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel("rate (dot: value; line: 95% Wilson interval; diamond: official TOR)", fontsize=8)
    ax.set_title("take-over (TOR) and unified rates per subset", fontsize=9, loc="left")
    fig.subplots_adjust(left=0.45, right=0.97, top=1 - 0.45 / (0.8 + 0.24 * len(lines)),
                        bottom=0.55 / (0.8 + 0.24 * len(lines)))
    return figure_png(fig, "take-over and unified rates with intervals")
