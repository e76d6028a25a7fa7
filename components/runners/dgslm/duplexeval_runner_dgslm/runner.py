"""`dgslm`: the dialogue GSLM (Nguyen et al., 2023) in process, lockstep on 20 ms frames at 16 kHz.

Three parts, each the fairseq class the public checkpoints load into (fairseq-fixed 0.12.3.1; see
model.py): the Fisher HuBERT + k-means tokenizer (500 units at 50 Hz, layer 12), the SpeechDLM
dual-tower transformer with cross-attention over two unit channels (unitA, unitB), and the unit
HiFi-GAN vocoder (CodeHiFiGANVocoder, speaker ids [0, 4] for the two channels, as dgslm_utils'
codes2wav). Channel A is the user, channel B the model: the model's units are vocoded with
speaker `model_speaker` (4) and are the output.

Each step k (input frame k, samples [320 k, 320 k + 320)):
1. the tokenizer hears frame k and emits user unit k-1 (it covers samples [320 (k-1), 320 (k-1) + 400),
   which have all arrived);
2. position k of the SpeechDLM is completed: channel A gets that unit (or the silence unit, per
   the mode below), channel B keeps the unit chosen at step k-1; the decoder runs one incremental
   step and channel B's unit for position k+1 (model unit k) is chosen (sampled, copied by the
   duration counter, or forced to silence, per the mode);
3. model unit k is vocoded (with `vocoder_context` units before it) into output frame k, placed at
   input frame k. So output frame k depends on input frames <= k only; model unit k is
   M_k = f(U_<k, M_<k), Algorithm 1 of Full-Duplex-Bench v1.0's Appendix A.

The mode (setting `mode`; `auto` takes it from the sample's task, which its dataset's manifest
declares, else from the subset name's suffix as Full-Duplex-Bench v1.0 names them), after
Full-Duplex-Bench v1.0 Appendix A and Figure 4:
- `teacher_force` (pause_handling, backchannel): channel A is always the user's real units; channel
  B is always sampled.
- `turn_taking` (smooth_turn_taking): phase `prefix`: the user's units on A and the silence unit
  forced on B (the user input and its time-synchronous silence as the prefix); once the user has
  spoken and then been quiet for `endpoint_ms`, phase `respond`: the silence unit forced on A (the
  paper's silent user prompt) and B sampled. The paper knows where its prefix ends; a causal runner
  finds it `endpoint_ms` late. User speech again for `onset_ms` (a pause inside the turn) returns to
  `prefix`.
- `interruption` (user_interruption): sampling twice, as the paper's two dGSLM passes. Pass 1:
  `context` (the user's units on A, silence on B) until its end is found, then `respond` (silence
  on A, B sampled: the model's answer to the context). When the user speaks again (`onset_ms`),
  phase `interruption`: pass 1 goes on unchanged (A silent, B sampled; its units are the output, as
  the paper's second prompt keeps the first pass's model stream while the user interrupts), and
  pass 2 starts as a copy of pass 1's state (the dialogue so far) that hears the real user units
  on A and is forced pass 1's model units on B. When the interruption ends (`endpoint_ms`), phase
  `respond_2`: pass 1 stops, and pass 2 samples B with the silence unit on A; its units are the
  output from then on (the paper's response to the interruption).
Speech is a frame whose RMS is above `speech_db` dBFS. The phases and their times are `server_event`
events with `event: "phase"` (the model's own state; the event log has no type of its own for it), and
runner.json's stats give the mode, where it came from and the phases.

The sampling is the paper's code's (examples/textless_nlp/dgslm/sample_speech_dlm.py: sampling,
temperature 1.0, duration temperature 1.0, no top-k, no top-p; profiles/dgslm.json), for one
hypothesis: that script samples 5 hypotheses (`--beam-size 5`) and keeps the best-scored when all
have ended, which needs the whole sequence; a lockstep runner commits to each unit as it goes. A
torch.Generator seeded from the run's seed at every sample chooses the units, so a sample's output
depends only on its input, settings and seed.

Weights: `model_dir` (runner_arg, else $MODEL_DIR) holds the public dGSLM checkpoints under their
published names (README): hubert_fisher.pt, hubert_fisher_km_500.bin, speech_dlm_base.pt,
dict.unitA.txt, dict.unitB.txt, hifigan_vocoder and config.json (the vocoder's). `tiny:<seed>`
builds the random-weight model of tiny.py instead (tests and benchmarks: noise, not dGSLM).
"""

from __future__ import annotations

import math
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval_common.errors import DuplexEvalError

from duplexeval_runner import deps
from duplexeval_runner.protocol import Session, StepRunner
from duplexeval_runner.settings import Setting, Spec, from_env, tiny_seed

from . import tiny

NAME = "dgslm"
PACKAGE = "duplexeval_runner_dgslm"
SR = 16000
FRAME = 320  # 20 ms: one HuBERT unit
MODEL_DIR_ENV = "MODEL_DIR"
BASE = "https://dl.fbaipublicfiles.com/textless_nlp/dgslm/checkpoints"
# (setting, default file name, what it is, where it is published)
FILES = (
    ("hubert_file", "hubert_fisher.pt", "the Fisher HuBERT checkpoint", f"{BASE}/hubert/hubert_fisher.pt"),
    ("kmeans_file", "hubert_fisher_km_500.bin", "its k-means model", f"{BASE}/hubert/hubert_fisher_km_500.bin"),
    ("dlm_file", "speech_dlm_base.pt", "the SpeechDLM checkpoint", f"{BASE}/speech_dlm/speech_dlm_base.pt"),
    ("vocoder_file", "hifigan_vocoder", "the unit HiFi-GAN vocoder checkpoint", f"{BASE}/hifigan/hifigan_vocoder"),
    ("vocoder_config", "config.json", "the vocoder's config", f"{BASE}/hifigan/config.json"),
)
CHANNELS = ("unitA", "unitB")  # the checkpoint's channels: A the user, B the model
DICTS = tuple((f"dict.{c}.txt", f"the SpeechDLM dictionary of channel {c}", f"{BASE}/speech_dlm/dict.{c}.txt")
              for c in CHANNELS)
HOW_TO_GET = "see components/runners/dgslm/README.md (the public dGSLM checkpoints, one folder)"
MODES = ("auto", "teacher_force", "turn_taking", "interruption")
# Full-Duplex-Bench v1.0's tasks (benchmarks/fdb-v1 tasks.py) -> the paper's dGSLM variant
TASK_MODES = {"pause_handling": "teacher_force", "backchannel": "teacher_force",
              "smooth_turn_taking": "turn_taking", "user_interruption": "interruption"}
SUBSET_SUFFIXES = (("pause_handling", "pause_handling"), ("turn_taking", "smooth_turn_taking"),
                   ("backchannel", "backchannel"), ("user_interruption", "user_interruption"))

SETTINGS = Spec(
    Setting("model_dir", str, None, "a folder with the public dGSLM checkpoints (the file names below), or "
            "`tiny:<seed>` (the random-weight test model)", env=MODEL_DIR_ENV, path="any"),
    *[Setting(name, str, default, f"{what}, in model_dir", nonempty=True) for name, default, what, _ in FILES],
    Setting("hubert_layer", int, 12, "the HuBERT layer the k-means was trained on (the tiny model has 1)",
            ge=1, le=48),
    Setting("mode", str, "auto", "auto: from the sample's task (pause_handling and backchannel: teacher_force; "
            "smooth_turn_taking: turn_taking; user_interruption: interruption; any other: teacher_force)",
            choices=MODES),
    Setting("temperature", float, 1.0, "temperature of the model channel's units", gt=0, le=100),
    Setting("duration_temperature", float, 1.0, "the predicted durations are divided by it", gt=0, le=100),
    Setting("top_k", int, 0, "sample among the k likeliest units (0: all)", ge=0, le=100000),
    Setting("top_p", float, 1.0, "sample among the smallest set of units with this probability (1: all)",
            gt=0, le=1),
    Setting("user_speaker", int, 0, "the vocoder speaker id of channel A (the user; recorded, not vocoded)",
            ge=0, le=10000),
    Setting("model_speaker", int, 4, "the vocoder speaker id of channel B (the model's voice)", ge=0, le=10000),
    Setting("hubert_context", int, 100, "units of audio before a unit that HuBERT sees when computing it "
            "(100: 2 s)", ge=1, le=3000),
    Setting("vocoder_context", int, 25, "model units before the newest that the vocoder sees (25: 0.5 s)",
            ge=0, le=1000),
    Setting("speech_db", float, -40.0, "a frame louder than this RMS, in dBFS, is user speech (phases)",
            ge=-120, le=0),
    Setting("endpoint_ms", float, 200.0, "this much quiet after user speech ends the user's turn", ge=20, le=10000),
    Setting("onset_ms", float, 60.0, "this much speech after the turn ended is the user speaking again",
            ge=20, le=10000),
    Setting("unsafe_pickles", bool, True, "load the fairseq checkpoints with torch.load(weights_only=False), as "
            "fairseq 0.12 did before torch 2.6 (its checkpoints may hold pickled objects); false: weights only"),
    Setting("device", str, None, "where the model runs (null: cuda when available)", choices=("cpu", "cuda")),
    Setting("threads", int, None, "torch.set_num_threads on cpu (null: torch's default)", ge=1, le=1024),
    package=PACKAGE, profile="dgslm",
)


def _fail(msg: str) -> DuplexEvalError:
    return DuplexEvalError(f"runner {NAME!r}: {msg}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def mode_for(setting: str, task: str | None, subset: str) -> tuple[str, str]:
    """(mode, where it came from) for a sample."""
    if setting != "auto":
        return setting, "setting mode"
    if task is None:
        for suffix, t in SUBSET_SUFFIXES:
            if subset.endswith(suffix):
                return TASK_MODES[t], f"subset name {subset!r} (task {t})"
        return "teacher_force", f"default (subset {subset!r} has no task)"
    if task in TASK_MODES:
        return TASK_MODES[task], f"task {task}"
    return "teacher_force", f"default (task {task!r} has no paper variant)"


class Phases:
    """The mode's phase for each step, from the frames heard so far (their RMS level)."""

    def __init__(self, mode: str, speech_db: float, endpoint_frames: int, onset_frames: int):
        self.mode = mode
        self.speech_db = speech_db
        self.endpoint = endpoint_frames
        self.onset = onset_frames
        self.phase = {"teacher_force": "teacher_force", "turn_taking": "prefix", "interruption": "context"}[mode]
        self.heard_speech = False
        self.quiet = 0
        self.loud = 0

    def update(self, frame: np.ndarray) -> str | None:
        """Hear frame k; return the new phase when it changes at this frame."""
        rms = float(np.sqrt(np.mean(np.square(frame, dtype=np.float64)))) if len(frame) else 0.0
        speech = 20 * math.log10(rms + 1e-12) > self.speech_db
        self.loud = self.loud + 1 if speech else 0
        self.quiet = 0 if speech else self.quiet + 1
        self.heard_speech = self.heard_speech or speech
        old = self.phase
        if self.mode == "turn_taking":
            if old == "prefix" and self.heard_speech and self.quiet >= self.endpoint:
                self.phase = "respond"
            elif old == "respond" and self.loud >= self.onset:
                self.phase = "prefix"
        elif self.mode == "interruption":
            if old == "context" and self.heard_speech and self.quiet >= self.endpoint:
                self.phase = "respond"
            elif old == "respond" and self.loud >= self.onset:
                self.phase = "interruption"
            elif old == "interruption" and self.quiet >= self.endpoint:
                self.phase = "respond_2"
        return self.phase if self.phase != old else None


@contextmanager
def _torch_load(unsafe: bool):
    """fairseq 0.12 calls torch.load without weights_only; torch >= 2.6 then loads weights only."""
    key = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"
    old = os.environ.get(key)
    if unsafe:
        os.environ[key] = "1"
    try:
        yield
    finally:
        if unsafe:
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


class DGSLMRunner(StepRunner):
    name = NAME
    history = "replayed"
    clock = "lockstep"
    in_sr = SR
    out_sr = SR
    frame_ms = 20.0
    deterministic = True  # updated in setup(): seeded and on cpu
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **args: Any):
        a, prof = self.SETTINGS.resolve(NAME, args)
        self.profile = prof.record()
        self.seed = seed
        self.args = a
        spec = from_env(a["model_dir"], MODEL_DIR_ENV)
        if spec is None:
            raise _fail(f"no weights: set runner_args model_dir or ${MODEL_DIR_ENV} to a folder with the dGSLM "
                        f"checkpoints ({HOW_TO_GET}), or to tiny:<seed> for the random-weight test model")
        try:
            self.tiny_seed = tiny_seed(spec)
        except ValueError as exc:
            raise _fail(str(exc)) from None
        self.files: dict[str, Path] = {}
        if self.tiny_seed is None:
            folder = Path(spec).expanduser()
            if not folder.is_dir():
                raise _fail(f"model_dir {spec} is not a folder ({HOW_TO_GET})")
            folder = folder.resolve()
            wanted = [(name, a[name], what, url) for name, _, what, url in FILES] + \
                     [(n, n, what, url) for n, what, url in DICTS]
            for key, fname, what, url in wanted:
                p = folder / fname
                if not p.is_file():
                    raise _fail(f"model_dir {folder} has no {fname} ({what}; {url})")
                self.files[key] = p
            self.model_dir = str(folder)
        else:
            self.model_dir = spec
        self.device: str | None = a["device"]
        self._loaded = False

    # -- setup: once -------------------------------------------------------------------------
    def setup(self) -> None:
        if self._loaded:
            return
        what = f"runner {NAME!r}"
        torch = deps.import_module(what, "torch")
        deps.import_module(what, "fairseq")
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if device == "cuda" and not torch.cuda.is_available():
            raise _fail("device cuda was asked for, but torch sees no CUDA device (set device cpu)")
        if device == "cpu" and self.args["threads"]:
            torch.set_num_threads(self.args["threads"])
        self.device = device
        self.torch = torch
        import logging
        logging.getLogger("fairseq").setLevel(logging.WARNING)
        if self.tiny_seed is not None:
            m = tiny.build(self.tiny_seed, device=device)
            layer = m["hubert_layer"]
        else:
            m = self._load(device)
            layer = self.args["hubert_layer"]
        self._check(m)
        from . import model
        self.model = model
        self.parts = m
        a = self.args
        self.tokenizer = model.Tokenizer(m["hubert"], layer, m["normalize"], m["centroids"], a["hubert_context"],
                                         device)
        self.dicts = m["dicts"]
        self.d = m["dicts"][CHANNELS[0]]
        self.lm = model.DialogueLM(m["dlm"], m["dicts"], m["channels"], m["duration_prediction"],
                                   m["delayed_duration"], m["max_positions"], device)
        self.sampler = model.Sampler(a["temperature"], a["top_k"], a["top_p"], a["duration_temperature"],
                                     self.seed, device)
        self.vocoder = model.Vocoder(m["vocoder"], a["model_speaker"], a["vocoder_context"], device)
        with torch.no_grad():
            units = self.tokenizer.units_of(np.zeros(SR, np.float32))
        self.silence_unit = int(units[-1])
        self.silence = self.d.index(str(self.silence_unit))
        self.deterministic = self.seed is not None and device == "cpu"
        self._loaded = True

    def _load(self, device: str) -> dict:
        torch = self.torch
        f = self.files
        unsafe = self.args["unsafe_pickles"]

        def bad(key: str, exc: BaseException) -> DuplexEvalError:
            return _fail(f"loading {f[key]} failed ({_first_line(exc)}); is it {dict((n, w) for n, _, w, _ in FILES)[key]}? "
                         f"({HOW_TO_GET})")
        from fairseq import checkpoint_utils
        from fairseq.models.hubert.hubert import HubertModel
        from fairseq.models.speech_dlm import SpeechDLM
        from fairseq.models.text_to_speech.vocoder import CodeHiFiGANVocoder
        import joblib
        import json
        with _torch_load(unsafe):
            try:
                models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(f["hubert_file"])])
                hubert = models[0].eval().to(device)
                if not isinstance(hubert, HubertModel):
                    raise TypeError(f"it holds a {type(hubert).__name__}, not a HubertModel")
                if int(task.cfg.sample_rate) != SR:
                    raise ValueError(f"it runs at {task.cfg.sample_rate} Hz, not {SR}")
                normalize = bool(task.cfg.normalize)
            except Exception as exc:
                raise bad("hubert_file", exc) from None
            try:
                km = joblib.load(str(f["kmeans_file"]))
                centroids = torch.from_numpy(np.asarray(km.cluster_centers_, dtype=np.float32))
            except Exception as exc:
                raise bad("kmeans_file", exc) from None
            try:
                hub = SpeechDLM.from_pretrained(model_name_or_path=str(f["dlm_file"].parent),
                                                checkpoint_file=f["dlm_file"].name,
                                                data_name_or_path=str(f["dlm_file"].parent))
                dlm = hub.models[0].eval().to(device)
                if not isinstance(dlm, SpeechDLM):
                    raise TypeError(f"it holds a {type(dlm).__name__}, not a SpeechDLM")
                channels = list(hub.channels)
                if tuple(channels) != CHANNELS:
                    raise ValueError(f"its channels are {channels}, not {list(CHANNELS)}")
                dargs = dlm.decoder.args
                dicts = dict(hub.src_dicts)
            except Exception as exc:
                raise bad("dlm_file", exc) from None
            try:
                with open(f["vocoder_config"]) as fh:
                    vcfg = json.load(fh)
            except Exception as exc:
                raise bad("vocoder_config", exc) from None
            try:
                vocoder = CodeHiFiGANVocoder(str(f["vocoder_file"]), vcfg).eval().to(device)
            except Exception as exc:
                raise bad("vocoder_file", exc) from None
        return {"hubert": hubert, "normalize": normalize, "centroids": centroids.to(device), "dlm": dlm,
                "dicts": dicts, "channels": channels,
                "duration_prediction": str(getattr(dargs, "duration_prediction", "false")).lower() == "true",
                "delayed_duration": str(getattr(dargs, "delayed_duration_target", "false")).lower() == "true",
                "vocoder": vocoder, "vocoder_cfg": vcfg, "max_positions": int(dlm.decoder.max_positions())}

    def _check(self, m: dict) -> None:
        """The three parts agree: every k-means unit is in the dictionary and has a vocoder code."""
        k = int(m["centroids"].shape[0])
        d = m["dicts"][m["channels"][0]]
        missing = [u for u in range(k) if d.index(str(u)) == d.unk()]
        if missing:
            raise _fail(f"the SpeechDLM dictionary lacks unit {missing[0]} of the {k}-unit k-means model "
                        f"(dict.{m['channels'][0]}.txt and the k-means file are not a pair)")
        n_codes = int(m["vocoder_cfg"].get("num_embeddings", 0))
        if n_codes < k:
            raise _fail(f"the vocoder knows {n_codes} units, the k-means model makes {k}")
        n_spk = int(m["vocoder_cfg"].get("num_speakers", 200)) if m["vocoder_cfg"].get("multispkr") else None
        if n_spk is not None and self.args["model_speaker"] >= n_spk:
            raise _fail(f"model_speaker {self.args['model_speaker']} is not one of the vocoder's {n_spk} speakers")

    # -- per sample --------------------------------------------------------------------------
    def open(self, session: Session) -> None:
        self.setup()
        info = session.info
        n_frames = -(-info.n_samples // FRAME)
        limit = self.lm.max_positions - 1
        if n_frames + 1 > limit:
            raise _fail(f"{info.key}: {info.duration_s:.1f} s is {n_frames} units, more than the {limit - 1} units "
                        f"({(limit - 1) * FRAME / SR:.1f} s) the SpeechDLM's {self.lm.max_positions} positions "
                        f"leave beside its start unit and the one predicted")
        mode, source = mode_for(self.args["mode"], info.task, info.subset)
        frames = lambda ms: max(1, int(round(ms / 20.0)))  # noqa: E731
        self.phases = Phases(mode, self.args["speech_db"], frames(self.args["endpoint_ms"]),
                             frames(self.args["onset_ms"]))
        self.tokenizer.reset()
        self.lm.reset()
        self.lm2 = None               # pass 2 of the interruption mode
        self.vocoder.reset()
        self.sampler.seed(self.seed)
        self.pending = self.d.eos()   # channel B's token for the position being completed
        self._k = 0
        self.units = {"user_fed": [], "model": [], "pass_2_user_fed": []}
        session.stats.update({"mode": mode, "mode_from": source, "task": info.task,
                              "phases": [{"phase": self.phases.phase, "t": 0.0, "frame": 0}],
                              "silence_unit": self.silence_unit})
        session.event("server_event", 0.0, event="phase", phase=self.phases.phase, frame=0, mode=mode, mode_from=source)

    def step(self, frame: np.ndarray, session: Session) -> np.ndarray:
        if frame.shape != (FRAME,):
            raise _fail(f"step {self._k}: got a frame of {frame.shape} samples, expected ({FRAME},)")
        k = self._k
        self._k += 1
        changed = self.phases.update(frame)
        phase = self.phases.phase
        if changed:
            t = k * FRAME / SR
            session.stats["phases"].append({"phase": phase, "t": round(t, 6), "frame": k})
            session.event("server_event", t, event="phase", phase=phase, frame=k)
            if phase == "interruption" and self.lm2 is None:
                self.lm2 = self.lm.clone()   # pass 2 starts from the dialogue so far
        units = self.tokenizer.push(frame)
        A, B = CHANNELS
        real = self.d.index(str(units[-1])) if units else self.d.eos()
        user_real = phase in ("teacher_force", "prefix", "context")
        fed = real if (k == 0 or user_real) else self.silence
        if k == 0:
            fed = self.d.eos()   # position 0 is the bos marker (the generator's eos)
        lm = self.lm
        # complete position k, choose model unit k (position k+1)
        self._fill(lm, {A: fed, B: self.pending})
        if phase in ("prefix", "context"):
            out = lm.step({A: None, B: self.silence}, self.sampler, pending=(A,))[B]
        elif phase == "respond_2":
            self._fill(self.lm2, {A: self.silence, B: self.pending})
            out = self.lm2.step({A: None, B: None}, self.sampler, pending=(A,))[B]
        else:
            out = lm.step({A: None, B: None}, self.sampler, pending=(A,))[B]
            if phase == "interruption":
                self._fill(self.lm2, {A: real, B: self.pending})
                self.lm2.step({A: None, B: out}, self.sampler, pending=(A,))
        self.pending = out
        heard = self.silence if phase == "respond_2" else fed
        self.units["user_fed"].append(int(self.d[heard]) if heard >= self.d.nspecial else -1)
        if self.lm2 is not None and phase == "interruption":
            self.units["pass_2_user_fed"].append(int(self.d[real]) if real >= self.d.nspecial else -1)
        code = int(self.d[out])
        self.units["model"].append(code)
        return self.vocoder.push(code)

    @staticmethod
    def _fill(lm, tokens: dict) -> None:
        for c, tok in tokens.items():
            if lm.tokens[c][-1] is None:
                lm.tokens[c][-1] = tok

    def close(self, session: Session) -> None:
        session.stats["steps"] = self._k
        session.stats["units"] = {k: _rle(v) for k, v in self.units.items()}

    # -- records -----------------------------------------------------------------------------
    def settings(self) -> dict:
        s = dict(self.args)
        s.update({"model_dir": self.model_dir, "device": self.device, "frame_samples": FRAME,
                  "channels": {"user": CHANNELS[0], "model": CHANNELS[1]},
                  "hypotheses": "1 (the paper's script samples 5 and keeps the best-scored at the end; lockstep "
                                "commits to each unit)",
                  "fairseq": deps.version("fairseq-fixed") or deps.version("fairseq"),
                  "torch": deps.version("torch")})
        return s

    def models(self) -> dict:
        if self.tiny_seed is not None:
            return {"dgslm": {"package": "fairseq-fixed", "version": deps.version("fairseq-fixed"),
                              **tiny.record(self.tiny_seed)}}
        return {"dgslm": deps.model_record("fairseq-fixed", list(self.files.values()), model_dir=self.model_dir,
                                           layout="dGSLM (fairseq examples/textless_nlp/dgslm)")}


def _rle(xs: list[int]) -> list[list[int]]:
    """[[unit, count], ...]: the units of a stream, run-length encoded (-1: the bos marker)."""
    out: list[list[int]] = []
    for x in xs:
        if out and out[-1][0] == x:
            out[-1][1] += 1
        else:
            out.append([x, 1])
    return out
