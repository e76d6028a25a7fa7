"""The one error type of the aggregator: bad input, reported as one line with the sample id."""

from duplexeval_common.errors import SampleError


class InputError(SampleError):
    """Bad input. `where` is the sample id (subset/id) or a file; the CLI exits with code 2."""

    @property
    def where(self) -> str:
        return self.sample
