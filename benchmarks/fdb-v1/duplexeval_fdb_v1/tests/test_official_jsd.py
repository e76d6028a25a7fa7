"""The backchannel JSD without scipy.interpolate and scipy.spatial: the same floats as the
official script's interp1d + jensenshannon, compared with == (not a tolerance)."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.interpolate import interp1d
from scipy.spatial.distance import jensenshannon

from duplexeval_fdb_v1.score import official


def _scipy_jsd(prediction, max_end_time, gt):
    """eval_backchannel.py's lines, with SciPy, as upstream d7336bd writes them."""
    bins = [0] * (int(max_end_time / 0.2) + 1)
    for s, e in prediction:
        for i in range(int(s / 0.2), int(e / 0.2) + 1):
            if i < len(bins):
                bins[i] += 1
    hist = np.array(bins) + 1e-10
    hist = list(hist / np.sum(hist))
    x_gt, x_pred = np.linspace(0, 1, len(gt)), np.linspace(0, 1, len(hist))
    resized = interp1d(x_gt, gt, kind="linear", fill_value="extrapolate")(x_pred)
    return jensenshannon(np.array(hist), np.array(resized))


def test_equal_to_scipy_bit_for_bit():
    rng = np.random.default_rng(7)
    cases = 0
    for _ in range(600):
        n_gt = int(rng.integers(2, 400))
        gt = rng.random(n_gt) ** 3
        gt[rng.random(n_gt) < 0.2] = 0.0  # zeros in the ground truth, as real ones have
        gt = list(gt / gt.sum()) if rng.random() < 0.7 else list(gt)
        T = float(rng.uniform(0.1, 90))
        pred = []
        for _ in range(int(rng.integers(0, 12))):
            a = float(rng.uniform(0, T))
            pred.append((a, a + float(rng.uniform(0, 3))))
        assert official._jsd(pred, T, gt) == float(_scipy_jsd(pred, T, gt))
        cases += 1
    assert cases == 600


def test_equal_on_the_official_ground_truth():
    """Each speaker's distribution of the official icc_gt_distribution.json layout, as the
    bench tree's fixtures carry it (benchmarks/fdb-v1 golden tree)."""
    found = sorted(Path(official.__file__).parents[1].glob("tests/**/icc_gt_distribution.json"))
    if not found:
        pytest.skip("no icc_gt_distribution.json fixture in the package")
    gt_all = json.loads(found[0].read_text())
    rng = np.random.default_rng(3)
    for spk, gt in gt_all.items():
        T = float(rng.uniform(5, 60))
        pred = [(float(a), float(a) + 0.5) for a in rng.uniform(0, T, 4)]
        assert official._jsd(pred, T, gt) == float(_scipy_jsd(pred, T, gt)), spk


def test_relative_entropy_equals_scipys_ufunc():
    """_rel_entr against scipy.special.rel_entr on pairs of every kind: ratios near 1 (the
    log1p branch), far from it, the branch edges 0.5 and 2, zeros, negatives, nan and inf."""
    from scipy.special import rel_entr
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.random(100_000) ** 3, rng.random(20_000)])
    y = np.concatenate([rng.random(100_000) ** 3, x[100_000:] * rng.uniform(0.45, 2.2, 20_000)])
    edge = np.array([0.0, 0.0, -1.0, 1.0, np.nan, 1.0, np.inf, 1.0, 0.5, 2.0, 1e-300, 1.0])
    edge_y = np.array([0.0, 1.0, 1.0, -1.0, 1.0, np.nan, 1.0, np.inf, 1.0, 1.0, 1.0, 1e-300])
    x, y = np.concatenate([x, edge, 2 * edge_y]), np.concatenate([y, edge_y, edge_y])
    ours = np.array([official._rel_entr(a, b) for a, b in zip(x.tolist(), y.tolist())])
    assert np.array_equal(ours, rel_entr(x, y), equal_nan=True)


def test_scoring_imports_no_scipy():
    import subprocess
    import sys
    code = ("import sys; from duplexeval_fdb_v1.score import official; "
            "official._jsd([(0.1, 0.9), (2.0, 2.4)], 3.0, [0.1, 0.5, 0.3, 0.1]); "
            "print(sorted(m for m in sys.modules if m.startswith('scipy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_edge_cases_go_to_scipy():
    """A one-point or integer ground truth takes SciPy's own path: whatever interp1d makes of
    it (nan included), the official line makes too."""
    one, ref = official._jsd([(0.0, 1.0)], 2.0, [1.0]), float(_scipy_jsd([(0.0, 1.0)], 2.0, [1.0]))
    assert one == ref or (np.isnan(one) and np.isnan(ref))
    # integer ground truth: SciPy's own path, the same value as the official line
    assert official._jsd([(0.0, 1.0)], 2.0, [1, 2, 3]) == float(_scipy_jsd([(0.0, 1.0)], 2.0, [1, 2, 3]))
