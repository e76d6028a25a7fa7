"""The model catalog: each model's runner package, component, image, environment and settings."""

from pathlib import Path

import pytest

from duplexeval import benchmarks, catalog, paths, plan
from duplexeval.runtime_docker_stage import DockerRuntime
from duplexeval.runtime_local import LocalRuntime
from duplexeval_common.errors import DuplexEvalError

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(catalog.MODELS))
def test_every_model_names_a_runner_package_with_a_dockerfile_that_registers_its_runner(name):
    m = catalog.MODELS[name]
    d = REPO / "components" / "runners" / m.package
    assert paths.component_dir(m.component) == d
    assert (d / "Dockerfile").is_file() and (d / "requirements.txt").is_file()
    registration = next(d.glob("duplexeval_runner_*/registration.py")).read_text()
    assert f'"name": "{m.runner}"' in registration
    assert DockerRuntime().image(m.component).startswith(f"duplexeval/runner-{m.package}:")


def test_runner_image_swap_applies_to_whichever_runner_package_the_model_uses():
    rt = DockerRuntime({"duplex-runner": "mine/runner:1"})
    assert rt.image("runner-freeze-omni") == "mine/runner:1"
    assert rt.image("asr-aligner").startswith("duplexeval/asr-aligner:")


def test_moshi_runs_from_its_own_environment_and_the_others_from_the_shared_one():
    assert paths.own_environment("runner-moshi") == REPO / ".venvs" / "runner-moshi"
    assert paths.own_environment("runner-freeze-omni") is None
    # the cascade's source identity covers the packages it builds on (controls; half-duplex, its turn
    # logic) and the core
    srcs = paths.component_sources("runner-cascade")
    assert {p.name for p in srcs} == {"cascade", "controls", "half-duplex", "duplex-runner"}


@pytest.mark.own_env("runner-moshi")
def test_moshi_runs_its_own_environments_command():
    assert LocalRuntime().command("runner-moshi") == str(REPO / ".venvs" / "runner-moshi" / "bin" / "duplex-runner")


def test_a_missing_own_environment_is_a_one_line_error(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "VENVS", tmp_path)
    with pytest.raises(DuplexEvalError, match=r"own environment .* is missing: run `make setup`"):
        LocalRuntime().command("runner-moshi")


def test_environment_settings_fill_runner_args_only_where_not_given(tmp_path):
    env = {"MODEL_URL": "https://h:1", "MODEL_INSECURE": "1", "MODEL_DIR": "/w", "REPLAY_TREE": str(tmp_path)}
    fo = catalog.endpoint_args(catalog.model("freeze-omni"), {}, env)
    assert fo == {"url": "https://h:1", "insecure": True}
    assert catalog.endpoint_args(catalog.model("freeze-omni"), {"url": "https://x:2"}, env)["url"] == "https://x:2"
    assert catalog.endpoint_args(catalog.model("moshi"), {}, env) == {"model_dir": "/w"}
    assert catalog.endpoint_args(catalog.model("cascade"), {}, env) == {}
    rel = catalog.endpoint_args(catalog.model("moshi"), {}, {"MODEL_DIR": "~/w"})["model_dir"]
    assert rel == str(Path("~/w").expanduser())                        # made absolute for the stage
    assert catalog.endpoint_args(catalog.model("moshi"), {}, {"MODEL_DIR": "tiny:0"}) == {"model_dir": "tiny:0"}


def test_the_replay_tree_content_is_part_of_the_runner_key(tmp_path):
    """Outputs replayed from a tree are content: changing one changes the runner stage's config."""
    tree = tmp_path / "tree"
    (tree / "x_turn_taking" / "1").mkdir(parents=True)
    out = tree / "x_turn_taking" / "1" / "output.wav"
    out.write_bytes(b"one")

    def runner_config():
        from duplexeval.plan import Planner, plan_of
        specs = plan_of(benchmarks.get("fdb-v1"), Planner("fdb-v1", "replay", "fdb-mini", "faster-whisper", "none",
                                                          limit=1, environ={"REPLAY_TREE": str(tree)}))
        (spec,) = [s for s in specs if s.name == "runner"]
        assert spec.component == "runner-replay" and str(tree) in spec.host_paths()
        return spec.config

    a = runner_config()
    assert a["runner_args"]["tree"] == str(tree) and set(a["content"]) == {"tree"}
    out.write_bytes(b"two")
    assert runner_config()["content"] != a["content"]


def test_concurrency_is_left_out_of_the_runner_key_and_drift_limit_is_not():
    base = {"runner": "freeze-omni", "runner_args": {"url": "https://h:1"}, "seed": 0}
    with_n = {**base, "runner_args": {"url": "https://h:1", "concurrency": 3}}
    assert plan.key_config(with_n) == base and with_n["runner_args"]["concurrency"] == 3  # not mutated
    lim = {**base, "runner_args": {"url": "https://h:1", "drift_limit_ms": 50}}
    assert plan.key_config(lim) != base


def test_runner_args_in_one_string_split_as_a_shell_would(tmp_path):
    import subprocess
    from ..conftest import command
    r = subprocess.run([command("duplexeval"), "--home", str(tmp_path), "eval", "--model", "silence",
                        "--runner-args", 'concurrency=2 phrase="a b"'], capture_output=True, text=True)
    # silence takes no arguments: the error names both, so both reached the runner intact
    assert r.returncode == 2 and "phrase" in r.stderr, r.stderr
    r = subprocess.run([command("duplexeval"), "--home", str(tmp_path), "eval", "--model", "silence",
                        "--runner-args", 'x="unclosed'], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: --runner-args"), r.stderr


def test_a_runner_reading_its_key_from_another_variable_gets_that_variable_passed_by_name():
    from duplexeval.plan import runner_stage
    plain = runner_stage("half-duplex", {}, [], {})
    assert plain.network and plain.keys == ("OPENAI_API_KEY",)
    other = runner_stage("half-duplex", {"api_key_env": "QWEN_KEY"}, [], {})
    assert other.keys == ("OPENAI_API_KEY", "QWEN_KEY")
    # an offline runner never becomes networked by a setting
    assert runner_stage("silence", {"api_key_env": "X"}, [], {}).keys == ()


def test_an_endpoint_taken_from_openai_base_url_is_a_setting_in_the_stage_key():
    from duplexeval.plan import endpoints, runner_stage
    env = {"OPENAI_BASE_URL": "https://a.example/v1"}
    hd = runner_stage("half-duplex", {}, [], env)
    assert hd.config["runner_args"]["url"] == "https://a.example/v1" and endpoints(hd) == ["https://a.example/v1"]
    # MODEL_URL first; a given setting over both
    assert runner_stage("half-duplex", {}, [], {**env, "MODEL_URL": "https://b.example/v1"}
                        ).config["runner_args"]["url"] == "https://b.example/v1"
    assert runner_stage("half-duplex", {"url": "https://c.example/v1"}, [], {**env, "MODEL_URL": "https://b.example/v1"}
                        ).config["runner_args"]["url"] == "https://c.example/v1"
    assert "url" not in runner_stage("half-duplex", {}, [], {}).config["runner_args"]
    bailing = runner_stage("bailing", {}, [], env)
    assert bailing.config["runner_args"]["llm_url"] == "https://a.example/v1" and endpoints(bailing) == [
        "https://a.example/v1"]
    # another endpoint is another stage: the settings differ, so the stage key does
    assert runner_stage("bailing", {}, [], {"OPENAI_BASE_URL": "https://d.example/v1"}).config != bailing.config
    assert "llm_url" not in runner_stage("cascade", {}, [], env).config["runner_args"]
