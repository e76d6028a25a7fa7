"""A sample's timeline: one matplotlib image (both waveforms, the model's words, VAD segments,
the annotation markers) with a playhead that follows the playing audio and click-to-seek.

The axes sit at a fixed place in the figure (AXES, figure fractions), so the page can map a
time to a pixel without asking matplotlib: the <div class="timeline"> carries data-t0/data-t1
(the time range of the x axis) and data-x0/data-x1/data-y0/data-y1 (the axes' edges as fractions
of the image's width and height, from its top-left corner); TIMELINE_JS scales them by the
image's displayed size, so the playhead stays right whatever the zoom. The markers are also
listed in data-markers (JSON: name and time) for tests and scripts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from . import templates
from .page import Raw, figure_png, matplotlib

FIGSIZE = (12.0, 4.6)        # inches, at page.py's 100 dpi: a 1200 x 460 PNG
AXES = (0.11, 0.13, 0.87, 0.8)  # left, bottom, width, height (figure fractions)
BINS = 1500                   # envelope columns per waveform
LANES = {"user": 3.55, "model": 2.45, "vad": 1.72, "words": 0.0}  # lane centres (words: base)
HALF = 0.42                   # half height of a waveform lane
MARKER_COLORS = {"E": "#cc0000", "S": "#5c3566", "R": "#ce5c00", "round start": "#204a87"}
# labelled bands in a waveform lane (multi-round samples): (face colour, hatch)
SPAN_STYLES = {"ground truth": ("#888a85", "///"), "muted": ("#555753", "xx"), "user turn": ("#729fcf", None),
               "interruption": ("#ad7fa8", None), "background": ("#e9b96e", None),
               "GT model slot": ("#fcaf3e", None), "overlap": ("#ad7fa8", None)}


@dataclass
class Timeline:
    """What a timeline shows. Times in seconds on the input timeline. The x axis runs from
    `start` to `duration` (0 for a single-round sample); the signals begin at `start`."""
    duration: float
    user: tuple[np.ndarray, int] | None = None     # (mono signal, sample rate)
    model: tuple[np.ndarray, int] | None = None
    words: list[tuple[str, float, float]] = field(default_factory=list)
    vad: list[tuple[float, float]] = field(default_factory=list)
    pauses: list[tuple[float, float]] = field(default_factory=list)
    markers: list[tuple[str, float]] = field(default_factory=list)  # ("E", t), ("S", t), ("R", t)
    model_note: str = ""  # shown in the model lane when there is no model audio
    vad_label: str = "VAD"
    start: float = 0.0
    # labelled bands (label, start, end, lane "user" | "model"); the label's first words pick the
    # style of SPAN_STYLES ("ground truth (history)", "user turn 3", ...)
    spans: list[tuple[str, float, float, str]] = field(default_factory=list)


def envelope(x: np.ndarray, sr: int, duration: float, bins: int = BINS):
    """(times, low, high): the signal's min and max in `bins` equal columns of [0, duration]
    (a column without samples, past the signal's end, stays 0)."""
    x = np.asarray(x, dtype=np.float32)
    edges = np.minimum(np.floor(np.arange(bins + 1) * (duration * sr / bins)).astype(np.int64), len(x))
    x = x[: edges[-1]]
    lo = np.zeros(bins, np.float32)
    hi = np.zeros(bins, np.float32)
    cols = np.flatnonzero(edges[1:] > edges[:-1])
    if len(cols):
        # reduceat covers [start_i, start_i+1): the empty columns between add nothing
        lo[cols] = np.minimum.reduceat(x, edges[cols])
        hi[cols] = np.maximum.reduceat(x, edges[cols])
    return (np.arange(bins) + 0.5) * (duration / bins), lo, hi


def geometry(t0: float, t1: float) -> dict:
    left, bottom, width, height = AXES
    return {"t0": t0, "t1": t1, "x0": left, "x1": left + width, "y0": 1 - (bottom + height), "y1": 1 - bottom}


def figure(tl: Timeline) -> Raw:
    """The timeline image (an inlined PNG)."""
    plt = matplotlib()
    t0 = tl.start
    T = max(tl.duration, t0 + 1e-3)
    fig = plt.figure(figsize=FIGSIZE)
    ax = fig.add_axes(AXES)
    # the limits are set below: no autoscaling as each artist is added (a third of the drawing
    # time of a page with 60 words went to recomputing the data limits)
    ax.set_autoscale_on(False)
    signals = [sig[0] for sig in (tl.user, tl.model) if sig is not None]
    peak = max([float(np.max(np.abs(x))) for x in signals if len(x)] + [1e-3])
    scale = HALF / peak
    for name, sig, color in (("user", tl.user, "#3465a4"), ("model", tl.model, "#f57900")):
        y = LANES[name]
        if sig is None:
            continue
        times, lo, hi = envelope(sig[0], sig[1], T - t0)
        if t0:
            times = times + t0
        ax.fill_between(times, y + lo * scale, y + hi * scale, color=color, lw=0, step="mid")
        ax.plot([t0, T], [y, y], color=color, lw=0.3, alpha=0.5)
    _spans(ax, tl.spans, t0, T)
    if tl.model is None:
        ax.text((t0 + T) / 2, LANES["model"], tl.model_note or "no model output", ha="center", va="center",
                fontsize=9, color="#a01818")
    for a, b in tl.pauses:
        ax.fill_between([a, b], LANES["user"] - 0.5, LANES["user"] + 0.5, color="#babdb6", alpha=0.45, lw=0)
        ax.text((a + b) / 2, LANES["user"] + 0.47, "pause", ha="center", va="top", fontsize=7, color="#555753")
    if tl.vad:
        ax.broken_barh([(a, max(b - a, 0.005)) for a, b in tl.vad], (LANES["vad"] - 0.12, 0.24),
                       color="#4e9a06", alpha=0.8)
    rows = (1.1, 0.65, 0.2)
    for r, y in enumerate(rows):  # a word's bar in its row (one collection per row), its text above
        bars = [(a, max(b - a, 0.01)) for _, a, b in tl.words[r::len(rows)]]
        if bars:
            ax.broken_barh(bars, (y - 0.1, 0.2), color="#75507b", alpha=0.35)
    for i, (text, a, b) in enumerate(tl.words):
        ax.text(a, rows[i % len(rows)] + 0.12, text, fontsize=7, va="bottom", ha="left", clip_on=True)
    for name, t in tl.markers:
        color = MARKER_COLORS.get(name, "black")
        ax.axvline(t, color=color, ls="--", lw=1.2)
        ax.text(t, 4.12, f" {name} {t:.2f}s", color=color, fontsize=8, va="bottom", ha="left")
    ax.set_xlim(t0, T)
    ax.set_ylim(-0.1, 4.4)
    ax.set_yticks([LANES["user"], LANES["model"], LANES["vad"], 0.65],
                  ["user (input)", "model (output)", tl.vad_label, "words (ASR)"], fontsize=8)
    ax.set_xlabel("time (s)", fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", alpha=0.25)
    return figure_png(fig, "timeline: user and model waveforms, words, VAD segments and markers")


def _spans(ax, spans, t0: float, T: float) -> None:
    """Labelled bands over a lane, clipped to the axis; the label at the band's visible start."""
    for label, a, b, lane in spans:
        lo, hi = max(a, t0), min(b, T)
        if hi <= lo:
            continue
        color, hatch = next((v for k, v in SPAN_STYLES.items() if label.startswith(k)), ("#babdb6", None))
        y = LANES[lane]
        ax.fill_between([lo, hi], y - 0.5, y + 0.5, facecolor=color, alpha=0.22, lw=0.6,
                        edgecolor=color if hatch else "none", hatch=hatch)
        ax.text(lo, y - 0.47, f" {label}", ha="left", va="bottom", fontsize=7, color="#2e3436", clip_on=True)


def viewer(tl: Timeline) -> Raw:
    """The timeline image in its container with the playhead (see TIMELINE_JS; WINDOW_JS when the
    axis starts after 0)."""
    T = max(tl.duration, tl.start + 1e-3)
    g = geometry(tl.start, T)
    attrs = [(k, f"{v:.6f}") for k, v in g.items()]
    markers = json.dumps([{"name": n, "t": round(t, 6)} for n, t in tl.markers]
                         + [{"name": "pause", "t": round(a, 6), "end": round(b, 6)} for a, b in tl.pauses]
                         + [{"name": n, "t": round(a, 6), "end": round(b, 6), "lane": lane}
                            for n, a, b, lane in tl.spans])
    return Raw(templates.macro("timeline.html", "viewer")(attrs, markers, figure(tl)))


TIMELINE_CSS = """
.timeline{position:relative;display:inline-block;max-width:100%;cursor:crosshair}
.timeline img.plot{margin:0}
.playhead{position:absolute;width:2px;background:#cc0000;pointer-events:none;left:0;top:0;height:0}
"""

TIMELINE_JS = """
(function () {
  var tl = document.getElementById('timeline');
  if (!tl) { return; }
  var img = tl.querySelector('img'), head = document.getElementById('playhead');
  var d = tl.dataset, t0 = +d.t0, t1 = +d.t1, x0 = +d.x0, x1 = +d.x1, y0 = +d.y0, y1 = +d.y1;
  var players = Array.prototype.slice.call(document.querySelectorAll('audio'));
  var current = players[0] || null;
  function clamp(v, lo, hi) { return Math.min(Math.max(v, lo), hi); }
  function place(t) {
    var w = img.clientWidth, h = img.clientHeight, f = (clamp(t, t0, t1) - t0) / (t1 - t0);
    head.style.left = (img.offsetLeft + (x0 + f * (x1 - x0)) * w - 1) + 'px';
    head.style.top = (img.offsetTop + y0 * h) + 'px';
    head.style.height = ((y1 - y0) * h) + 'px';
    tl.dataset.time = t.toFixed(3);
  }
  function follow() {
    if (current && !current.paused) { place(current.currentTime); window.requestAnimationFrame(follow); }
  }
  players.forEach(function (a) {
    a.addEventListener('play', function () {
      players.forEach(function (b) { if (b !== a) { b.pause(); } });
      current = a; window.requestAnimationFrame(follow);
    });
    a.addEventListener('timeupdate', function () { if (a === current) { place(a.currentTime); } });
    a.addEventListener('seeked', function () { if (a === current) { place(a.currentTime); } });
  });
  img.addEventListener('click', function (ev) {
    var r = img.getBoundingClientRect();
    var f = clamp(((ev.clientX - r.left) / r.width - x0) / (x1 - x0), 0, 1), t = t0 + f * (t1 - t0);
    players.forEach(function (a) {
      var end = isFinite(a.duration) ? a.duration : t;
      a.currentTime = Math.min(t, end);
    });
    place(t);
  });
  window.addEventListener('resize', function () { place(current ? current.currentTime : 0); });
  if (img.complete) { place(0); } else { img.addEventListener('load', function () { place(0); }); }
})();
"""


def _window_js() -> str:
    """TIMELINE_JS for audio that starts at the axis' start t0 (a round's window, docs/reports.md):
    an element's currentTime c is the time t0 + c on the axis, and a click at t seeks to t - t0."""
    js = TIMELINE_JS
    for old, new, n in (("y1 = +d.y1;", "y1 = +d.y1, off = t0;", 1),
                        ("place(current.currentTime)", "place(off + current.currentTime)", 1),
                        ("place(current ? current.currentTime : 0)",
                         "place(off + (current ? current.currentTime : 0))", 1),
                        ("place(a.currentTime)", "place(off + a.currentTime)", 2),
                        ("a.currentTime = Math.min(t, end);",
                         "a.currentTime = Math.min(Math.max(t - off, 0), end);", 1),
                        ("place(0)", "place(off)", 2)):
        if js.count(old) != n:
            raise RuntimeError(f"TIMELINE_JS changed: {old!r} found {js.count(old)} times, not {n}")
        js = js.replace(old, new)
    return js


WINDOW_JS = _window_js()
