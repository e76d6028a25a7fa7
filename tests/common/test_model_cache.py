"""Where converted models go: $DUPLEXEVAL_MODEL_CACHE when set, else the user cache's models/."""

from pathlib import Path

from duplexeval_common import smollm
from duplexeval_common.cache import model_cache_dir, user_cache_dir


def test_model_cache_dir_follows_its_variable_else_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "user"))
    monkeypatch.delenv("DUPLEXEVAL_MODEL_CACHE", raising=False)
    assert model_cache_dir() == user_cache_dir() / "models" == tmp_path / "user" / "models"
    monkeypatch.setenv("DUPLEXEVAL_MODEL_CACHE", str(tmp_path / "models"))
    assert model_cache_dir() == tmp_path / "models"
    monkeypatch.setenv("DUPLEXEVAL_MODEL_CACHE", "")   # empty: not set
    assert model_cache_dir() == tmp_path / "user" / "models"
    assert not (tmp_path / "user").exists() and not (tmp_path / "models").exists()  # nothing made here


def test_smollm2_is_cached_in_the_model_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_MODEL_CACHE", str(tmp_path / "models"))
    d = smollm.cache_dir(smollm.gguf_file())
    assert d.parent == tmp_path / "models" and d.name.startswith("smollm2-")
    assert isinstance(d, Path)
