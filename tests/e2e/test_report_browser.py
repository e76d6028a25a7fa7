"""The HTML report in a real browser: Debian's chromium, headless, driven by selenium, opening the
report of a built-in run (fixed-latency on fdb-mini, one sample per subset) from its run folder
over file://. The plots render, nothing is logged as an error, a sample page's timeline renders,
its audio (linked from the store, loaded when asked) loads with the WAV's length, a click on the
timeline seeks the audio and moves the playhead, and no request leaves the machine (every resource
is a data: URI or, for audio, a local file). Then the index of a 727-sample report (fdb-synth's
size, made from that run: tests/html_pages.scaled_report) and one of its sample pages, audio
playing, each open in under 5 s, and its filters and search box narrow the list. Screenshots are
saved under tests/.artifacts/.

Without /usr/bin/chromium or /usr/bin/chromedriver the test is skipped with the install line,
unless DUPLEXEVAL_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import os
import subprocess
import time
from pathlib import Path

import pytest

from ..conftest import command

# reads the HTML report `duplexeval eval` builds (the other tests' runs pass --no-html: the root conftest.py)
pytestmark = pytest.mark.html_report

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[1] / ".artifacts"
INSTALL = "apt-get install chromium chromium-driver"


def _need_browser():
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    import importlib.util
    if importlib.util.find_spec("selenium") is None:
        missing.append("selenium (pip install -c constraints.txt selenium)")
    if missing:
        why = f"{', '.join(missing)} missing: {INSTALL}"
        if os.environ.get("DUPLEXEVAL_REQUIRE_BROWSER") == "1":
            pytest.fail(f"DUPLEXEVAL_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    _need_browser()
    home = tmp_path_factory.mktemp("browser-home")
    r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", "--model", "fixed-latency",
                        "--judge", "none", "--limit", "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return (home / "runs" / "latest").resolve()


@pytest.fixture(scope="module")
def browser(run_folder):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1000", "--autoplay-policy=no-user-gesture-required", "--mute-audio",
                "--disable-background-networking", "--no-first-run"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def severe(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def resources(driver) -> list[str]:
    return driver.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; })")


def local(url: str, run_folder: Path) -> bool:
    """A file:// URL inside the home folder of the run (the run folder or the store)."""
    from urllib.parse import unquote, urlparse
    u = urlparse(url)
    return u.scheme == "file" and Path(unquote(u.path)).resolve().is_relative_to(run_folder.parent.parent.resolve())


def wait_for(driver, script: str, timeout: float = 15.0):
    end = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value or time.monotonic() > end:
            return value
        time.sleep(0.1)


def test_report_and_a_sample_page_in_chromium(browser, run_folder):
    import soundfile as sf
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    ARTIFACTS.mkdir(exist_ok=True)
    d = browser
    d.get((run_folder / "report.html").as_uri())
    assert "duplexeval report" in d.title
    assert wait_for(d, "return document.readyState === 'complete'")
    plots = d.execute_script("return Array.from(document.images).map(function (i) {"
                             " return [i.alt, i.complete, i.naturalWidth]; })")
    assert len(plots) >= 2 and all(c and w > 0 for _, c, w in plots), plots
    d.save_screenshot(str(ARTIFACTS / "report.png"))
    d.execute_script("document.getElementById('metrics').scrollIntoView()")
    d.save_screenshot(str(ARTIFACTS / "report-metrics.png"))
    d.execute_script("document.getElementById('plots').scrollIntoView()")
    d.save_screenshot(str(ARTIFACTS / "report-plots.png"))
    assert severe(d) == []
    assert all(r.startswith("data:") for r in resources(d)), resources(d)

    # a sample page, from the report's table of samples
    links = d.find_elements(By.CSS_SELECTOR, "table.samples a")
    target = next(a for a in links if "synthetic_user_interruption" in a.get_attribute("href"))
    target.click()
    assert wait_for(d, "return document.readyState === 'complete' && location.href.indexOf('/samples/') > 0")
    page = Path(d.execute_script("return decodeURIComponent(location.pathname)"))
    assert page == run_folder / "samples" / "synthetic_user_interruption" / "0.html"
    assert wait_for(d, "var i = document.querySelector('#timeline img');"
                       " return i && i.complete && i.naturalWidth > 0")
    size = d.execute_script("var i = document.querySelector('#timeline img');"
                            " return [i.naturalWidth, i.naturalHeight, i.clientWidth]")
    assert size[0] == 1200 and size[1] == 460 and size[2] > 300, size

    # nothing is loaded before it is asked for (preload none); asked, both channels load, each as
    # long as its WAV in the store
    wavs = {"audio-user": "input.wav", "audio-model": "output.wav"}
    assert d.execute_script("return Array.from(document.querySelectorAll('audio')).map("
                            "function (a) { return a.preload + a.readyState; })") == ["none0", "none0"]
    d.execute_script("document.querySelectorAll('audio').forEach(function (a) { a.preload = 'auto'; a.load(); })")
    for el, name in wavs.items():
        assert wait_for(d, f"return document.getElementById('{el}').readyState >= 1"), el
    store_wavs = {
        "input.wav": next(run_folder.parent.parent.glob("store/*/samples/synthetic_user_interruption/0/input.wav")),
        "output.wav": next(run_folder.parent.parent.glob("store/*/samples/synthetic_user_interruption/0/output.wav")),
    }
    for el, name in wavs.items():
        info = sf.info(str(store_wavs[name]))
        duration = d.execute_script(f"return document.getElementById('{el}').duration")
        assert abs(duration - info.frames / info.samplerate) < 2e-3, (el, duration, info.duration)

    # a click at 60% of the axes seeks both players there and moves the playhead
    tl = d.find_element(By.ID, "timeline")
    geo = {k: float(tl.get_attribute(f"data-{k}")) for k in ("t0", "t1", "x0", "x1", "y0", "y1")}
    img = tl.find_element(By.TAG_NAME, "img")
    rect = d.execute_script("var r = arguments[0].getBoundingClientRect();"
                            " return [r.left, r.top, r.width, r.height]", img)
    head0 = d.execute_script("return document.getElementById('playhead').getBoundingClientRect().left")
    frac = 0.6
    x = (geo["x0"] + frac * (geo["x1"] - geo["x0"])) * rect[2]
    y = (geo["y0"] + geo["y1"]) / 2 * rect[3]
    ActionChains(d).move_to_element_with_offset(img, int(x - rect[2] / 2), int(y - rect[3] / 2)).click().perform()
    want = geo["t0"] + frac * (geo["t1"] - geo["t0"])
    for el in wavs:
        t = d.execute_script(f"return document.getElementById('{el}').currentTime")
        assert abs(t - want) < 0.05, (el, t, want)
    head = d.execute_script("var r = document.getElementById('playhead').getBoundingClientRect();"
                            " return [r.left, r.top, r.height]")
    assert abs(head[0] + 1 - (rect[0] + x)) < 3, (head, rect, x)
    assert head[0] > head0 + 100
    assert abs(head[1] - (rect[1] + geo["y0"] * rect[3])) < 3 and head[2] > 0.5 * rect[3]
    assert abs(float(tl.get_attribute("data-time")) - want) < 0.05

    # playing moves the playhead with the audio
    d.execute_script("document.getElementById('audio-user').currentTime = 1.0;"
                     " document.getElementById('audio-user').play();")
    moved = wait_for(d, "return document.getElementById('audio-user').currentTime > 1.3", timeout=10)
    assert moved, "the audio did not play"
    t = float(d.execute_script("var a = document.getElementById('audio-user'); a.pause(); return a.currentTime"))
    time.sleep(0.3)
    assert abs(float(tl.get_attribute("data-time")) - t) < 0.3
    assert abs(float(tl.get_attribute("data-time")) - want) > 1  # it left the clicked place
    tl.screenshot(str(ARTIFACTS / "timeline.png"))
    d.save_screenshot(str(ARTIFACTS / "sample.png"))
    assert severe(d) == []
    assert all(r.startswith("data:") or local(r, run_folder) for r in resources(d)), resources(d)
    srcs = d.execute_script("return Array.from(document.querySelectorAll('audio')).map(function (a) {"
                            " return a.currentSrc; })")
    assert len(srcs) == 2 and all(local(x, run_folder) for x in srcs), srcs

    # and back to the report
    d.find_element(By.LINK_TEXT, "back to the report").click()
    assert wait_for(d, "return location.pathname.endsWith('/report.html')")


def test_727_sample_index_and_a_sample_page_open_fast(browser, run_folder, tmp_path):
    from selenium.webdriver.common.by import By

    from ..html_pages import scaled_report
    d = browser
    home = run_folder.parent.parent
    key = "synthetic_turn_taking/100"
    out = home / "scaled"   # inside the home folder, as the store's reports are
    scaled_report(home, out, 727, (key,))
    index = out / "report.html"
    assert index.stat().st_size < 5_000_000
    t0 = time.monotonic()
    d.get(index.as_uri())
    assert wait_for(d, "return document.readyState === 'complete' && document.getElementById('sample-count')"
                       ".textContent === '727 of 727'")
    opened = time.monotonic() - t0
    assert opened < 5, f"the 727-sample index took {opened:.2f} s"
    assert severe(d) == [] and all(r.startswith("data:") for r in resources(d))
    visible = "return Array.from(document.querySelectorAll('#sample-list tbody tr')).filter(function (r) {" \
              " return !r.hidden; }).length"
    outcomes = d.execute_script("return Array.from(document.querySelectorAll('#sample-list tbody tr')).map("
                                "function (r) { return r.getAttribute('data-outcome'); })")
    assert d.execute_script(visible) == 727 == len(outcomes)
    box = d.find_element(By.CSS_SELECTOR, "#sample-filters input[value='response']")
    box.click()
    assert d.execute_script(visible) == 727 - outcomes.count("response") < 727
    box.click()
    d.find_element(By.ID, "sample-search").send_keys("synthetic_turn_taking 10")  # no row has both words
    assert d.execute_script(visible) == 0
    d.execute_script("var s = document.getElementById('sample-search'); s.value = '100'; "
                     "s.dispatchEvent(new Event('input'));")
    shown = d.execute_script("return Array.from(document.querySelectorAll('#sample-list tbody tr')).filter("
                             "function (r) { return !r.hidden; }).map(function (r) { return r.cells[1].textContent; })")
    assert shown and all("100" in x for x in shown) and "100" in shown
    d.save_screenshot(str(ARTIFACTS / "report-727.png"))

    page = out / "samples" / f"{key}.html"
    t0 = time.monotonic()
    d.get(page.as_uri())
    assert wait_for(d, "return document.readyState === 'complete'")
    d.execute_script("document.getElementById('audio-user').play()")
    assert wait_for(d, "return document.getElementById('audio-user').currentTime > 0.3", timeout=10)
    playing = time.monotonic() - t0
    assert playing < 5, f"the sample page took {playing:.2f} s to play 0.3 s of audio"
    assert severe(d) == [] and all(r.startswith("data:") or local(r, run_folder) for r in resources(d))
    assert local(d.execute_script("return document.getElementById('audio-user').currentSrc"), run_folder)
    print(f"\n727-sample index: {index.stat().st_size / 1e6:.2f} MB, open in {opened:.2f} s; "
          f"sample page playing in {playing:.2f} s")
