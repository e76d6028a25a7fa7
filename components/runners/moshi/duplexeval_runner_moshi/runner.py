"""`moshi`: Moshi in process (moshi 0.2.13: Mimi + LMGen), lockstep on 80 ms frames at 24 kHz.

The loop is Moshi's own offline inference (kyutai-labs/moshi @ e6a55d2, moshi/moshi/run_inference.py,
InferenceState.run) with batch size 1, one frame per core step:

- setup(): load Mimi, the LM and the text tokenizer once; `streaming_forever(1)` on Mimi and on
  LMGen (as InferenceState/ServerState do); run `warmup_frames` frames of silence (not part of
  any sample; server.py's ServerState.warmup runs 4).
- open(): `mimi.reset_streaming()`, `lm_gen.reset_streaming()` (what server.py does for each new
  connection) and `torch.manual_seed(seed)`, so one seed gives the same bytes for a sample
  whatever ran before it.
- step(frame k): exactly 1920 samples (the core zero-pads the last frame) -> `mimi.encode` ->
  `lm_gen.step`; tokens [1, 9, 1] -> `mimi.decode(tokens[:, 1:])` -> 1920 samples returned as
  output frame k (the core places it at the start of input frame k: Moshi's offline layout);
  the text token (not 0 or 3, padding) becomes a `text` event: the tokenizer's piece with "▁"
  as a space, or the bare id for the tiny model, which has no tokenizer. A step whose LMGen.step
  returns None gives a frame of zeros, so output frame k always stays at input frame k.

The first frame (runner_arg `first_frame`; the profiles set it):
- "repeat" (profile `moshi`, the default): run_inference.py's handling. Its first LMGen.step
  returns None (the acoustic delay of 1), and to make the transformer see the first slice of
  codes rather than its initial tokens, it steps the first frame's codes twice; the second step
  yields output frame 0. Every step then returns audio.
- "skip" (profile `moshi-server`): server.py's handling, the alignment Full-Duplex-Bench's Moshi
  client gets from `python -m moshi.server`: the first frame is encoded, then Mimi's streaming
  state is reset (that first frame's codes carry the encoder's left padding) and its LMGen.step
  returns None, so output frame 0 is zeros (FDB's SKIP_FRAMES = 1) and frame k >= 1 is the
  step's audio.

Weights: `model_dir` (runner_arg, else $MODEL_DIR) is a local snapshot of
kyutai/moshiko-pytorch-bf16 (`huggingface-cli download kyutai/moshiko-pytorch-bf16 --local-dir DIR`).
Its files are found as loaders.CheckpointInfo.from_hf_repo finds them in the hub repository, with
no hub access: `config.json` when present (moshi_name, mimi_name, tokenizer_name, mimi_config_name,
lora_name, model_type, lm_gen_config), else the legacy names of a Moshi 7B repository
(model.safetensors, tokenizer-e351c8d8-checkpoint125.safetensors, tokenizer_spm_32k_3.model).
A config's `lm_gen_config` overrides the profile's sampling values, and runner_args override both.
`model_dir: "tiny:<seed>"` builds instead the tiny random-weight Mimi + LM of tiny.py (tests and
benchmarks: noise, not Moshi; `<seed>` seeds the weights, the runner seed the sampling).

`device` cpu | cuda (None: cuda when available); `dtype` None: bfloat16 on cuda (run_inference.py's
default), float32 on cpu. On CPU, NO_TORCH_COMPILE=1 and NO_CUDA_GRAPH=1 are set before moshi is
imported (moshi reads NO_TORCH_COMPILE at import) and the calls run under moshi's no_compile().
`deterministic` is True on CPU with a seed: the output then depends only on input, settings, seed.

Multi-round samples (duplexeval_runner/rounds.py): `history` "replayed": Moshi hears the user channel
from the dialogue's start and speaks for itself; what it says before the round's start_s is replaced
by the GT history (history.wav). True teacher forcing is not straightforward with moshi 0.2.13's API:
`LMGen.step(input_tokens, depformer_replace_tokens)` can replace the 8 audio tokens Moshi generates
for itself, but (1) the text (inner-monologue) token is always sampled, and the GT carries no
token-aligned text to force it with, so the model's text stream would contradict the audio it is
made to have said; (2) the replaced tokens sit at the acoustic delays of the LM's cache (codebooks
1..7 one step behind codebook 0), so the GT's Mimi codes would need re-delaying by hand; and
(3) the GT audio needs a second streaming Mimi encoder beside the one encoding the user. Forcing the
audio alone would condition Moshi on a history it could not have produced, which is not the GT
history either; replaying keeps Moshi's own, consistent past.
"""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval_common.errors import DuplexEvalError

from duplexeval_runner import deps
from duplexeval_runner.protocol import Session, StepRunner
from duplexeval_runner.settings import Setting, Spec, from_env, tiny_seed

from . import tiny

NAME = "moshi"
PACKAGE = "duplexeval_runner_moshi"
SR = 24000
FRAME = 1920  # Mimi: 24 kHz / 12.5 Hz
MODEL_DIR_ENV = "MODEL_DIR"
REPO = "kyutai/moshiko-pytorch-bf16"
HOW_TO_GET = f"huggingface-cli download {REPO} --local-dir DIR"
# moshi.models.loaders (0.2.13 = kyutai-labs/moshi @ e6a55d2): the names in a repository without
# config.json ("legacy", a Moshi 7B), and the config keys that name files or settings rather
# than LM arguments.
MOSHI_NAME = "model.safetensors"
MIMI_NAME = "tokenizer-e351c8d8-checkpoint125.safetensors"
TEXT_TOKENIZER_NAME = "tokenizer_spm_32k_3.model"
SAMPLING = ("temp", "temp_text", "top_k", "top_k_text", "use_sampling", "cfg_coef")
FIRST_FRAME = ("repeat", "skip")
DTYPES = ("bfloat16", "float16", "float32")

# The runner's own defaults; the profile (profiles/moshi.json) sets LMGen's sampling values.
SETTINGS = Spec(
    Setting("model_dir", str, None, f"a local snapshot folder of {REPO}, or `tiny:<seed>` (the random-weight "
            "test model)", env=MODEL_DIR_ENV, path="any"),
    Setting("device", str, None, "where the model runs (null: cuda when available)", choices=("cpu", "cuda")),
    Setting("dtype", str, None, "null: bfloat16 on cuda, float32 on cpu", choices=DTYPES),
    Setting("temp", float, 0.8, "LMGen temperature of the audio tokens", ge=0, le=100),
    Setting("temp_text", float, 0.7, "LMGen temperature of the text tokens", ge=0, le=100),
    Setting("top_k", int, 250, "LMGen top-k of the audio tokens", ge=0),
    Setting("top_k_text", int, 25, "LMGen top-k of the text tokens", ge=0),
    Setting("use_sampling", bool, True, "LMGen samples (false: greedy)"),
    Setting("cfg_coef", float, 1.0, "LMGen classifier-free guidance coefficient", ge=0, le=100),
    Setting("first_frame", str, "repeat", "repeat: the first frame's codes stepped twice (run_inference.py); "
            "skip: server.py's first frame (output frame 0 is zeros)", choices=FIRST_FRAME),
    Setting("warmup_frames", int, 4, "frames of silence through the model in setup() (no sample sees them)",
            ge=0, le=1000),
    Setting("threads", int, None, "torch.set_num_threads on cpu (null: torch's default)", ge=1),
    package=PACKAGE, profile="moshi",
)


def _fail(msg: str) -> DuplexEvalError:
    return DuplexEvalError(f"runner {NAME!r}: {msg}")


class Checkpoint:
    """The files of a local snapshot, found as CheckpointInfo.from_hf_repo finds them."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.config_path = folder / "config.json"
        raw: dict | None = None
        if self.config_path.is_file():
            try:
                raw = json.loads(self.config_path.read_text())
            except (OSError, ValueError) as exc:
                raise _fail(f"{self.config_path} is not valid JSON ({exc})") from None
            if not isinstance(raw, dict):
                raise _fail(f"{self.config_path} is not a JSON object")
        self.raw = raw
        lm = dict(raw) if raw is not None else None
        pop = (lambda k, d: lm.pop(k, d)) if lm is not None else (lambda k, d: d)
        self.moshi_name = pop("moshi_name", MOSHI_NAME)
        self.mimi_name = pop("mimi_name", MIMI_NAME)
        self.mimi_config_name = pop("mimi_config_name", None)
        self.tokenizer_name = pop("tokenizer_name", TEXT_TOKENIZER_NAME)
        self.lora_name = pop("lora_name", None)
        self.model_type = pop("model_type", "moshi")
        self.lm_gen_config = pop("lm_gen_config", {}) or {}
        self.tts_config = pop("tts_config", {}) or {}
        self.stt_config = pop("stt_config", {}) or {}
        self.model_id = pop("model_id", {}) or {}
        self.lm_config = lm
        if self.model_type != "moshi":
            raise _fail(f"{folder} holds a {self.model_type!r} model (config.json model_type); this runner "
                        "runs Moshi speech-to-speech models only")
        wanted = [("the Moshi LM weights", self.moshi_name), ("the Mimi weights", self.mimi_name),
                  ("the text tokenizer", self.tokenizer_name)]
        if self.mimi_config_name:
            wanted.append(("the Mimi config", self.mimi_config_name))
        if self.lora_name:
            wanted.append(("the LoRA weights", self.lora_name))
        for what, name in wanted:
            if not isinstance(name, str) or not (folder / name).is_file():
                raise _fail(f"model_dir {folder} has no {name} ({what}); get the weights with "
                            f"`{HOW_TO_GET.replace('DIR', str(folder))}`")

    def file(self, name: str | None) -> Path | None:
        return None if not name else self.folder / name

    def files(self) -> list[Path]:
        names = [self.moshi_name, self.mimi_name, self.tokenizer_name, self.mimi_config_name, self.lora_name]
        out = [self.folder / n for n in names if n]
        return out + ([self.config_path] if self.raw is not None else [])

    def info(self):
        """moshi's CheckpointInfo for these local files (what from_hf_repo would return)."""
        from moshi.models import loaders
        mimi_config = None
        if self.mimi_config_name:
            mimi_config = json.loads((self.folder / self.mimi_config_name).read_text())
        return loaders.CheckpointInfo(
            self.folder / self.moshi_name, self.folder / self.mimi_name, self.folder / self.tokenizer_name,
            self.lm_config, self.raw, mimi_config, self.model_type, self.file(self.lora_name),
            lm_gen_config=dict(self.lm_gen_config), tts_config=self.tts_config, stt_config=self.stt_config,
            model_id=self.model_id)


class MoshiRunner(StepRunner):
    name = NAME
    history = "replayed"  # see the module docstring (multi-round samples)
    clock = "lockstep"
    in_sr = SR
    out_sr = SR
    frame_ms = 80.0
    deterministic = True  # updated in setup(): seeded and on cpu
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **args: Any):
        a, prof = self.SETTINGS.resolve(NAME, args)
        self.profile = prof.record()
        given = {k for k in args if k != "profile"}
        self.seed = seed
        spec = from_env(a["model_dir"], MODEL_DIR_ENV)
        if spec is None:
            raise _fail(f"no weights: set runner_args model_dir or ${MODEL_DIR_ENV} to a local snapshot of {REPO} "
                        f"(`{HOW_TO_GET}`), or to tiny:<seed> for the random-weight test model")
        self.tiny_seed: int | None = None
        self.checkpoint: Checkpoint | None = None
        try:
            self.tiny_seed = tiny_seed(spec)
        except ValueError as exc:
            raise _fail(str(exc)) from None
        if self.tiny_seed is None:
            folder = Path(spec).expanduser()
            if not folder.is_dir():
                raise _fail(f"model_dir {spec} is not a folder; get the weights with "
                            f"`{HOW_TO_GET.replace('DIR', spec)}`")
            self.checkpoint = Checkpoint(folder.resolve())
        self.model_dir = spec if self.tiny_seed is not None else str(self.checkpoint.folder)
        # LMGen's arguments: the profile's, then the checkpoint's lm_gen_config (as run_inference.py
        # passes it), then what the user set.
        gen = {k: a[k] for k in SAMPLING}
        if self.checkpoint is not None:
            gen.update(self.checkpoint.lm_gen_config)
        gen.update({k: a[k] for k in SAMPLING if k in given})
        self.lm_gen_kwargs = gen
        self.args = a
        self.device: str | None = a["device"]
        self.dtype: str | None = a["dtype"]
        self._loaded = False
        self._k = 0

    # -- setup: once -------------------------------------------------------------------------
    def setup(self) -> None:
        if self._loaded:
            return
        what = f"runner {NAME!r}"
        torch = deps.import_module(what, "torch")
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if device == "cuda" and not torch.cuda.is_available():
            raise _fail("device cuda was asked for, but torch sees no CUDA device (set device cpu)")
        if device == "cpu":
            tiny.cpu_env()
            if self.args["threads"]:
                torch.set_num_threads(self.args["threads"])
        dtype_name = self.dtype or ("bfloat16" if device == "cuda" else "float32")
        self.device, self.dtype = device, dtype_name
        self.torch = torch
        deps.import_module(what, "moshi")
        from moshi.models import LMGen
        from moshi.utils import compile as moshi_compile
        self._compile = moshi_compile
        dtype = getattr(torch, dtype_name)
        self.tokenizer = None
        with torch.no_grad():
            if self.tiny_seed is not None:
                self.mimi, lm = tiny.build(self.tiny_seed, device=device, dtype=dtype)
            else:
                info = self.checkpoint.info()
                try:
                    self.mimi = info.get_mimi(device=device)
                    self.tokenizer = info.get_text_tokenizer()
                    lm = info.get_moshi(device=device, dtype=dtype)
                except Exception as exc:  # a truncated or foreign file: one line
                    raise _fail(f"loading the weights from {self.model_dir} failed ({type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else ''}); get them again with "
                                f"`{HOW_TO_GET.replace('DIR', self.model_dir)}`") from None
            self.lm_gen = LMGen(lm, **self.lm_gen_kwargs)
            with self._no_compile():
                self.mimi.streaming_forever(1)
                self.lm_gen.streaming_forever(1)
                for _ in range(self.args["warmup_frames"]):
                    codes = self.mimi.encode(torch.zeros(1, 1, FRAME, device=device))
                    tokens = self.lm_gen.step(codes)
                    if tokens is not None:
                        self.mimi.decode(tokens[:, 1:])
        self.frame_size = int(self.mimi.sample_rate / self.mimi.frame_rate)
        if self.mimi.sample_rate != SR or self.frame_size != FRAME:
            raise _fail(f"the Mimi model runs at {self.mimi.sample_rate} Hz with {self.frame_size}-sample "
                        f"frames; this runner expects {SR} Hz and {FRAME}")
        self.deterministic = self.seed is not None and device == "cpu"
        self._loaded = True

    def _no_compile(self) -> ExitStack:
        stack = ExitStack()
        if self.device == "cpu":
            stack.enter_context(self._compile.no_compile())
            stack.enter_context(self._compile.no_cuda_graph())
        return stack

    # -- per sample --------------------------------------------------------------------------
    def open(self, session: Session) -> None:
        self.setup()
        self.mimi.reset_streaming()
        self.lm_gen.reset_streaming()
        if self.seed is not None:
            self.torch.manual_seed(self.seed)
            if self.device == "cuda":
                self.torch.cuda.manual_seed_all(self.seed)
        self._k = 0
        session.stats["text_tokens"] = 0

    def step(self, frame: np.ndarray, session: Session) -> np.ndarray:
        torch = self.torch
        if frame.shape != (FRAME,):
            raise _fail(f"step {self._k}: got a frame of {frame.shape} samples, expected ({FRAME},)")
        k = self._k
        self._k += 1
        x = torch.from_numpy(np.ascontiguousarray(frame, dtype=np.float32)).to(self.device)[None, None]
        with torch.no_grad(), self._no_compile():
            codes = self.mimi.encode(x)
            if k == 0:
                if self.args["first_frame"] == "repeat":
                    # run_inference.py: the first slice of codes stepped twice (the first step
                    # only fills the delay and returns None)
                    self.lm_gen.step(codes)
                else:
                    # server.py: the first frame's codes carry the encoder's left padding; reset
                    # so that the padding is applied again on the next call
                    self.mimi.reset_streaming()
            tokens = self.lm_gen.step(codes)
            if tokens is None:
                return np.zeros(FRAME, np.float32)
            pcm = self.mimi.decode(tokens[:, 1:])
        text = int(tokens[0, 0, 0])
        if text not in (0, 3):
            t = k * FRAME / SR  # where output frame k is placed
            if self.tokenizer is not None:
                piece = self.tokenizer.id_to_piece(text).replace("\u2581", " ")
                session.event("text", t, text=piece, token_id=text, frame=k)
            else:
                session.event("text", t, token_id=text, frame=k)
            session.stats["text_tokens"] += 1
        return pcm[0, 0].float().cpu().numpy()

    def close(self, session: Session) -> None:
        session.stats["steps"] = self._k

    # -- records -----------------------------------------------------------------------------
    def settings(self) -> dict:
        s = {k: v for k, v in self.args.items() if k not in SAMPLING}
        s.update({"model_dir": self.model_dir, "device": self.device, "dtype": self.dtype,
                  "lm_gen": dict(self.lm_gen_kwargs), "frame_samples": FRAME,
                  "first_output": "frame 0 (first frame stepped twice)" if self.args["first_frame"] == "repeat"
                  else "zeros at frame 0 (server.py alignment)",
                  "moshi": deps.version("moshi"), "torch": deps.version("torch")})
        if self.device == "cpu":
            s["env"] = {k: os.environ.get(k) for k in ("NO_TORCH_COMPILE", "NO_CUDA_GRAPH")}
        return s

    def models(self) -> dict:
        if self.tiny_seed is not None:
            return {"moshi": {"package": "moshi", "version": deps.version("moshi"), **tiny.record(self.tiny_seed)}}
        ck = self.checkpoint
        return {"moshi": deps.model_record("moshi", ck.files(), model_dir=str(ck.folder), layout=REPO,
                                           model_type=ck.model_type,
                                           lm_gen_config=dict(ck.lm_gen_config))}
