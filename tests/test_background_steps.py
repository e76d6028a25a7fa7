"""The waits for what .ci/run makes beside the tests: the images (tests/docker/conftest.py) and the
runner packages' own environments (the `own_env` mark, the root conftest.py). A step's exit status
appears in the file its variable names; a test waits for it, fails naming the log when the step
failed or did not end in time, and an own environment that is not there skips the test."""

import importlib.util
import os
import threading
import time
from pathlib import Path

import pytest

from .conftest import background_step_failure

ROOT = Path(__file__).resolve().parents[1]


def _unique(name: str) -> str:
    # background_step_failure caches per variable name (once per process): a name per case
    return f"DUPLEXEVAL_TEST_{name}_{os.getpid()}_{time.monotonic_ns()}"


def test_no_status_file_named_means_the_step_was_done_beforehand():
    assert background_step_failure(_unique("UNSET"), _unique("LOG"), "the step") is None


def test_a_status_written_later_is_waited_for(tmp_path, monkeypatch):
    var, status = _unique("LATE"), tmp_path / "step.status"
    monkeypatch.setenv(var, str(status))
    writer = threading.Timer(0.5, lambda: status.write_text("0\n"))
    writer.start()
    t0 = time.monotonic()
    try:
        assert background_step_failure(var, _unique("LOG"), "the step", 30.0) is None
    finally:
        writer.cancel()
    assert time.monotonic() - t0 >= 0.4


def test_a_failed_step_names_its_exit_and_log(tmp_path, monkeypatch):
    var, log = _unique("FAILED"), _unique("LOG")
    (tmp_path / "step.status").write_text("2\n")
    monkeypatch.setenv(var, str(tmp_path / "step.status"))
    monkeypatch.setenv(log, "/x/own-venvs.log")
    assert background_step_failure(var, log, "the own runner environments") == \
        "the own runner environments failed (exit 2): see /x/own-venvs.log"


def test_a_step_that_does_not_end_in_time_says_so(tmp_path, monkeypatch):
    var = _unique("NEVER")
    monkeypatch.setenv(var, str(tmp_path / "never.status"))
    why = background_step_failure(var, _unique("LOG"), "make images", 0.3)
    assert why == "make images had not ended after 0 s (see its log)"


class _Item:
    """What _own_env reads of a test item: its own_env marks."""

    def __init__(self, *marks):
        self.marks = [m.mark for m in marks]

    def iter_markers(self, name):
        return [m for m in self.marks if m.name == name]


def _root_conftest():
    spec = importlib.util.spec_from_file_location("duplexeval_root_conftest", ROOT / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_own_env_skips_a_missing_environment_with_the_command_that_makes_it(monkeypatch):
    root = _root_conftest()
    monkeypatch.delenv("DUPLEXEVAL_OWN_VENVS_STATUS", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"\.venvs/runner-no-such does not exist: run `make setup` "
                       r"\(scripts/setup-runner-venv\.sh no-such; it needs python9\)"):
        root._own_env(_Item(pytest.mark.own_env("runner-no-such", note="it needs python9")))
    root._own_env(_Item(pytest.mark.slow))  # no own_env mark: nothing to wait for or skip


def test_own_env_fails_when_the_background_step_failed(tmp_path, monkeypatch):
    root = _root_conftest()
    status = tmp_path / "own-venvs.status"
    status.write_text("1\n")
    # a variable name of its own, so that this process's cached answer for the real one is not used
    monkeypatch.setattr(root, "OWN_VENVS_STATUS", _unique("OWN"))
    monkeypatch.setenv(root.OWN_VENVS_STATUS, str(status))
    with pytest.raises(pytest.fail.Exception, match=r"the own runner environments .* failed \(exit 1\)"):
        root._own_env(_Item(pytest.mark.own_env("runner-moshi")))
