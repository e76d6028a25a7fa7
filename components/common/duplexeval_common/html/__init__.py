"""Static, self-contained HTML pages: the pieces every benchmark's report and the orchestrator's
compare and leaderboard pages are made of (page.py), a sample's timeline (timeline.py), plots by
round (plots.py) and the parts of a run report every benchmark shares (run.py).

Every page is one file with its styles, scripts, plots (PNG from matplotlib) and audio inlined as
data URIs, and a Content-Security-Policy that forbids any network request (page.py).
"""
