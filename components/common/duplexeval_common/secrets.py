"""One secrets policy for everything duplexeval writes.

Only credentials are secrets: API keys, tokens, passwords, and credentials inside URLs
(`https://user:password@host`, `?api_key=...`). Endpoints (base URLs without credentials, model
names) are not: they change results, so they are part of stage keys and records.

Secrets reach a component only through its environment. Where a user puts one in a setting
(`--runner-arg api_key=...`, a URL with a password), the orchestrator moves it out of the
settings into an environment variable `DUPLEXEVAL_SECRET_<n>` and leaves the reference
`${DUPLEXEVAL_SECRET_<n>}` in the config file (`extract`); the component puts the value back in
memory when it reads its config (`expand`). Everything written (stage.json, store/configs/,
run.json and its command, runner and judge records, logs) goes through `redact` (JSON values)
or `scrub` (text), which also replace the value of every secret-named environment variable
wherever it appears.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDACTED = "<redacted>"
SECRET_ENV_PREFIX = "DUPLEXEVAL_SECRET_"
_REF = re.compile(r"\$\{(" + SECRET_ENV_PREFIX + r"[0-9]+)\}")

# A setting or variable name is a credential when its last word is one of these (so
# `api_key`, `OPENAI_API_KEY`, `hf_token`, `password` are; `max_new_tokens`, `tokenizer`,
# `api_key_env` (the *name* of a variable) and `token_count` are not).
_SECRET_TAIL = re.compile(
    r"(?:^|[_\-.])(?:api[_\-]?key|apikey|access[_\-]?key|secret(?:[_\-]?key)?|client[_\-]?secret|"
    r"password|passwd|passphrase|token|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token|bearer|"
    r"auth|authorization|credentials?|private[_\-]?key|session[_\-]?key|sig|signature)$", re.I)
# Environment variables named like OPENAI_KEY are keys too, except these (not credentials).
_NOT_SECRET_ENV = {"DUPLEXEVAL_STAGE_KEY", "PWD", "OLDPWD"}
# Query parameters that carry credentials in URLs.
_SECRET_PARAMS = {"key", "api_key", "apikey", "api-key", "token", "access_token", "auth", "auth_token",
                  "password", "pass", "pwd", "secret", "sig", "signature", "x-amz-signature",
                  "x-goog-signature", "client_secret"}
# A URL: a scheme, `://` and everything up to a space, a quote or an angle bracket. The scheme
# starts at a word boundary: at the first letter of a run of scheme characters that follows a
# non-word character, or a letter after `+`, `.` or `-` inside the run. Found by runs (each run of
# scheme characters is read once, possessively, and only runs followed by `://` are looked at), so
# the time is linear in the text's length.
_SCHEME_RUN = re.compile(r"(?<![a-zA-Z0-9+.\-])[a-zA-Z0-9+.\-]++(?=://[^\s'\"<>])")
_URL_REST = re.compile(r"://[^\s'\"<>]+")
_WORD = re.compile(r"\w")
# `name=value` / `name: value` in text: every name followed by a separator (so in
# `--runner-arg=api_key=X` both `runner-arg` and `api_key` are names); a value runs to the next
# space, comma, semicolon or ampersand, or is a quoted string. A name is the part of a run of name
# characters from its first letter or underscore on (the leading digits, dots and dashes are not
# part of it): the run is matched from its start only (the look-behind) and possessively, so a
# long run that is no name costs its length once, not its length squared.
_NAME_SEP = re.compile(r"(?<![A-Za-z0-9_.\-])[0-9.\-]*+(?P<k>[A-Za-z_][A-Za-z0-9_.\-]*+)(?P<sep>\s*+[=:]\s*+)")
_UNQUOTED = re.compile(r"[^\s,;&]+")
_SCHEME_TOKEN = re.compile(r"\b(?P<s>Bearer|Basic|Token|Digest)\s++(?P<v>[A-Za-z0-9._~+/=\-]{6,}+)")
_SCHEME_WORDS = ("Bearer", "Basic", "Token", "Digest")
# Environment values searched for in text: long enough, and credential-like (a digit, or long).
_MIN_SECRET_LEN = 8


def is_secret_name(name: Any) -> bool:
    """Whether a setting or environment variable of this name holds a credential."""
    name = str(name)
    if name[-4:].lower() in ("_env", "-env") or name in _NOT_SECRET_ENV:
        return False
    if name.endswith("_KEY") and name.isupper():
        return True
    # the tail is at most 14 characters: a long name is judged by its end (same answer, no scan)
    return bool(_SECRET_TAIL.search(name if len(name) <= 40 else name[-40:]))


def _credential_like(value: str) -> bool:
    return len(value) >= _MIN_SECRET_LEN and (any(c.isdigit() for c in value) or len(value) >= 16)


def env_secrets(environ: dict | None = None) -> list[str]:
    """Values of the secret-named environment variables (and DUPLEXEVAL_SECRET_*), longest first."""
    environ = os.environ if environ is None else environ
    vals = {v for k, v in environ.items()
            if v and (k.startswith(SECRET_ENV_PREFIX) or (is_secret_name(k) and _credential_like(v)))}
    return sorted(vals, key=len, reverse=True)


def _url_secret_parts(url: str) -> list[str]:
    """The credential substrings of one URL: its userinfo password (or lone user token), secret params."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = []
    if parts.password:
        found.append(parts.password)
    elif parts.username and "@" in parts.netloc:
        found.append(parts.username)  # `https://TOKEN@host`: a bare token as the user name
    for part in (parts.query, parts.fragment):
        for k, v in parse_qsl(part, keep_blank_values=True):
            if v and (k.lower() in _SECRET_PARAMS or is_secret_name(k)):
                found.append(v)
    return found


def redact_url(url: str) -> str:
    """The URL without credentials: `https://<redacted>@host/path?api_key=<redacted>`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = REDACTED + "@" + netloc.rsplit("@", 1)[1]
    query, fragment = (_redact_params(x) for x in (parts.query, parts.fragment))
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _redact_params(text: str) -> str:
    if not text or "=" not in text:
        return text
    pairs = parse_qsl(text, keep_blank_values=True)
    if any(k.lower() in _SECRET_PARAMS or is_secret_name(k) for k, _ in pairs):
        return urlencode([(k, REDACTED if (k.lower() in _SECRET_PARAMS or is_secret_name(k)) else v)
                          for k, v in pairs], safe="<>")
    return text


def _needles(extra: Iterable[str]) -> list[str]:
    """The values to hunt in text: the given ones and the secret environment values, longest
    first (so a secret that holds another is replaced whole)."""
    return sorted({*(e for e in extra if e), *env_secrets()}, key=lambda v: (-len(v), v))


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """Text with every known secret value, URL credential and `secret_name=value` replaced.

    Linear in the text's length (a 10 MB text takes a fraction of a second)."""
    if not text:
        return text
    return _scrub(text, _needles(extra))


def _scrub(text: str, needles: list[str]) -> str:
    if not text:
        return text
    for v in needles:
        if v in text:
            text = text.replace(v, REDACTED)
    if "://" in text:
        text = _redact_urls(text)
    if any(w in text for w in _SCHEME_WORDS):
        text = _SCHEME_TOKEN.sub(lambda m: f"{m.group('s')} {REDACTED}", text)
    if "=" in text or ":" in text:
        text = _redact_assignments(text)
    return text


def _scheme_start(text: str, start: int, end: int) -> int | None:
    """Where a URL's scheme begins in the run of scheme characters text[start:end] (the first
    letter at a word boundary), or None when no letter of the run is at one."""
    for p in range(start, end):
        c = text[p]
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            continue
        if p == start:
            if p == 0 or not _WORD.match(text[p - 1]):
                return p
        elif text[p - 1] in "+.-":
            return p
    return None


def url_spans(text: str) -> Iterable[tuple[int, int]]:
    """(start, end) of every URL in the text, left to right, not overlapping; linear time."""
    pos = 0
    for m in _SCHEME_RUN.finditer(text):
        if m.start() < pos:  # inside the previous URL
            continue
        start = _scheme_start(text, m.start(), m.end())
        if start is None:
            continue
        pos = _URL_REST.match(text, m.end()).end()
        yield start, pos


def _redact_urls(text: str) -> str:
    out, pos = [], 0
    for start, end in url_spans(text):
        out.append(text[pos:start])
        out.append(redact_url(text[start:end]))
        pos = end
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _redact_assignments(text: str) -> str:
    """`secret_name=value` and `secret_name: "value"` with the value replaced.

    A value is a quoted string, else runs up to a space, comma, semicolon or ampersand. The last
    quote of each kind is found once, so an unclosed quote is told in constant time."""
    out, pos, n = [], 0, len(text)
    last: dict[str, int] = {}
    secret: dict[str, bool] = {}  # names repeat: each is judged once
    unquoted = _UNQUOTED.match
    for m in _NAME_SEP.finditer(text):
        k = m.group("k")
        s = secret.get(k)
        if s is None:
            s = secret[k] = is_secret_name(k)
        if not s or m.start("k") < pos:
            continue
        start = m.end()
        if start >= n:
            continue
        c = text[start]
        end = None
        if c == '"' or c == "'":
            if c not in last:
                last[c] = text.rfind(c)
            if last[c] > start:
                end = text.index(c, start + 1) + 1
        if end is None:
            v = unquoted(text, start)
            if v is None:
                continue
            end = v.end()
        if end - start <= _DONE_LEN and text[start:end] in _DONE:
            continue
        out.append(text[pos:start])
        out.append(REDACTED)
        pos = end
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


_DONE = (REDACTED, f'"{REDACTED}"', f"'{REDACTED}'")
_DONE_LEN = len(REDACTED) + 2


def redact(obj: Any, extra: Iterable[str] = ()) -> Any:
    """A copy of a JSON value safe to write: secret-named settings and credentials removed.

    The secret values are gathered once per call, then every string is scrubbed (linear in the
    total size of the value)."""
    return _redact(obj, _needles(extra))


def _redact(obj: Any, needles: list[str]) -> Any:
    if isinstance(obj, dict):
        return {k: (REDACTED if is_secret_name(k) and v not in (None, "") and not isinstance(v, (dict, list))
                    else _redact(v, needles)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_redact(v, needles) for v in obj]
    if isinstance(obj, str):
        return _scrub(obj, needles)
    return obj


def extract(config: Any, start: int = 0) -> tuple[Any, dict[str, str]]:
    """Move every secret out of a config: (config with `${DUPLEXEVAL_SECRET_n}` references, env).

    A secret-named setting's whole value and a URL's credentials (userinfo, secret query and
    fragment parameters) are moved; nothing else (an ordinary value that happens to equal a
    key is a setting, and stays in the key). Settings that differ only in credentials share a
    stage key: a rotated API key does not change what a stage computes. `env` maps each new variable to its value; the stage gets
    it in its environment, never in a file.
    """
    env: dict[str, str] = {}
    by_value: dict[str, str] = {}

    def ref(value: str) -> str:
        if value not in by_value:
            name = f"{SECRET_ENV_PREFIX}{start + len(by_value)}"
            by_value[value] = name
            env[name] = value
        return "${" + by_value[value] + "}"

    def walk(obj: Any, secret: bool = False) -> Any:
        if isinstance(obj, dict):
            return {k: walk(v, is_secret_name(k)) for k, v in obj.items()}
        if isinstance(obj, list):
            return [walk(v, secret) for v in obj]
        if isinstance(obj, str) and obj:
            if secret and not _REF.fullmatch(obj):
                return ref(obj)
            out = obj
            for start, end in list(url_spans(obj)):
                for part in _url_secret_parts(obj[start:end]):
                    out = out.replace(part, ref(part))
            return out
        return obj

    return walk(config), env


def expand(config: Any, environ: dict | None = None) -> Any:
    """A config with each `${DUPLEXEVAL_SECRET_n}` replaced by its environment value (in memory)."""
    environ = os.environ if environ is None else environ
    if isinstance(config, dict):
        return {k: expand(v, environ) for k, v in config.items()}
    if isinstance(config, list):
        return [expand(v, environ) for v in config]
    if isinstance(config, str) and "${" in config:
        def sub(m: re.Match) -> str:
            if m.group(1) not in environ:
                from .errors import DuplexEvalError
                raise DuplexEvalError(f"config refers to ${{{m.group(1)}}}, which is not set in the "
                                      "environment (secrets are passed only through it)")
            return environ[m.group(1)]
        return _REF.sub(sub, config)
    return config


def secret_refs(config: Any) -> list[str]:
    """The DUPLEXEVAL_SECRET_* variables a config refers to."""
    if isinstance(config, dict):
        return sorted({r for v in config.values() for r in secret_refs(v)})
    if isinstance(config, list):
        return sorted({r for v in config for r in secret_refs(v)})
    if isinstance(config, str):
        return sorted(set(_REF.findall(config)))
    return []
