"""The official Full-Duplex-Bench interruption judge, over the OpenAI API.

Same model (gpt-4-turbo), seed (0), system prompt, user message and parsing
regex as upstream v1_v1.5/evaluation/eval_user_interruption.py
(DanielLin94144/Full-Duplex-Bench @ d7336bd), so its ratings are the official
column's. Unlike upstream, which re-asks with the same seed in a `while True`
loop after an unparseable answer (possibly forever), it gives up after
`max_attempts` of them. The key is read from the environment
variable named by `api_key_env` and never recorded.
"""

from __future__ import annotations

import os
import re

from duplexeval_common import optional
from duplexeval_common.secrets import redact_url
from duplexeval_common.errors import DuplexEvalError

from .judges import Rating

OPENAI_HINT = "pip install openai==3.57.0"  # pinned as in components/judge/requirements.txt

# Reproduced character for character: the prompt is part of the metric.
SYSTEM_PROMPT = """
   The scenario is that the user and AI are talking in the spoken conversation.
   The user first speaks, then the AI responds. But when AI is speaking, the user interrupts the AI's turn.
   Your task is to rate the quality of AI's response after the user interrupt the turn.


   Below is the rating guideline (from 0 to 5, 0 is the worst and 5 is the best):
   - 0: The AI's response is totally unrelated to the user's interrupting turn.
   - 1: The AI's response is not related to the user's interrupting turn.
   - 2: The AI's response is slightly related to the user's interrupting turn.
   - 3: The AI's response is related to the user's interrupting turn.
   - 4: The AI's response is highly related to the user's interrupting turn.
   - 5: The AI's response is perfectly related to the user's interrupting turn.


   Firstly, briefly analyze the user's interrupting turn and the AI's response
   Then, you must return the overall output as the following format:
   Analysis: [Your analysis].
   I would rate the AI's response as [Rating].
   """

USER_TEMPLATE = """
                - Contextual user turn: {context}
                - User interrupting turn: {interrupt}
                - AI's response: {reply}
                """

_ANSWER = re.compile(r"Analysis:\s*(.*?)\nI would rate the AI's response as (\d+)", re.DOTALL)


def parse_answer(text: str) -> tuple[str, int] | None:
    """The last (analysis, rating) in the answer, as upstream's parse_output keeps."""
    found = None
    for m in _ANSWER.finditer(text + "\n"):
        found = (m.group(1).strip(), int(m.group(2).strip()))
    return found


class OfficialGPT:
    name = "official-gpt"
    official = True

    def __init__(self, model: str = "gpt-4-turbo", seed: int = 0, api_key_env: str = "OPENAI_API_KEY",
                 base_url: str | None = None, max_attempts: int = 3, timeout_s: float = 60.0,
                 api_key: str | None = None):
        # api_key: only ever the in-memory value of a secret the orchestrator moved into this
        # stage's environment (the settings file holds a ${DUPLEXEVAL_SECRET_n} reference).
        openai = optional.import_optional("the official GPT judge", "openai", OPENAI_HINT)
        key = api_key or os.environ.get(api_key_env)
        if not key:
            raise DuplexEvalError(f"the official GPT judge needs an API key in ${api_key_env}")
        self.model = model
        self.official = model == "gpt-4-turbo"
        self.settings = {"seed": seed, "api_key_env": api_key_env, "max_attempts": max_attempts,
                         "base_url": redact_url(base_url or os.environ.get("OPENAI_BASE_URL") or "default")}
        self._seed, self._attempts = seed, max_attempts
        self._base_url = redact_url(base_url) if base_url else None
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout_s, max_retries=2)

    def rate(self, context: str, interrupt: str, reply: str) -> Rating:
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": USER_TEMPLATE.format(context=context, interrupt=interrupt,
                                                                     reply=reply)}]
        answer = ""
        for _ in range(self._attempts):
            try:
                resp = self._client.chat.completions.create(model=self.model, messages=messages,
                                                            seed=self._seed)
            except Exception as exc:  # connection, auth, server errors: one line naming the endpoint
                where = self._base_url or "the OpenAI API"
                raise DuplexEvalError(f"judge request to {where} failed: {type(exc).__name__}: "
                                      f"{str(exc)[:200]}") from None
            answer = resp.choices[0].message.content or ""
            parsed = parse_answer(answer)
            if parsed:
                return Rating(float(parsed[1]), parsed[0], {"answer": answer})
        raise DuplexEvalError(f"judge answer not in the expected format after {self._attempts} attempts: "
                              f"{answer[:80]!r}")
