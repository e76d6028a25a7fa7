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
