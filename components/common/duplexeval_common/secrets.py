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
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s'\"<>]+")
# `name=value` / `name: value` in text: every name followed by a separator (so in
# `--runner-arg=api_key=X` both `runner-arg` and `api_key` are names); a value runs to the next
# space, comma, semicolon or ampersand, or is a quoted string.
_NAME_SEP = re.compile(r"(?P<k>[A-Za-z_][A-Za-z0-9_.\-]*)(?P<sep>\s*[=:]\s*)")
_VALUE = re.compile(r"\"[^\"]*\"|'[^']*'|[^\s,;&]+")
_SCHEME_TOKEN = re.compile(r"\b(?P<s>Bearer|Basic|Token|Digest)\s+(?P<v>[A-Za-z0-9._~+/=\-]{6,})")
# Environment values searched for in text: long enough, and credential-like (a digit, or long).
_MIN_SECRET_LEN = 8


def is_secret_name(name: Any) -> bool:
    """Whether a setting or environment variable of this name holds a credential."""
    name = str(name)
    if name.lower().endswith(("_env", "-env")) or name in _NOT_SECRET_ENV:
        return False
    if name.isupper() and name.endswith("_KEY"):
        return True
    return bool(_SECRET_TAIL.search(name))


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


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """Text with every known secret value, URL credential and `secret_name=value` replaced."""
    if not text:
        return text
    for v in [*sorted({e for e in extra if e}, key=len, reverse=True), *env_secrets()]:
        if v in text:
            text = text.replace(v, REDACTED)
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    text = _SCHEME_TOKEN.sub(lambda m: f"{m.group('s')} {REDACTED}", text)
    return _redact_assignments(text)


def _redact_assignments(text: str) -> str:
    """`secret_name=value` and `secret_name: "value"` with the value replaced."""
    out, pos = [], 0
    for m in _NAME_SEP.finditer(text):
        if m.start() < pos or not is_secret_name(m.group("k")):
            continue
        v = _VALUE.match(text, m.end())
        if v is None or v.group(0) in (REDACTED, f'"{REDACTED}"', f"'{REDACTED}'"):
            continue
        out.append(text[pos:m.end()])
        out.append(REDACTED)
        pos = v.end()
    out.append(text[pos:])
    return "".join(out)


def redact(obj: Any, extra: Iterable[str] = ()) -> Any:
    """A copy of a JSON value safe to write: secret-named settings and credentials removed."""
    extra = tuple(extra)
    if isinstance(obj, dict):
        return {k: (REDACTED if is_secret_name(k) and v not in (None, "") and not isinstance(v, (dict, list))
                    else redact(v, extra)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(v, extra) for v in obj]
    if isinstance(obj, str):
        return scrub(obj, extra)
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
            for m in _URL.finditer(obj):
                for part in _url_secret_parts(m.group(0)):
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
