"""`duplexeval sensitivity`: re-transcribe and re-score a finished run under an ASR grid, reusing its
dataset and runner stages; compare the ranking of two runs across the grid."""

import subprocess

from duplexeval_common.jsonio import read_json

from ..conftest import command


def dx(home, *args):
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          timeout=1200)


def test_sensitivity_grid_and_ranking(tmp_path):
    # two subsets of one sample: the ranking read below is turn-taking's latency, and a second subset
    # keeps a row per subset in play (every subset cost the grid four more ASR runs)
    base = ["eval", "--model", "fixed-latency", "--judge", "none", "--limit", "1",
            "--subset", "synthetic_turn_taking", "--subset", "synthetic_pause_handling"]
    assert dx(tmp_path, *base).returncode == 0
    slow = read_json(tmp_path / "runs" / "latest" / "run.json")["run_id"]
    assert dx(tmp_path, *base, "--runner-arg", "delay_s=0.3").returncode == 0
    fast = read_json(tmp_path / "runs" / "latest" / "run.json")["run_id"]
    stages_before = {p.name for p in (tmp_path / "store").iterdir()}

    r = dx(tmp_path, "sensitivity", fast, "--asr", "faster-whisper", "--vad-threshold", "0.35,0.5",
           "--against", slow)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = read_json(tmp_path / "runs" / fast / "sensitivity.json")
    assert [row["setting"] for row in doc["result"]["rows"]] == [
        "faster-whisper vad_threshold=0.35", "faster-whisper vad_threshold=0.5"]
    # the model was not run again: no new runner or dataset stage in the store
    new = {p.name for p in (tmp_path / "store").iterdir()} - stages_before
    components = {read_json(tmp_path / "store" / k / "stage.json")["component"] for k in new
                  if (tmp_path / "store" / k / "stage.json").is_file()}
    assert components <= {"asr-aligner", "judge", "aggregator"}, components
    lat = doc["ranking"]["synthetic_turn_taking|official|latency"]
    assert set(lat["by_setting"].values()) == {"a"} and lat["flips"] is False  # 0.3 s beats 1.0 s
    assert (tmp_path / "runs" / fast / "sensitivity.md").read_text().startswith("# ASR sensitivity")
    assert "official latency" in r.stdout


def test_sensitivity_errors_are_one_line(tmp_path):
    r = dx(tmp_path, "sensitivity", "nope", "--asr", "faster-whisper")
    assert r.returncode == 2 and r.stderr.startswith("error: no run")
    assert dx(tmp_path, "eval", "--model", "silence", "--judge", "none", "--limit", "1").returncode == 0
    r = dx(tmp_path, "sensitivity", "latest", "--asr", "no-such-asr")
    assert r.returncode == 2 and "unknown ASR backend 'no-such-asr'" in r.stderr
    r = dx(tmp_path, "sensitivity", "latest", "--asr", "faster-whisper", "--vad-threshold", "x")
    assert r.returncode == 2 and "--vad-threshold" in r.stderr
    # issue 22: a grid value out of its range is one line before anything runs (a threshold of 5 made
    # always-talk's pause TOR 0)
    stages = sorted(p.name for p in (tmp_path / "store").iterdir())
    for option, value, message in [
            ("--vad-threshold", "5", "error: --vad-threshold: vad_threshold must be a number from 0 to 1 (got 5.0)"),
            ("--vad-threshold", "0.5,-0.1", "error: --vad-threshold: vad_threshold must be a number from 0 to 1 "
                                            "(got -0.1)"),
            ("--vad-threshold", "nan", "error: --vad-threshold: vad_threshold must be a number from 0 to 1 (got nan)"),
            ("--vad-min-silence-ms", "-100", "error: --vad-min-silence-ms: vad_min_silence_ms must be an integer "
                                             ">= 0 (got -100)")]:
        r = dx(tmp_path, "sensitivity", "latest", "--asr", "faster-whisper", option, value)
        assert r.returncode == 2 and r.stderr.splitlines() == [message], r.stderr
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == stages
    assert not (tmp_path / "runs" / "latest" / "sensitivity.json").exists()
