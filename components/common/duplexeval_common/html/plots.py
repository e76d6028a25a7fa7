"""Plots every benchmark's report may use (matplotlib, inlined PNG): metrics by round.

Each function takes plain data and returns a page.Raw <img>, or None when there is nothing to
draw. The figures have fixed sizes and no random jitter, so the same data gives the same PNG bytes.
A benchmark's own plots live in its report module and use page.figure_png the same way.
"""

from __future__ import annotations

from .page import Raw, figure_png, matplotlib

COLORS = ("#3465a4", "#f57900", "#4e9a06", "#75507b", "#c17d11", "#cc0000")


def per_round_rows(metrics: dict) -> list[dict]:
    """Per-round rows of a multi-round benchmark: every subset's optional "per_round" list in
    metrics.json, each item {"round", "n", "success_rate", "success_interval", "latency_s",
    "latency_interval"} (the intervals and latency optional), with "subset" added; [] without."""
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
