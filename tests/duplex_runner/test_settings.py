"""Runner settings, declared once (duplexeval_runner/settings.py), and what is derived from them.

Every runner of every runner package in the source tree: its declaration is sound (each number has a
range, each default passes its own check), its README's settings table is the one the declaration
makes, its profile files pass its checks, its install hints name the versions its requirements.txt
pins; and a bad value is one `error:` line, exit 2, before anything runs (`duplex-runner check`).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from duplexeval_common.errors import DuplexEvalError
from duplexeval_runner import deps, net, profiles, settings
from duplexeval_runner.cli import main
from duplexeval_runner.events import MAX_TEXT_CHARS, EventLog, cap_text
from duplexeval_runner.profiles import Profile
from duplexeval_runner.settings import Setting, Spec
from duplexeval_runner.stage import CORE

from ..conftest import command

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p for p in (ROOT / "components" / "runners").iterdir() if (p / "pyproject.toml").is_file())


def _module(pkg: Path) -> str:
    (name,) = [p.name for p in pkg.iterdir() if p.is_dir() and p.name.startswith("duplexeval_runner_") and "." not in p.name]
    if importlib.util.find_spec(name) is None:
        # not installed here (moshi has an environment of its own): its modules import nothing heavy
        sys.path.insert(0, str(pkg))
    return name


def _runners() -> list[tuple[str, Path, type]]:
    """(runner name, package folder, class) of every runner every package registers."""
    out = []
    for pkg in PACKAGES:
        reg = importlib.import_module(f"{_module(pkg)}.registration")
        for entry in reg.RUNNERS:
            mod, _, attr = entry["target"].partition(":")
            out.append((entry["name"], pkg, getattr(importlib.import_module(mod), attr)))
    return out


RUNNERS = _runners()
IDS = [name for name, _, _ in RUNNERS]


def test_every_runner_package_is_covered():
    assert set(IDS) >= {"silence", "fixed-latency", "always-talk", "cascade", "replay", "moshi", "moshi-ws",
                        "freeze-omni", "openai-realtime", "gemini-live"}


@pytest.mark.parametrize("name, pkg, cls", RUNNERS, ids=IDS)
def test_every_declaration_is_sound(name, pkg, cls):
    """Each number has a range and is finite; each default passes its own check; a secret is named so the
    secrets policy redacts it; each setting says what it is."""
    assert cls.SETTINGS.declaration_problems() == []
    assert CORE.declaration_problems() == []
    assert not set(cls.SETTINGS.names) & set(CORE.names)   # the core's names are the core's


@pytest.mark.parametrize("name, pkg, cls", RUNNERS, ids=IDS)
def test_every_readme_table_is_the_one_its_declaration_makes(name, pkg, cls):
    text = (pkg / "README.md").read_text(encoding="utf-8")
    assert settings.readme_path(cls) == pkg / "README.md"
    assert settings.readme_current(text, name) == settings.readme_block(cls), (
        f"{pkg / 'README.md'}: the settings table of {name} is not the one its SETTINGS make; run "
        f"`duplex-runner settings-table {name} --write`")


@pytest.mark.parametrize("name, pkg, cls", [r for r in RUNNERS if r[2].SETTINGS.package], ids=lambda r: r)
def test_every_profile_file_passes_its_runners_checks(name, pkg, cls):
    spec = cls.SETTINGS
    names = profiles.names(spec.package)
    assert spec.profile in names
    for prof in names:
        spec.check_profile(name, profiles.load(spec.package, name, prof))


# --- messages ----------------------------------------------------------------------------------

SPEC = Spec(
    Setting("n", int, 1, "a count", ge=1),
    Setting("p", float, 0.5, "a probability", ge=0, le=1),
    Setting("t", float, None, "a timeout", gt=0),
    Setting("mode", str, "a", "a choice", choices=("a", "b")),
    Setting("flag", bool, False, "a flag"),
    Setting("name", str, "x", "a name", nonempty=True),
    Setting("tokens", int, None, "a limit", ge=1, le=10, also=("inf",)),
    Setting("vad", dict, {"type": "v", "level": 0.5}, "nested", fields={
        "v": (Setting("level", float, 0.5, "a level", ge=0, le=1),)}),
    Setting("api_key", str, None, "a credential", secret=True, nonempty=True),
    Setting("folder", str, None, "a folder", path="dir"),
)


@pytest.mark.parametrize("args, message", [
    ({"m": 1}, "runner 'r': unknown runner_args m (known: api_key, flag, folder, mode, n, name, p, t, tokens, vad)"),
    ({"n": 0}, "runner 'r': n must be an integer >= 1 (got 0)"),
    ({"n": -3}, "runner 'r': n must be an integer >= 1 (got -3)"),
    ({"n": 2.0}, "runner 'r': n must be an integer >= 1 (got 2.0)"),
    ({"n": True}, "runner 'r': n must be an integer >= 1 (got True)"),
    ({"p": 1.5}, "runner 'r': p must be a number from 0 to 1 (got 1.5)"),
    ({"p": -0.1}, "runner 'r': p must be a number from 0 to 1 (got -0.1)"),
    ({"p": math.nan}, "runner 'r': p must be a number from 0 to 1 (got nan)"),
    ({"t": math.inf}, "runner 'r': t must be a number > 0 or null (got inf)"),
    ({"t": 0}, "runner 'r': t must be a number > 0 or null (got 0)"),
    ({"mode": "c"}, "runner 'r': mode must be one of a, b (got 'c')"),
    ({"flag": "yes"}, "runner 'r': flag must be true or false (got 'yes')"),
    ({"name": "  "}, "runner 'r': name must be a non-empty string (got '  ')"),
    ({"tokens": 11}, "runner 'r': tokens must be an integer from 1 to 10, \"inf\" or null (got 11)"),
    ({"vad": {"type": "w"}}, "runner 'r': vad must be an object with type v (got {'type': 'w'})"),
    ({"vad": {"type": "v", "x": 1}}, "runner 'r': vad v does not take x (known: level, type)"),
    ({"vad": {"type": "v", "level": 2}}, "runner 'r': vad.level must be a number from 0 to 1 (got 2)"),
    ({"api_key": " "}, "runner 'r': api_key must be a non-empty string or null (got <redacted>)"),
    ({"folder": "/no/such/folder"}, "runner 'r': folder '/no/such/folder' is not a folder"),
])
def test_a_bad_value_is_one_line_naming_the_runner_the_setting_and_what_it_must_be(args, message):
    with pytest.raises(DuplexEvalError) as exc:
        SPEC.resolve("r", args)
    assert str(exc.value) == message


def test_good_values_pass_unchanged():
    args, prof = SPEC.resolve("r", {"n": 3, "p": 1, "tokens": "inf", "t": 0.5, "vad": {"type": "v"}})
    assert prof is None and args["n"] == 3 and args["p"] == 1 and type(args["p"]) is int   # never converted
    assert args["tokens"] == "inf" and args["mode"] == "a" and args["api_key"] is None


def test_a_long_value_is_shortened_and_scrubbed_in_a_message():
    with pytest.raises(DuplexEvalError) as exc:
        SPEC.resolve("r", {"mode": "https://user:hunter2pass@host/" + "x" * 500})
    msg = str(exc.value)
    assert len(msg) < 200 and "hunter2pass" not in msg and msg.endswith("...)")


def test_declarations_that_break_the_rules_are_caught():
    assert "range" in Setting("k", int, 1, "a count").declaration_problem()
    assert "secrets policy" in Setting("password_hint", str, None, "x", secret=True).declaration_problem()
    assert Setting("hf_token", str, None, "x", secret=True).declaration_problem() is None
    assert "must be an integer >= 1" in Setting("k", int, 0, "a count", ge=1).declaration_problem()
    assert "description" in Setting("k", bool, True).declaration_problem()
    with pytest.raises(ValueError, match="twice"):
        Spec(Setting("a", bool, True, "x"), Setting("a", bool, True, "x"))


def test_profile_values_are_checked_with_the_task_they_are_for():
    spec = Spec(Setting("n", int, 1, "a count", ge=1), package="pkg", profile="p")
    bad_default = Profile("p", "pkg/profiles/p.json", "0", {"n": 0}, {})
    with pytest.raises(DuplexEvalError, match=r"^runner 'r': profile 'p': n must be an integer >= 1 \(got 0\)$"):
        spec.check_profile("r", bad_default)
    bad_task = Profile("p", "pkg/profiles/p.json", "0", {}, {"turn_taking": {"n": -1}})
    with pytest.raises(DuplexEvalError, match=r"^runner 'r': profile 'p' \(turn_taking\): n must be"):
        spec.check_profile("r", bad_task)
    unknown = Profile("p", "pkg/profiles/p.json", "0", {"m": 1}, {"turn_taking": {"k": 1}})
    with pytest.raises(DuplexEvalError, match=r"sets unknown runner_args m, turn_taking\.k$"):
        spec.check_profile("r", unknown)


# --- before anything runs: `duplex-runner check --config`, one `error:` line, exit 2 ------------

def _check(tmp_path, config: dict):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(config))   # NaN and Infinity as Python's json writes them
    return CliRunner().invoke(main, ["check", "--config", str(cfg)])


@pytest.mark.parametrize("config, message", [
    # counts: zero and negative
    ({"runner": "cascade", "runner_args": {"max_new_tokens": 0}},
     "runner 'cascade': max_new_tokens must be an integer >= 1 (got 0)"),
    ({"runner": "moshi-ws", "runner_args": {"url": "http://127.0.0.1:1", "window": -2}},
     "runner 'moshi-ws': window must be an integer from 1 to 1000 (got -2)"),
    ({"runner": "silence", "runner_args": {"concurrency": 0}},
     "runner 'silence': concurrency must be an integer from 1 to 256 (got 0)"),
    ({"runner": "freeze-omni", "runner_args": {"url": "https://h:1", "max_message_bytes": 0}},
     "runner 'freeze-omni': max_message_bytes must be an integer from 1 to 1073741824 (got 0)"),
    # probabilities outside [0, 1]
    ({"runner": "fixed-latency", "runner_args": {"threshold": 1.5}},
     "runner 'fixed-latency': threshold must be a number > 0.15 and <= 1 (got 1.5)"),
    ({"runner": "openai-realtime", "runner_args": {"turn_detection": {"type": "server_vad", "threshold": -0.1}}},
     "runner 'openai-realtime': turn_detection.threshold must be a number from 0 to 1 (got -0.1)"),
    # not finite
    ({"runner": "fixed-latency", "runner_args": {"delay_s": math.inf}},
     "runner 'fixed-latency': delay_s must be a number >= 0 (got inf)"),
    ({"runner": "gemini-live", "runner_args": {"temperature": math.nan}},
     "runner 'gemini-live': temperature must be a number from 0 to 2 or null (got nan)"),
    ({"runner": "silence", "runner_args": {"drift_limit_ms": math.nan}},
     "runner 'silence': drift_limit_ms must be a number > 0 and <= 10000 (got nan)"),
])
def test_a_bad_number_is_one_error_line_and_exit_2_before_anything_runs(tmp_path, monkeypatch, config, message):
    for var in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MODEL_URL", "MODEL_CA", "MODEL_INSECURE"):
        monkeypatch.delenv(var, raising=False)   # the settings are checked before the keys are looked for
    res = _check(tmp_path, config)
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and lines == [f"error: {message}"], res.output


def test_the_check_command_itself_says_it_in_one_line(tmp_path):
    """The installed console script: stderr one `error:` line, exit 2, no output folder anywhere."""
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"runner": "replay", "runner_args": {"tree": str(tmp_path), "max_length_diff_s": math.nan}}))
    r = subprocess.run([command("duplex-runner"), "check", "--config", str(cfg)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == ["error: runner 'replay': max_length_diff_s must be a number >= 0 (got nan)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


def test_the_settings_table_command(tmp_path):
    res = CliRunner().invoke(main, ["settings-table", "fixed-latency"])
    assert res.exit_code == 0 and res.output.startswith("| setting | type | default | allowed | meaning |")
    assert "| `delay_s` | number | `1.0` | >= 0 |" in res.output
    res = CliRunner().invoke(main, ["settings-table", "nope"])
    assert res.exit_code == 2 and "unknown runner 'nope'" in res.output


# --- install hints: the versions of the package's requirements.txt -----------------------------

def _pins(req: Path) -> dict[str, str]:
    pins = {}
    for line in req.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


@pytest.mark.parametrize("pkg", PACKAGES, ids=[p.name for p in PACKAGES])
def test_install_hints_name_the_versions_requirements_txt_pins(pkg):
    reg = importlib.import_module(f"{_module(pkg)}.registration")
    pins = _pins(pkg / "requirements.txt")
    for entry in reg.RUNNERS:
        for module, hint in entry["hints"].items():
            for name, version in re.findall(r"([A-Za-z0-9._-]+)==([^\s]+)", hint):
                assert pins.get(re.sub(r"[-_.]+", "-", name).lower()) == version, (pkg.name, module, hint)


def test_without_requirements_txt_a_hint_names_the_packages_unpinned(tmp_path):
    """A runner image has the package in site-packages, with no requirements.txt beside it."""
    anchor = tmp_path / "site-packages" / "duplexeval_runner_x" / "registration.py"
    anchor.parent.mkdir(parents=True)
    assert deps.pip_hint(str(anchor), ["aiohttp", "sphn"]) == (
        "pip install -c constraints.txt aiohttp sphn (the versions pinned in the runner package's requirements.txt)")
    src = ROOT / "components" / "runners" / "moshi-ws" / "duplexeval_runner_moshi_ws" / "registration.py"
    assert deps.pip_hint(str(src), ["aiohttp"], no_deps=True) == "pip install --no-deps aiohttp==3.14.5"


# --- what the orchestrator knows of runner settings agrees with the declarations ----------------

def test_the_orchestrators_lists_agree_with_the_declarations():
    catalog = pytest.importorskip("duplexeval.catalog")
    plan = pytest.importorskip("duplexeval.plan")
    declared = [s for _, _, cls in RUNNERS for s in cls.SETTINGS.settings] + list(CORE.settings)
    env_args = {**catalog.ENDPOINT_ENV, **catalog.WEIGHTS_ENV}
    for s in declared:
        if s.path:
            assert s.name in catalog.PATHS and s.name in plan.PATH_ARGS, s.name
        if s.env:
            assert env_args.get(s.name) == s.env, s.name
        if s.name in catalog.FLAGS:
            assert s.types == (bool,), s.name
    assert {s.name for s in declared if s.operational} == set(plan.OPERATIONAL["runner_args"])


# --- texts kept in events, message limits ------------------------------------------------------

def test_every_text_an_event_keeps_is_capped_with_a_marker():
    log = EventLog(record_wall=False)
    long = "é" * (MAX_TEXT_CHARS + 10)
    row = log.emit("text", 0.0, text=long, nested={"why": [long], "k" * 5000: 1}, short="ok")
    marker = "…[truncated 10 characters]"
    assert row["text"] == "é" * MAX_TEXT_CHARS + marker and row["nested"]["why"] == [row["text"]]
    assert row["short"] == "ok" and cap_text("x" * MAX_TEXT_CHARS) == "x" * MAX_TEXT_CHARS
    assert max(len(k) for k in row["nested"]) == MAX_TEXT_CHARS + len("…[truncated 1000 characters]")


def test_a_message_over_the_limit_is_recognised_in_each_client_librarys_words():
    websockets = pytest.importorskip("websockets")
    from websockets.frames import Close
    from aiohttp import WebSocketError
    ours = websockets.exceptions.ConnectionClosedError(None, Close(1009, "frame exceeds limit"), None)
    theirs = websockets.exceptions.ConnectionClosedError(Close(1009, "too big for the server"), None, None)
    wrapped = RuntimeError("the SDK's own error")
    wrapped.__context__ = ours
    assert net.too_big(ours) and net.too_big(wrapped) and net.too_big(WebSocketError(1009, "too big"))
    assert not net.too_big(theirs) and not net.too_big(WebSocketError(1006, "lost")) and not net.too_big(None)
    assert net.too_big_reason(65536) == "a server message was larger than max_message_bytes (65536 bytes)"
