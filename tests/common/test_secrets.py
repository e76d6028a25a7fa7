"""The secrets policy: what is a credential, what is not, and that nothing of one is written."""

import pytest

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.secrets import (REDACTED, expand, extract, is_secret_name, redact, redact_url, scrub,
                                       secret_refs)

KEY = "test-key-0123456789abcdefPLANTED"


@pytest.mark.parametrize("name", ["api_key", "OPENAI_API_KEY", "apiKey", "hf_token", "token", "password",
                                  "MODEL_PASSWORD", "access_token", "client_secret", "Authorization",
                                  "credentials", "private_key", "GEMINI_API_KEY"])
def test_credential_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["max_new_tokens", "tokens", "tokenizer", "token_count", "api_key_env",
                                  "keywords", "key_s", "monkey", "base_url", "model", "secretary_name",
                                  "n_tokens_in", "passage", "max_tokens"])
def test_ordinary_names_are_not_credentials(name):
    assert not is_secret_name(name)


def test_redact_keeps_ordinary_settings_and_endpoints():
    cfg = {"runner": "x", "runner_args": {"max_new_tokens": 40, "api_key": KEY, "api_key_env": "OPENAI_API_KEY",
                                          "url": "https://127.0.0.1:8443/socket.io", "model": "gpt-4-turbo",
                                          "tokenizer": "tok"}}
    out = redact(cfg)
    assert out["runner_args"]["max_new_tokens"] == 40
    assert out["runner_args"]["api_key"] == REDACTED
    assert out["runner_args"]["api_key_env"] == "OPENAI_API_KEY"
    assert out["runner_args"]["url"] == "https://127.0.0.1:8443/socket.io"
    assert out["runner_args"]["model"] == "gpt-4-turbo" and out["runner_args"]["tokenizer"] == "tok"


def test_url_credentials_are_removed():
    assert redact_url(f"https://user:{KEY}@host:9/p?x=1") == "https://<redacted>@host:9/p?x=1"
    assert KEY not in redact_url(f"wss://host/p?api_key={KEY}&model=m")
    assert "model=m" in redact_url(f"wss://host/p?api_key={KEY}&model=m")
    assert redact_url("https://host:9/p?max_new_tokens=4") == "https://host:9/p?max_new_tokens=4"


def test_scrub_text_removes_env_values_urls_and_assignments(monkeypatch):
    monkeypatch.setenv("SOME_API_KEY", KEY)
    text = f"calling with {KEY}; url=https://u:pw123456@h/x; password=hunter2hunter; max_new_tokens=40"
    out = scrub(text)
    assert KEY not in out and "pw123456" not in out and "hunter2hunter" not in out
    assert "max_new_tokens=40" in out


def test_extract_moves_secrets_out_and_expand_puts_them_back(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cfg = {"runner_args": {"api_key": "plain-secret-1", "url": f"https://bob:{KEY}@127.0.0.1:1/x",
                           "prompt": f"echo {KEY}", "max_new_tokens": 3}}
    safe, env = extract(cfg)
    text = repr(safe)
    assert "plain-secret-1" not in text and f"bob:{KEY}" not in text
    # a key's value quoted inside an ordinary setting stays a setting, but never reaches a file
    assert KEY not in repr(redact(safe))
    assert safe["runner_args"]["max_new_tokens"] == 3 and "bob:" in safe["runner_args"]["url"]
    assert set(secret_refs(safe)) == set(env)
    assert expand(safe, env) == cfg
    with pytest.raises(DuplexEvalError, match="not set in the environment"):
        expand(safe, {})



@pytest.mark.parametrize("text, secret", [
    ("duplexeval eval --runner-arg=api_key=SEKRETAAA111", "SEKRETAAA111"),
    ('headers={"Authorization": "Bearer SEKRETBBB222"}', "SEKRETBBB222"),
    ("base_url=http://127.0.0.1:1/v1#access_token=FRAGSEKRET7", "FRAGSEKRET7"),
    ('password = "hunter2hunter2"', "hunter2hunter2"),
    ('MODEL_API_KEY="planted-abcdefgh123"', "planted-abcdefgh123"),
    ("auth=user:pass1234", "user:pass1234"),
])
def test_scrub_catches_credentials_in_awkward_places(text, secret):
    assert secret not in scrub(text)


def test_names_and_values_that_are_not_credentials(monkeypatch):
    assert not is_secret_name("PWD") and not is_secret_name("DUPLEXEVAL_STAGE_KEY")
    assert is_secret_name("OPENAI_KEY") and is_secret_name("auth") and is_secret_name("passphrase")
    # an environment "secret" that is an ordinary word is not hunted in text, nor moved out of settings
    monkeypatch.setenv("MY_TOKEN", "precomputed")
    assert scrub("backend precomputed") == "backend precomputed"
    safe, env = extract({"backend": "precomputed"})
    assert safe == {"backend": "precomputed"} and env == {}
    monkeypatch.setenv("PWD", "/work/main")
    assert scrub("wrote /work/main/store") == "wrote /work/main/store"
