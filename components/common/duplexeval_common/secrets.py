"""Keep secrets out of records: they come only from the environment."""

from __future__ import annotations

import re
from typing import Any

_SECRET = re.compile(r"(api[_-]?key|token|secret|password|authorization)", re.I)
REDACTED = "<redacted>"


def redact(obj: Any) -> Any:
    """A copy of a config with every secret-looking value replaced."""
    if isinstance(obj, dict):
        return {k: (REDACTED if _is_secret_key(k) and v not in (None, "") else redact(v))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    return obj


def _is_secret_key(key: Any) -> bool:
    # `*_env` names an environment variable, which is not itself a secret.
    key = str(key)
    return bool(_SECRET.search(key)) and not key.endswith("_env")
