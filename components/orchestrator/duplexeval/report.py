"""The console summary of a run: metrics per subset, and per-stage timing."""

from __future__ import annotations

import click

_OFFICIAL_ORDER = ("tor", "latency", "rating", "freq", "jsd")


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def summary_from_metrics(metrics: dict) -> dict:
    """The part of metrics.json that run.json keeps: official values and unified values per subset."""
    out = {}
    for subset, m in sorted(metrics.get("subsets", {}).items()):
        out[subset] = {"n": m.get("n"), "official": m.get("official", {}),
                       "unified": {k: v.get("value") if isinstance(v, dict) else v
                                   for k, v in m.get("unified", {}).items()}}
    return out


def print_metrics(summary: dict) -> None:
    click.echo("")
    click.echo(f"{'subset':32} {'n':>4}  official")
    for subset, m in summary.items():
        official = m["official"]
        cells = [f"{k}={_fmt(official[k])}" for k in _OFFICIAL_ORDER if k in official]
        click.echo(f"{subset:32} {m['n'] or 0:>4}  " + "  ".join(cells))


def print_timing(results: list) -> None:
    click.echo("")
    click.echo(f"{'stage':10} {'component':14} {'key':12} {'status':8} {'seconds':>8}")
    for r in results:
        status = "cached" if r.cached else r.status
        click.echo(f"{r.name:10} {r.component:14} {r.key[:12]} {status:8} {r.seconds:8.1f}")
