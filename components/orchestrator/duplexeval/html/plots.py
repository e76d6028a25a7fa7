"""The run report's plots (matplotlib, inlined PNG): latencies, rates with intervals, per round.

Each function takes plain data (metrics.json, unified-samples.jsonl rows, per-round rows) and
returns a page.Raw <img>, or None when there is nothing to draw. The figures have fixed sizes
and no random jitter, so the same data gives the same PNG bytes.
"""

from __future__ import annotations

from .page import Raw, figure_png, matplotlib

LATENCY_TASKS = ("smooth_turn_taking", "user_interruption")
TASK_TITLES = {"pause_handling": "pause handling", "smooth_turn_taking": "smooth turn-taking",
               "user_interruption": "user interruption", "backchannel": "backchannel"}
COLORS = ("#3465a4", "#f57900", "#4e9a06", "#75507b", "#c17d11", "#cc0000")


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


def rates_plot(metrics: dict) -> Raw | None:
    """Per subset: the official take-over rate (TOR, a diamond; no interval) and every unified
    share with the 95% Wilson interval the aggregator computed (metrics.json)."""
    from duplexeval_aggregator.report import _ordered
    from duplexeval_common.samples import known_task
    lines = []  # (label, value, interval or None, official?, subset index)
    subsets = [s for s in metrics.get("subsets", {}) if known_task(s)]
    for i, subset in enumerate(subsets):
        m = metrics["subsets"][subset]
        tor = (m.get("official") or {}).get("tor")
        if isinstance(tor, (int, float)):
            lines.append((f"{subset}: official tor", float(tor), None, True, i))
        uni = m.get("unified") or {}
        for name in _ordered(known_task(subset), uni):
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


def per_round_rows(metrics: dict) -> list[dict]:
    """Per-round rows of a multi-round benchmark (MTR-DuplexBench): every subset's optional
    "per_round" list in metrics.json, each item {"round", "n", "success_rate",
    "success_interval", "latency_s", "latency_interval"} (the intervals and latency optional),
    with "subset" added. [] for a single-round benchmark (Full-Duplex-Bench v1.0)."""
    out = []
    for subset, s in sorted(metrics.get("subsets", {}).items()):
        for r in s.get("per_round") or []:
            if isinstance(r, dict) and isinstance(r.get("round"), int):
                out.append({**r, "subset": subset})
    return out


ROUND_ALT = "success rate and latency by round"
STYLES = ("o-", "s--", "^:")  # line styles after the colours run out (7th subset on)


def round_plot(rows: list[dict], success_title: str = "success rate by round (95% interval)",
               latency_title: str | None = "latency (s) by round", alt: str = ROUND_ALT) -> Raw | None:
    """Success rate and latency against round, one line per subset (rows: per_round_rows(); each
    row's top-level success_rate, success_interval, latency_s and latency_interval). Without
    latency_title, the success panel alone."""
    if not rows:
        return None
    plt = matplotlib()
    if latency_title is None:
        fig, ax1 = plt.subplots(1, 1, figsize=(10, 3.6))
        ax2 = None
    else:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    subsets = sorted({r["subset"] for r in rows})
    for i, subset in enumerate(subsets):
        rs = sorted((r for r in rows if r["subset"] == subset), key=lambda r: r["round"])
        color = COLORS[i % len(COLORS)]
        style = STYLES[(i // len(COLORS)) % len(STYLES)]
        ok = [(r["round"], r["success_rate"], r.get("success_interval")) for r in rs
              if r.get("success_rate") is not None]
        if ok:
            ax1.plot([x for x, _, _ in ok], [v for _, v, _ in ok], style, color=color, label=subset)
            for x, _, iv in ok:
                if iv and None not in iv:
                    ax1.plot([x, x], iv, color=color, alpha=0.5, lw=2)
        lat = [(r["round"], r["latency_s"], r.get("latency_interval")) for r in rs
               if r.get("latency_s") is not None]
        if lat and ax2 is not None:
            ax2.plot([x for x, _, _ in lat], [v for _, v, _ in lat], style, color=color, label=subset)
            for x, _, iv in lat:
                if iv and None not in iv:
                    ax2.plot([x, x], iv, color=color, alpha=0.5, lw=2)
    rounds = sorted({r["round"] for r in rows})
    axes = [ax for ax in (ax1, ax2) if ax is not None]
    for ax in axes:
        ax.set_xticks(rounds)
    ax1.set_ylim(-0.02, 1.02)
    ax1.set_title(success_title, fontsize=9, loc="left")
    if ax2 is not None:
        ax2.set_title(latency_title, fontsize=9, loc="left")
    for ax in axes:
        ax.set_xlabel("round", fontsize=8)
        ax.grid(alpha=0.3)
    if ax1.get_legend_handles_labels()[0]:
        ax1.legend(fontsize=7)
    fig.tight_layout()
    return figure_png(fig, alt)
