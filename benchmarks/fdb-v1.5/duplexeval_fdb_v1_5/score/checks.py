"""Input checks of a v1.5 sample: the overlap window and the clean twins.

Each problem is one InputError naming the sample (`subset/id`), with a short code (counted as
`invalid:<code>` where a stage excludes invalid samples).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from duplexeval_common.errors import InputError

# files of a sample and their clean twins (the run without the overlap event)
TWINS = {"input.wav": "clean_input.wav", "output.wav": "clean_output.wav",
         "output.json": "clean_output.json", "input.json": "clean_input.json"}


@dataclass(frozen=True)
class AudioInfo:
    """What the checks need of a WAV file: its frame count, rate and channel count."""
    frames: int
    rate: int
    channels: int = 1

    @property
    def seconds(self) -> float:
        return self.frames / self.rate


def audio_info(path) -> AudioInfo:
    """soundfile's header of a file (not its samples)."""
    import soundfile as sf
    i = sf.info(str(path))
    return AudioInfo(int(i.frames), int(i.samplerate), int(i.channels))


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def overlap_window(sample: str, metadata: dict, duration_s: float) -> tuple[float, float]:
    """metadata.json's `timestamps` [start, end] of the overlap event in input.wav, checked:
    two finite numbers, start <= end, both inside [0, duration_s]."""
    if not isinstance(metadata, dict) or "timestamps" not in metadata:
        raise InputError(sample, "metadata.json has no timestamps [start, end] of the overlap", "bad-metadata")
    ts = metadata["timestamps"]
    if not isinstance(ts, (list, tuple)) or len(ts) != 2 or not all(_number(t) for t in ts):
        raise InputError(sample, f"metadata.json timestamps must be [start, end] in seconds, got {str(ts)[:60]}",
                         "bad-metadata")
    start, end = float(ts[0]), float(ts[1])
    if end < start:
        raise InputError(sample, f"metadata.json overlap window is reversed: start {start} s after end {end} s",
                         "window-reversed")
    if start < 0 or end > duration_s:
        raise InputError(sample, f"metadata.json overlap window [{start}, {end}] s lies outside the audio "
                                 f"[0, {duration_s:g}] s", "window-outside-audio")
    return start, end


def check_twin(sample: str, name: str, info: AudioInfo, clean: AudioInfo | None,
               clean_name: str | None = None) -> None:
    """The clean twin of a WAV file exists and has the same rate, channel count and length."""
    clean_name = clean_name or TWINS.get(name, f"clean_{name}")
    if clean is None:
        raise InputError(sample, f"{clean_name} is missing (the clean run of {name})", "missing-clean")
    if clean.rate != info.rate:
        raise InputError(sample, f"{clean_name} has rate {clean.rate} Hz, {name} {info.rate} Hz", "twin-rate")
    if clean.channels != info.channels:
        raise InputError(sample, f"{clean_name} has {clean.channels} channels, {name} {info.channels}",
                         "twin-channels")
    if clean.frames != info.frames:
        raise InputError(sample, f"{clean_name} has {clean.frames} frames ({clean.seconds:.3f} s), {name} "
                                 f"{info.frames} ({info.seconds:.3f} s)", "twin-length")


def require(sample: str, name: str, present: bool, why: str = "") -> None:
    """A file the rule needs is there (`why`: what needs it, for the message)."""
    if not present:
        code = "missing-clean" if name.startswith("clean_") else "missing-file"
        raise InputError(sample, f"{name} is missing" + (f" ({why})" if why else ""), code)
