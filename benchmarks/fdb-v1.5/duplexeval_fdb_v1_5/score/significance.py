"""Official paired t-tests: significance_test.py's rules (Full-Duplex-Bench @ d7336bd), run as
its README runs it (`--metrics utmosv2 wpm mean_pitch std_pitch mean_intensity std_intensity`,
every other option at its default).

1. **Samples.** The sample folders in sorted order whose content_tag.json `behaviour` (or
   `behavior`) contains "C_RESPOND" (a list holding it, or a string containing it) and whose
   general_split.json is a nonempty object. A sample without content_tag.json has no behaviour.
   Each sample gives a row with `pre_<f>`, `post_<f>`, `clean_<f>` for every feature f of any of
   its three sides (missing ones NaN). Rows where any column ending in "wpm" equals 0 are dropped.
2. **Values.** For wpm, speech_dur_s, mean_pitch, std_pitch and std_intensity a 0.0 is missing;
   for mean_intensity a value <= -190 is.
3. **Tests**, per metric and per pair (pre vs post, clean vs post; "before" is pre or clean,
   "after" is post): the pairs where both exist (at least 2); the MAD rule on the differences
   after - before (median +- 3.5 x 1.4826 MAD; all kept when MAD is 0); at least 2 left; then
   the means, the mean difference, its sample std (ddof 1), scipy.stats.ttest_rel(after,
   before), the 95% t interval of the mean difference and Cohen's d_z = mean / std. A metric
   whose columns are absent (UTMOSv2 not computed) or whose test fails is skipped.
4. **Holm** adjustment over the p-values of every test that ran (statsmodels' multipletests
   "holm" step-down, capped at 1), in the tests' order.

`conclusion(result)` is the line upstream writes to pair_t_<dir>.txt for a test.
"""

from __future__ import annotations

import math

import numpy as np

REQUIRED = "C_RESPOND"
README_METRICS = ("utmosv2", "wpm", "mean_pitch", "std_pitch", "mean_intensity", "std_intensity")
PAIRS = (("pre", "post"), ("clean", "post"))
ZERO_IS_MISSING = {"wpm", "speech_dur_s", "mean_pitch", "std_pitch", "std_intensity"}
ALPHA, MAD_K, MAD_SCALE = 0.05, 3.5, 1.4826


def has_behaviour(tag: dict | None, required: str = REQUIRED) -> bool:
    """Rule 1's filter on a content_tag.json object (None: no file)."""
    if not isinstance(tag, dict):
        return False
    b = tag.get("behaviour") or tag.get("behavior") or []
    try:
        return required in b
    except TypeError:
        return False


def rows(samples: dict[str, tuple[dict | None, dict | None]]) -> list[dict]:
    """Rule 1: {sample folder name: (general_split.json object, content_tag.json object or None)}
    -> the rows kept, in sorted folder-name order, wpm filter applied."""
    out = []
    for sid in sorted(samples):
        split, tag = samples[sid]
        if not has_behaviour(tag) or not split:
            continue
        row = {"file_id": sid}
        for k in ("split_t", "distractor_end", "pre_dur_s", "post_dur_s"):
            row[k] = split.get(k, math.nan)
        sides = {s: split.get(s, {}) or {} for s in ("pre", "post", "clean")}
        for k in set(sides["pre"]) | set(sides["post"]) | set(sides["clean"]):
            for s in ("pre", "post", "clean"):
                row[f"{s}_{k}"] = sides[s].get(k, math.nan)
        out.append(row)
    columns = {c for r in out for c in r}
    wpm = [c for c in columns if c.endswith("wpm")]
    return [r for r in out if all(r.get(c, math.nan) != 0 for c in wpm)]


def _column(rs: list[dict], col: str, metric: str) -> np.ndarray:
    v = np.array([float(r.get(col, math.nan)) if r.get(col) is not None else math.nan for r in rs], dtype=float)
    if metric in ZERO_IS_MISSING:
        v[v == 0.0] = math.nan
    if metric == "mean_intensity":
        v[v <= -190.0] = math.nan
    return v


def paired_compare(before, after, *, name: str = "Score", alpha: float = ALPHA, k: float = MAD_K) -> dict:
    """Rule 3 for one pair of columns. Raises ValueError where upstream skips the test."""
    from scipy import stats
    b = np.asarray(before, dtype=float)
    a = np.asarray(after, dtype=float)
    ok = ~np.isnan(b) & ~np.isnan(a)
    b0, a0 = b[ok], a[ok]
    if b0.size < 2:
        raise ValueError("Fewer than 2 valid pairs; cannot analyze.")
    diff = a0 - b0
    med = np.median(diff)
    mad = np.median(np.abs(diff - med))
    scale = MAD_SCALE * mad if mad > 0 else 0.0
    keep = np.ones(b0.size, dtype=bool) if scale == 0 else (diff >= med - k * scale) & (diff <= med + k * scale)
    b1, a1 = b0[keep], a0[keep]
    n = int(b1.size)
    if n < 2:
        raise ValueError("All data flagged as outliers; relax trimming.")
    d = a1 - b1
    mean_d = d.mean()
    sd = d.std(ddof=1)
    se = sd / np.sqrt(n)
    t, p = stats.ttest_rel(a1, b1)
    tcrit = stats.t.ppf(1 - alpha / 2, df=n - 1)
    return {"measure": name, "n_raw": int(b.size), "n_valid": int(b0.size), "n_used": n,
            "n_dropped": int(b0.size) - n, "mean_before": float(b1.mean()), "mean_after": float(a1.mean()),
            "mean_diff": float(mean_d), "sd_diff": float(sd), "ci95_low": float(mean_d - tcrit * se),
            "ci95_high": float(mean_d + tcrit * se), "t": float(t), "df": n - 1, "p_t": float(p),
            "cohen_dz": float(mean_d / sd) if sd > 0 else math.nan}


def holm(pvals: list[float]) -> list[float]:
    """Holm step-down adjusted p-values (statsmodels multipletests, method "holm")."""
    p = np.asarray(pvals, dtype=float)
    if p.size == 0:
        return []
    order = np.argsort(p)
    adj = np.maximum.accumulate(p[order] * np.arange(p.size, 0, -1))
    adj[adj > 1] = 1
    out = np.empty_like(adj)
    out[order] = adj
    return [float(x) for x in out]


def tests(rs: list[dict], metrics=README_METRICS) -> tuple[list[dict], list[tuple[str, str]]]:
    """Rules 2-4 over the rows: (results, skipped). A result per (metric, pair) that ran, in
    upstream's order, with "pair", "metric", "p_adj" and "conclusion"; `skipped` holds
    (name, why) for each test upstream skips with a warning."""
    columns = {c for r in rs for c in r}
    results, skipped = [], []
    for m in metrics:
        for p1, p2 in PAIRS:
            c1, c2 = f"{p1}_{m}", f"{p2}_{m}"
            name = f"{p1}_vs_{p2}:{m}"
            if c1 not in columns or c2 not in columns:
                skipped.append((name, "columns missing"))
                continue
            try:
                r = paired_compare(_column(rs, c1, m), _column(rs, c2, m), name=name)
            except ValueError as exc:
                skipped.append((name, str(exc)))
                continue
            r["pair"], r["metric"] = f"{p1}_vs_{p2}", m
            results.append(r)
    for r, q in zip(results, holm([r["p_t"] for r in results])):
        r["p_adj"] = q
        r["conclusion"] = conclusion(r)
    return results, skipped


def _p(p: float) -> str:
    if p is None or math.isnan(p):
        return "--"
    return "<.001" if p < 0.001 else f"{p:.3f}"


def conclusion(r: dict) -> str:
    """The sentence upstream writes for one test (pair_t_<dir>.txt, one line per test)."""
    d = r["mean_diff"]
    direction = "increased" if d > 0 else "decreased" if d < 0 else "did not change"
    reliable = "a statistically reliable" if r["p_t"] < 0.05 else "no statistically reliable"
    line = (f"{r['measure']}: {reliable} change was observed; After {direction} relative to Before "
            f"(M_before={r['mean_before']:.2f}, M_after={r['mean_after']:.2f}, \u0394={d:.2f}, "
            f"95% CI [{r['ci95_low']:.2f}, {r['ci95_high']:.2f}]; paired t({r['df']})={r['t']:.2f}, "
            f"p={_p(r['p_t'])}, d_z={r['cohen_dz']:.2f}).")
    if r["n_dropped"] > 0:
        line += f" Outlier trimming (mad) removed {r['n_dropped']}/{r['n_used'] + r['n_dropped']} pairs."
    return line
