"""The console summary of a run: the aggregator's report, missing samples, per-stage timing."""

from __future__ import annotations

from pathlib import Path

import click


def print_report(report_md: Path) -> None:
    """The aggregator's table, from its report.md: the first fenced block when it has one
    (Full-Duplex-Bench: official and unified columns, intervals), else the whole text."""
    if not report_md.is_file():
        return
    text = report_md.read_text(encoding="utf-8")
    if "```" in text:
        text = text.split("```", 2)[1].lstrip("\n")
    click.echo("")
    click.echo(text.rstrip())


def print_missing(missing: dict[str, str]) -> None:
    """Samples that are not in the metrics, and why (the first stage that did not complete them)."""
    if not missing:
        return
    click.echo("")
    click.echo(f"{len(missing)} sample(s) missing from the metrics:")
    for sample, why in sorted(missing.items()):
        click.echo(f"  {sample}: {why}")


def print_timing(results: list) -> None:
    click.echo("")
    click.echo(f"{'stage':12} {'component':15} {'key':12} {'status':8} {'seconds':>8}")
    for r in results:
        status = "cached" if r.cached else r.status
        click.echo(f"{r.name:12} {r.component:15} {r.key[:12]} {status:8} {r.seconds:8.1f}")
