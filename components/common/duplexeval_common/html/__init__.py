"""Static HTML pages that fetch nothing remote: the pieces every benchmark's report and the
orchestrator's compare and leaderboard pages are made of (page.py), a sample's timeline
(timeline.py), plots by round (plots.py) and the parts of a run report every benchmark shares
(run.py).

Pages are rendered with Jinja2 and autoescape (templates.py; templates/ beside the code that uses
them). Styles, scripts and plots (PNG from matplotlib) are inlined as data URIs; a sample page's
audio is a relative link to the store's WAV (run.player), inlined only in a self-contained file;
the Content-Security-Policy forbids any network request (page.py).
"""
