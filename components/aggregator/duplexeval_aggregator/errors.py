"""The one error type of the aggregator: bad input, reported as one line with the sample id."""

from duplexeval_common.errors import SampleError


class InputError(SampleError):
    """Bad input. `where` is the sample id (subset/id) or a file; the CLI exits with code 2.

    `code` is a short, countable name of the problem (e.g. "word-end-before-start"); a sample
    excluded for it is ineligible with the reason "invalid:<code>" (see tree.invalid_reason).
    """

    def __init__(self, sample: str, problem: str, code: str | None = None):
        super().__init__(sample, problem)
        self.code = code

    @property
    def where(self) -> str:
        return self.sample
