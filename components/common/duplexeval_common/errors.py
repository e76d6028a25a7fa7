"""Error types that carry the sample and the problem in one line."""


class DuplexEvalError(Exception):
    """A user-facing error: printed as one line, never as a traceback."""


class SampleError(DuplexEvalError):
    """Bad input for one sample; the stage records it and moves on."""

    def __init__(self, sample: str, problem: str):
        self.sample = sample
        self.problem = problem
        super().__init__(f"{sample}: {problem}")


class MissingDependency(DuplexEvalError):
    """An optional backend whose package or model is absent."""

    def __init__(self, what: str, hint: str):
        super().__init__(f"{what} is not available: {hint}")
        self.hint = hint


class InputError(SampleError):
    """Bad input found while scoring. `where` is the sample id (subset/id) or a file; a scorer's
    command exits with code 2.

    `code` is a short, countable name of the problem (e.g. "word-end-before-start"); a sample
    excluded for it is ineligible with the reason "invalid:<code>".
    """

    def __init__(self, sample: str, problem: str, code: str | None = None):
        super().__init__(sample, problem)
        self.code = code

    @property
    def where(self) -> str:
        return self.sample
