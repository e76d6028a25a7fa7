"""The three parts of dGSLM, run one 20 ms step at a time (torch and fairseq; the own environment only).

- `Tokenizer`: HuBERT features of one layer, nearest k-means centroid, as fairseq's
  HubertFeatureReader + ApplyKmeans (examples/textless_nlp/gslm/speech2unit/pretrained/
  hubert_feature_reader.py, examples/hubert/simple_kmeans/dump_km_label.py) compute them for a
  whole file, here for a left window of the audio heard so far: unit j covers samples
  [320 j, 320 j + 400) (the conv front end's stride and receptive field), so it is computed as
  soon as those samples have arrived, from at most `context` units of audio before it, and never
  changed afterwards. (Offline, HuBERT's transformer also sees the audio after a unit; a causal
  runner cannot, so units near the live edge can differ from wav2code's.)
- `DialogueLM`: the SpeechDLM decoder stepped with its incremental state, one position per step,
  both channels at once; per channel a token is either forced (teacher forcing) or chosen as
  fairseq's MultichannelSequenceGenerator chooses it for one hypothesis: logits / temperature,
  pad and eos excluded, the delayed-duration counter copying the previous unit while the
  predicted duration runs, else a sample (top-k / top-p when set).
- `Vocoder`: CodeHiFiGANVocoder over the last `context` + 1 model units with the model channel's
  speaker id; the newest unit's 320 samples are the step's output.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

UNIT = 320          # samples per unit at 16 kHz (50 Hz)
FIELD = 400         # the HuBERT front end's receptive field, in samples


class Tokenizer:
    def __init__(self, hubert, layer: int, normalize: bool, centroids, context: int, device: str):
        import torch
        self.torch = torch
        self.hubert = hubert
        self.layer = layer
        self.normalize = normalize
        c = centroids.float().to(device)                   # (K, D)
        self.C = c.t().contiguous()                         # (D, K), as ApplyKmeans keeps it
        self.Cnorm = (self.C ** 2).sum(0, keepdim=True)     # (1, K)
        self.context = context
        self.device = device
        self.reset()

    def reset(self) -> None:
        self.buf = np.zeros(0, np.float32)
        self.offset = 0      # absolute index of buf[0]
        self.total = 0       # samples heard
        self.done = 0        # units emitted

    def units_of(self, wav: np.ndarray) -> np.ndarray:
        """The units of a whole waveform (all of it in one window): for the silence unit."""
        return self._features_to_units(self._features(wav))

    def _features(self, wav: np.ndarray):
        torch = self.torch
        x = torch.from_numpy(np.ascontiguousarray(wav, dtype=np.float32)).to(self.device)
        if self.normalize:
            x = torch.nn.functional.layer_norm(x, x.shape)
        feats, _ = self.hubert.extract_features(source=x.view(1, -1), padding_mask=None, mask=False,
                                                output_layer=self.layer)
        return feats[0]

    def _features_to_units(self, feats) -> np.ndarray:
        dist = (feats.pow(2).sum(1, keepdim=True) - 2 * feats @ self.C + self.Cnorm)
        return dist.argmin(dim=1).cpu().numpy().astype(np.int64)

    def push(self, frame: np.ndarray) -> list[int]:
        """Add samples; return the units that became computable (at most one per 320 samples)."""
        self.buf = np.concatenate([self.buf, frame.astype(np.float32, copy=False)])
        self.total += len(frame)
        out = []
        while self.done * UNIT + FIELD <= self.total:
            j = self.done
            start = max(0, (j - self.context) * UNIT)
            end = j * UNIT + FIELD
            window = self.buf[start - self.offset:end - self.offset]
            with self.torch.no_grad():
                units = self._features_to_units(self._features(window))
            out.append(int(units[-1]))   # the window's last frame is unit j
            self.done += 1
        keep_from = max(0, (self.done - self.context) * UNIT)
        if keep_from > self.offset:
            self.buf = self.buf[keep_from - self.offset:]
            self.offset = keep_from
        return out


class DialogueLM:
    """One hypothesis of the SpeechDLM, stepped position by position."""

    def __init__(self, dlm, dicts: dict, channels: list[str], duration_prediction: bool, delayed: bool,
                 max_positions: int, device: str):
        import torch
        self.torch = torch
        self.dlm = dlm
        self.channels = list(channels)
        self.d = dicts[self.channels[0]]
        self.duration_prediction = duration_prediction
        self.delayed = delayed
        self.max_positions = max_positions
        self.device = device
        self.reset()

    def reset(self) -> None:
        self.inc: list[dict] = [{} for _ in self.channels]
        self.tokens = {c: [self.d.eos()] for c in self.channels}   # the generator's bos_token is eos
        self.dur_counter = [1 for _ in self.channels]
        self.jump: list[bool] | None = None

    def clone(self) -> "DialogueLM":
        other = copy.copy(self)
        other.inc = copy.deepcopy(self.inc)
        other.tokens = {c: list(v) for c, v in self.tokens.items()}
        other.dur_counter = list(self.dur_counter)
        other.jump = None if self.jump is None else list(self.jump)
        return other

    @property
    def position(self) -> int:
        return len(self.tokens[self.channels[0]])

    def step(self, forced: dict[str, int | None], sampler: "Sampler", pending: tuple = ()) -> dict[str, int | None]:
        """Feed the last position, get each channel's next token: forced[c] when given, else chosen;
        a channel in `pending` is left None, to be filled before the next step (the user's unit for
        that position is heard one step later)."""
        torch = self.torch
        if any(self.tokens[c][-1] is None for c in self.channels):
            raise ValueError("a channel's token of the last position was never filled")
        prev = {c: torch.tensor([self.tokens[c]], dtype=torch.long, device=self.device) for c in self.channels}
        with torch.no_grad():
            out, _ = self.dlm.decoder(prev, incremental_state=self.inc)
        step = self.position - 1
        logits, preds = [], []
        for c in self.channels:
            o = out[c][c]
            logits.append((o["pred_token"] if isinstance(o, dict) else o)[0, -1].float())
            preds.append(float(o["pred_duration"][0, -1, 0]) if isinstance(o, dict) else 1.0)
        copy_prev = [False] * len(self.channels)
        if self.duration_prediction:
            copy_prev = self._durations(preds, step, sampler.duration_temperature)
        chosen: dict[str, int | None] = {}
        for i, c in enumerate(self.channels):
            if c in pending:
                chosen[c] = None
            elif forced.get(c) is not None:
                chosen[c] = int(forced[c])   # a prefix token: never copied (the generator's can_copy_mask)
            elif copy_prev[i]:
                chosen[c] = self.tokens[c][-1]
            else:
                chosen[c] = sampler.choose(logits[i], self.d)
        for c in self.channels:
            self.tokens[c].append(chosen[c])
        return chosen

    def _durations(self, preds: list[float], step: int, temperature: float) -> list[bool]:
        """MultichannelSequenceGenerator._generate's duration bookkeeping, for one hypothesis."""
        n = len(self.channels)
        dur = [max(int(round(p / temperature)), 1) for p in preds]
        if step > 0:
            non_edge = [self.tokens[c][step] == self.tokens[c][step - 1] for c in self.channels]
            if self.delayed:
                dur = [1 if non_edge[i] else dur[i] for i in range(n)]
            elif self.jump is not None:
                self.dur_counter = [2 if (self.jump[i] and non_edge[i]) else self.dur_counter[i] for i in range(n)]
            if self.delayed:
                self.dur_counter = [max(self.dur_counter[i] - int(self.dur_counter[i] == 1 or non_edge[i]), 0)
                                    for i in range(n)]
            else:
                self.dur_counter = [max(self.dur_counter[i] - int(non_edge[i]), 1) for i in range(n)]
        if self.delayed:
            self.jump = [v == 0 for v in self.dur_counter]
            self.dur_counter = [dur[i] if self.jump[i] else self.dur_counter[i] for i in range(n)]
        copy_prev = [v != 1 for v in self.dur_counter]
        if not self.delayed:
            self.jump = [v == 1 for v in self.dur_counter]
            self.dur_counter = [dur[i] if self.jump[i] else self.dur_counter[i] for i in range(n)]
        return copy_prev


class Sampler:
    """Chooses one unit from a channel's logits (seeded: the same seed gives the same units)."""

    def __init__(self, temperature: float, top_k: int, top_p: float, duration_temperature: float,
                 seed: int | None, device: str):
        import torch
        self.torch = torch
        self.temperature = temperature
        self.top_k = top_k
        self.top_p = top_p
        self.duration_temperature = duration_temperature
        self.device = device
        self.gen = torch.Generator(device=device)
        self.seed(seed)

    def seed(self, seed: int | None) -> None:
        if seed is None:
            self.gen.seed()
        else:
            self.gen.manual_seed(int(seed))

    def choose(self, logits, d) -> int:
        torch = self.torch
        lp = torch.log_softmax(logits / self.temperature, dim=-1)
        # never a special symbol: the generator excludes pad and eos (before max_len); bos and unk
        # are excluded too, so every step yields a unit the vocoder can speak
        lp[: d.nspecial] = -float("inf")
        probs = lp.exp()
        if self.top_k > 0:
            k = min(self.top_k, probs.numel())
            top, idx = probs.topk(k)
            probs = torch.zeros_like(probs).scatter_(0, idx, top)
        if self.top_p < 1.0:
            sp, idx = probs.sort(descending=True)
            cum = sp.cumsum(0) / sp.sum()
            drop = cum - sp / sp.sum() >= self.top_p   # keep the smallest set reaching top_p
            sp[drop] = 0
            probs = torch.zeros_like(probs).scatter_(0, idx, sp)
        return int(torch.multinomial(probs / probs.sum(), 1, generator=self.gen)[0])


class Vocoder:
    def __init__(self, vocoder, speaker: int, context: int, device: str):
        import torch
        self.torch = torch
        self.vocoder = vocoder
        self.speaker = speaker
        self.context = context
        self.device = device
        self.multispkr = bool(getattr(vocoder.model, "multispkr", False))
        self.reset()

    def reset(self) -> None:
        self.codes: list[int] = []

    def push(self, code: int) -> np.ndarray:
        """The 320 samples of the newest unit, vocoded with up to `context` units before it."""
        torch = self.torch
        self.codes.append(int(code))
        window = self.codes[-(self.context + 1):]
        x: dict[str, Any] = {"code": torch.tensor(window, dtype=torch.long, device=self.device).view(1, -1)}
        if self.multispkr:
            x["spkr"] = torch.tensor([[self.speaker]], dtype=torch.long, device=self.device)
        with torch.no_grad():
            wav = self.vocoder(x, False).float().reshape(-1)
        if wav.numel() != UNIT * len(window):
            raise ValueError(f"the vocoder gave {wav.numel()} samples for {len(window)} units "
                             f"(expected {UNIT} per unit)")
        if len(self.codes) > 4 * (self.context + 1):
            self.codes = self.codes[-(self.context + 1):]
        return wav[-UNIT:].cpu().numpy().astype(np.float32)
