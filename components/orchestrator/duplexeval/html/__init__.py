"""Static, self-contained HTML pages: the run report, a sample's timeline, compare, leaderboard.

Every page is one file with its styles, scripts, plots (PNG from matplotlib) and audio inlined as
data URIs, and a Content-Security-Policy that forbids any network request (page.py).
"""
