"""Scrubbing is linear in the text's length and redacts exactly what the old scan redacted.

The old scan (`_NAME_SEP` with a greedy name tried at every position, `\\b` before a URL's
scheme) took time quadratic in a long run of letters: 10k characters 0.85 s, 40k 14 s. It is kept
below as the oracle the new one is compared with, on texts drawn from a fixed seed.
"""

from __future__ import annotations

import random
import re

import pytest

from tests.scaling import assert_linear

from duplexeval_common import secrets
from duplexeval_common.secrets import REDACTED, extract, is_secret_name, redact, redact_url, scrub

# run alone, after the parallel tests (make test): it times the scrubber at n and 4n
pytestmark = pytest.mark.serial

# ---- the old scan, verbatim (the oracle) ---------------------------------------------------------

_OLD_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s'\"<>]+")
_OLD_NAME_SEP = re.compile(r"(?P<k>[A-Za-z_][A-Za-z0-9_.\-]*)(?P<sep>\s*[=:]\s*)")
_OLD_VALUE = re.compile(r"\"[^\"]*\"|'[^']*'|[^\s,;&]+")
_OLD_SCHEME_TOKEN = re.compile(r"\b(?P<s>Bearer|Basic|Token|Digest)\s+(?P<v>[A-Za-z0-9._~+/=\-]{6,})")


def _old_assignments(text: str) -> str:
    out, pos = [], 0
    for m in _OLD_NAME_SEP.finditer(text):
        if m.start() < pos or not is_secret_name(m.group("k")):
            continue
        v = _OLD_VALUE.match(text, m.end())
        if v is None or v.group(0) in (REDACTED, f'"{REDACTED}"', f"'{REDACTED}'"):
            continue
        out.append(text[pos:m.end()])
        out.append(REDACTED)
        pos = v.end()
    out.append(text[pos:])
    return "".join(out)


def old_scrub(text: str) -> str:
    if not text:
        return text
    text = _OLD_URL.sub(lambda m: redact_url(m.group(0)), text)
    text = _OLD_SCHEME_TOKEN.sub(lambda m: f"{m.group('s')} {REDACTED}", text)
    return _old_assignments(text)


# ---- the same results ------------------------------------------------------------------------------

_PIECES = ["a", "Z", "9", "_", ".", "-", "+", ":", "=", "/", " ", "\t", "\n", "@", '"', "'", ",", ";", "&", "?",
           "#", "é", "<", "password", "api_key", "token", "runner-arg", "https", "wss", "://", "Bearer ",
           "Token ", "user:pw123456@h", "?api_key=", "&sig=", "x-", "1.5", "max_new_tokens", "auth", "<redacted>"]


def _texts(n: int, seed: int = 20260101):
    rng = random.Random(seed)
    for _ in range(n):
        yield "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 40)))


def test_scrub_redacts_what_the_old_scan_redacted(monkeypatch):
    for k in [k for k in __import__("os").environ if secrets.is_secret_name(k) or k.startswith("DUPLEXEVAL_SECRET_")]:
        monkeypatch.delenv(k)
    differ = [t for t in _texts(6000) if scrub(t) != old_scrub(t)]
    assert differ == []


@pytest.mark.parametrize("text", [
    "--api_key=SEKRET123456", "9api_key=SEKRET123456", "x.https://u:pw123456@h/x", "_ab://u:pw123456@h",
    "é.https://u:pw123456@h/p?token=abcdef123", 'password="a b c" token=\'q r\' auth=user:pass1234',
    'password="unclosed value123 next', "a.a.a.https://u:pw123456@h", "Bearer      abcdefgh123",
    "url=wss://h/p?api_key=SEKRET123456&model=m, password: hunter2hunter2",
])
def test_awkward_texts_match_the_old_scan(text):
    assert scrub(text) == old_scrub(text)


# ---- linear time --------------------------------------------------------------------------------

_HOSTILE = {
    "letters": lambda n: "A" * n + " :",                # one long name, its separator far away
    "dotted": lambda n: "a." * (n // 2),                # a URL scheme candidate at every other character
    "scheme-run": lambda n: "a+" * (n // 2) + "//",     # the same, never followed by ://
    "names": lambda n: "ab " * (n // 3) + "=",          # many short names, one separator at the end
    "spaces": lambda n: "A" + " " * n,                  # a name and then a long run of white space
    "bearer": lambda n: ("Bearer " + " " * 50) * (n // 57),
    "quotes": lambda n: 'password="' + "b" * n,           # a quote that never closes
}


@pytest.mark.parametrize("kind", sorted(_HOSTILE))
def test_scrub_is_linear(kind):
    """Each hostile shape scrubs in time linear in its length, 2.5 MB against 10 MB (the old scan
    took hours on 10 MB; docs/performance.md has the times)."""
    assert_linear(scrub, _HOSTILE[kind], 2_500_000)


def test_many_secrets_in_one_text():
    """Each assignment is real work (it is replaced): 90,000 of them in 1 MB, well under a second."""
    text = "password=x " * 90_909
    assert scrub(text) == f"password={REDACTED} " * 90_909
    assert_linear(scrub, lambda n: "password=x " * n, 22_727)


def test_redact_of_a_large_record_is_linear():
    """redact gathers the secret values once per call, not once per string."""
    def record(n):
        return {"rows": [{"text": "A" * 100, "i": i, "url": f"https://h/{i}"} for i in range(n)],
                "big": "A" * (100 * n)}
    big = record(50_000)
    assert redact(big) == big
    assert_linear(redact, record, 12_500)


# ---- the same policy on long texts ------------------------------------------------------------------

def test_secrets_in_a_long_text_are_still_found(monkeypatch):
    key = "planted-0123456789abcdefKEY"
    monkeypatch.setenv("SOME_API_KEY", key)
    filler = "A" * 3_000_000
    text = f"{filler} {key} {filler} password=hunter2hunter2 {filler} https://u:pw123456@h/x {filler}"
    out = scrub(text)
    assert key not in out and "hunter2hunter2" not in out and "pw123456" not in out
    assert len(out) < len(text)


def test_a_secret_holding_another_is_replaced_whole(monkeypatch):
    monkeypatch.setenv("A_API_KEY", "abcd12345678")
    monkeypatch.setenv("B_API_KEY", "abcd123456789999")
    assert scrub("x abcd123456789999 y") == f"x {REDACTED} y"
    assert scrub("x abcd12345678 y", extra=["abcd1234"]) == f"x {REDACTED} y"


def test_extract_finds_url_credentials_by_the_same_spans():
    cfg = {"url": "see é.https://bob:pw123456@h/x and wss://h/p?api_key=SEKRET123456&m=1"}
    safe, env = extract(cfg)
    assert sorted(env.values()) == ["SEKRET123456", "pw123456"]
    assert "pw123456" not in safe["url"] and "SEKRET123456" not in safe["url"]
