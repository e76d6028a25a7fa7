"""The repository's root conftest: pytest imports it first, with this folder on sys.path, so the
benchmark packages' tests (benchmarks/<name>/<package>/tests/) reach the shared test helpers in
tests/ as `tests.conftest`, `tests.judge.chat_server` and so on."""

# The shared fixtures (tests/conftest.py's), for every test of the repository.
from tests.conftest import isolated_user_cache, speak, sr  # noqa: E402,F401

import os  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def shared_model_cache(tmp_path_factory):
    """One model cache (DUPLEXEVAL_MODEL_CACHE) for the whole test session, every pytest-xdist
    process and every process the tests start: SmolLM2 dequantized from its gguf (about 25 s of
    CPU each time) and openai-whisper converted from CTranslate2 are made once, not once per test
    whose DUPLEXEVAL_CACHE is fresh. A converted model depends only on the files it comes from
    (duplexeval_common.cache.model_cache_dir), and concurrent first writers each rename a complete
    copy into place. A DUPLEXEVAL_MODEL_CACHE set by the caller is kept."""
    if os.environ.get("DUPLEXEVAL_MODEL_CACHE"):
        yield
        return
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the folder every worker's basetemp is in
    os.environ["DUPLEXEVAL_MODEL_CACHE"] = str(root / "model-cache")
    yield
    os.environ.pop("DUPLEXEVAL_MODEL_CACHE", None)


# The TTS segment cache (duplexeval_tts/segment_cache.py): one folder for the whole test session,
# every pytest-xdist process and every stage they start, so that a sentence the datasets share is
# synthesized once, not once per test home (fdb-mini's samples are spoken in dozens of homes). The
# files whose point is synthesis itself (the same bytes across processes, jobs and reruns; the
# datasets against their annotations) run without it: every sample there is synthesized for
# real. The docker runtime never passes the variable into a container, so an image synthesizes
# for itself. Set per test before its fixtures (a module's or session's fixture made while one of
# these files runs is made without the cache). A DUPLEXEVAL_TTS_CACHE set by the caller is kept
# for the other files.
SYNTHESIZE_FOR_REAL = (
    "tests/tts_synth/",
    "benchmarks/fdb-v1/duplexeval_fdb_v1/tests/test_datasets.py",
    "benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/test_dataset.py",
    "benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/test_datasets.py",
    "benchmarks/mtr/duplexeval_mtr/tests/test_mtr_build.py",
)
_CALLER_TTS_CACHE = os.environ.get("DUPLEXEVAL_TTS_CACHE")


# A runner package's own environment (.venvs/runner-<name>, scripts/setup-runner-venv.sh): .ci/run
# makes these in the background while the first tests run (`SETUP_OWN_VENVS=0 make setup` makes
# .venv alone, then `scripts/setup-venv.sh --own-only` writes its exit status to the file named in
# DUPLEXEVAL_OWN_VENVS_STATUS). A test marked `own_env(component)` waits for that status, fails when
# the step failed, and is skipped when the environment is not there (no such Python: nova-sonic's).
OWN_VENVS = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".venvs")
OWN_VENVS_STATUS = "DUPLEXEVAL_OWN_VENVS_STATUS"


def _own_env(item) -> None:
    from tests.conftest import background_step_failure
    for mark in item.iter_markers("own_env"):
        why = background_step_failure(OWN_VENVS_STATUS, "DUPLEXEVAL_OWN_VENVS_LOG",
                                      "the own runner environments (scripts/setup-venv.sh --own-only)")
        if why is not None:
            pytest.fail(why, pytrace=False)
        (component,) = mark.args
        if not os.path.exists(os.path.join(OWN_VENVS, component, "bin", "duplex-runner")):
            note = f"; {mark.kwargs['note']}" if mark.kwargs.get("note") else ""
            pytest.skip(f".venvs/{component} does not exist: run `make setup` (scripts/setup-runner-venv.sh "
                        f"{component.removeprefix('runner-')}{note})")


# The HTML report at the end of `duplexeval eval` (report.html and a page per sample, with a
# matplotlib timeline each: about a second of CPU per small run, far more for MTR's rounds) is
# built only where a test reads it: the tests marked `html_report` (the report's own files, and
# those that open a run's report.html). Every other test's runs pass DUPLEXEVAL_HTML=0
# (`eval --no-html`) and still write and link metrics.json and report.md. Set per test before its
# fixtures, as the TTS cache below; a DUPLEXEVAL_HTML set by the caller is kept.
_CALLER_HTML = os.environ.get("DUPLEXEVAL_HTML")


def _html_report(item) -> None:
    if _CALLER_HTML is None:
        os.environ["DUPLEXEVAL_HTML"] = "1" if item.get_closest_marker("html_report") else "0"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _own_env(item)
    _html_report(item)
    try:
        rel = item.path.relative_to(item.config.rootpath).as_posix()
    except ValueError:  # a test file outside the repository
        rel = ""
    if rel.startswith(SYNTHESIZE_FOR_REAL):
        os.environ["DUPLEXEVAL_TTS_CACHE"] = "off"
        return
    if _CALLER_TTS_CACHE is not None:
        os.environ["DUPLEXEVAL_TTS_CACHE"] = _CALLER_TTS_CACHE
        return
    root = item.config._tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the folder every worker's basetemp is in
    os.environ["DUPLEXEVAL_TTS_CACHE"] = str(root / "tts-cache")


# The longest test files first (measured: docs/performance.md lists the slowest tests), so that
# `make test`'s parallel pass, which hands out whole files in this order (--no-loadscope-reorder),
# does not end with three processes idle while the fourth works through a long file it was given
# last. The docker files come after the first long ones: .ci/run builds the images while those run
# (tests/docker/conftest.py waits for the build). The order of the tests inside a file is kept;
# everything not named keeps its collection order after these.
LONGEST_FIRST = (
    "benchmarks/mtr/duplexeval_mtr/tests/test_mtr_eval.py",
    "tests/orchestrator/test_slurm.py",
    "benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/test_eval_controls.py",
    "benchmarks/fdb-v1/duplexeval_fdb_v1/tests/test_eval_controls.py",
    "tests/orchestrator/test_repair_and_secrets.py",
    "tests/orchestrator/test_sensitivity.py",
    "tests/e2e/test_default_path.py",
    "tests/duplex_runner/test_moshi.py",
    "benchmarks/mtr/duplexeval_mtr/tests/test_report_html_mtr.py",
    "tests/orchestrator/test_eval_cli.py",
    "benchmarks/fdb-v1/duplexeval_fdb_v1/tests/test_counterfactual.py",
    "tests/duplex_runner/test_live_models.py",
    "benchmarks/fdb-v2/duplexeval_fdb_v2/tests/test_report.py",
    "tests/orchestrator/test_compare_runs.py",
    "benchmarks/mtr/duplexeval_mtr/tests/test_mtr_stage.py",
    "benchmarks/fdb-v2/duplexeval_fdb_v2/tests/test_eval_controls.py",
    "tests/orchestrator/test_benchmark_package.py",
    "benchmarks/fdb-v2/duplexeval_fdb_v2/tests/test_judged_eval.py",
    # about 1,000 s of the four processes' work above: the images are built by then (.ci/run). A
    # docker file handed out earlier holds its process waiting for them: in the run of 2026-12-07
    # 10:27, where these came 800 s of work sooner, three of the four waited at once, the CPUs idle.
    "tests/docker/test_docker_runtime.py",
    "tests/docker/test_docker_secrets.py",
    "tests/docker/test_docker_mtr.py",
    "tests/docker/test_docker_asr_backends.py",
    "tests/docker/test_docker_live.py",
    "tests/docker/test_docker_dgslm.py",
    "tests/docker/test_archive_docker.py",
    "tests/docker/test_runner_images.py",
    "tests/orchestrator/test_hostile_docker.py",
    "tests/e2e/test_report_browser.py",
    # the `filler` files (FILLER_FILES below; beside the serial pass), the longest first
    "benchmarks/fdb-v1/duplexeval_fdb_v1/tests/test_datasets.py",
    "benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/test_datasets.py",
    # the longest files of the serial pass (two processes: the longest first there too)
    "tests/e2e/test_runner_gemini_live.py",
    "tests/duplex_runner/test_live_network.py",
    "tests/e2e/test_runner_openai_realtime.py",
    "tests/e2e/test_fdb_v2_live.py",
)

# The files `make test-fast` leaves out (marked `slow` here): each runs whole pipelines
# (`duplexeval eval`, a mini dataset synthesized), docker, Slurm or a browser. Tests marked slow
# in their own files (a real model loaded) are left out too.
SLOW_FILES = frozenset(LONGEST_FIRST) | {
    "tests/e2e/test_runner_freeze_omni.py",
    "tests/e2e/test_runner_dgslm.py",
    "tests/e2e/test_runner_half_duplex.py",
    "tests/e2e/test_runner_nova_sonic.py",
    "tests/e2e/test_runner_gemini_live.py",
    "tests/e2e/test_runner_moshi.py",
    "tests/e2e/test_runner_moshi_ws.py",
    "tests/e2e/test_runner_openai_realtime.py",
    "tests/duplex_runner/test_live_models.py",
    "tests/duplex_runner/test_live_network.py",
    "tests/orchestrator/test_hostile_slurm.py",
    "tests/orchestrator/test_archive.py",
    "tests/orchestrator/test_hostile_archives.py",
    "tests/orchestrator/test_hostile_core.py",
    "tests/orchestrator/test_judge_reply_bound.py",
    "tests/orchestrator/test_benchmarks.py",
    "tests/orchestrator/test_catalog.py",
    "tests/orchestrator/test_leaderboard.py",
    "benchmarks/fdb-v1/duplexeval_fdb_v1/tests/test_import.py",
    "benchmarks/fdb-v1/duplexeval_fdb_v1/tests/test_report_html.py",
    # a dataset or tree synthesized, real TTS or ASR models on it: 30 s to 2 min each on 2 cores
    "tests/tts_synth/test_engines_voices.py",
    "tests/tts_synth/test_stage.py",
    "tests/asr_aligner/test_stage_outputs.py",
    "benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/test_golden_parity.py",
    "benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/test_dataset.py",
    "benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/test_import.py",
    "benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/test_score_tree.py",
    "benchmarks/mtr/duplexeval_mtr/tests/test_mtr_scripts.py",
    "benchmarks/mtr/duplexeval_mtr/tests/test_mtr_asr.py",
    # fdb-v2 through `duplexeval eval` (live sessions, judged runs): 40 to 65 s each
    "benchmarks/fdb-v2/duplexeval_fdb_v2/tests/test_eval_controls.py",
    "benchmarks/fdb-v2/duplexeval_fdb_v2/tests/test_report.py",
    "benchmarks/fdb-v2/duplexeval_fdb_v2/tests/test_judged_eval.py",
    "benchmarks/fdb-v2/duplexeval_fdb_v2/tests/test_examiner_endpoint.py",
}


# The files `make test` runs beside its serial pass instead of in the parallel one (marked
# `filler` here; scripts/test-passes.sh): the serial pass's real-time sessions leave about one of
# two cores idle for its six minutes, and these fill it. Each is CPU-bound synthesis with nothing
# timed (the datasets against their annotations, the engines and voices), about 310 s of CPU
# together in the parallel pass (docs/performance.md, "CI"); all are `slow` too.
FILLER_FILES = frozenset({
    "benchmarks/fdb-v1/duplexeval_fdb_v1/tests/test_datasets.py",
    "benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/test_datasets.py",
    "tests/tts_synth/test_engines_voices.py",
})


def pytest_collection_modifyitems(config, items):
    import pytest
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        if path in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if path in FILLER_FILES:
            item.add_marker(pytest.mark.filler)
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(LONGEST_FIRST)))


# The longest files of the run (setup, call and teardown of their tests, summed), printed at the
# end: what LONGEST_FIRST and SLOW_FILES above are kept up to date from. With xdist the reports
# of every process come to this one.
_FILE_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if not _FILE_SECONDS:
        return
    longest = sorted(_FILE_SECONDS.items(), key=lambda kv: -kv[1])[:20]
    terminalreporter.write_sep("=", f"longest {len(longest)} files (s, their tests summed)")
    for path, seconds in longest:
        terminalreporter.write_line(f"{seconds:8.1f}  {path}")
