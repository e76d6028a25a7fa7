"""A tiny random-weight dGSLM: fairseq's own classes, shrunk, for tests and benchmarks.

`model_dir: "tiny:<seed>"` builds, in memory, from the classes the real checkpoints load into
(fairseq-fixed 0.12.3.1):

- a HubertModel (fairseq/models/hubert/hubert.py) with the real feature extractor's layout (7 conv
  layers, strides 5,2,2,2,2,2,2: 320 samples = 20 ms per unit at 16 kHz, 400-sample receptive field)
  but 16 channels, one 32-wide transformer layer; units are read from its last layer;
- a k-means of K = 24 centroids: 24 feature vectors of the tiny HuBERT on seeded noise (a k-means
  is a set of centroids; these are far enough apart that different audio gives different units);
- a SpeechDLM (fairseq/models/speech_dlm) built by SpeechDLM.build_model with the public
  checkpoint's objectives (edge-unit prediction, delayed duration prediction, cross-channel
  prediction weights "1,0", shared input/output embeddings) and its two channels unitA, unitB over
  one dictionary of the K units, but 2 layers (1 cross-channel) of width 32, the layers' weight
  matrices scaled by GAIN from their default initialisation (see build);
- a CodeHiFiGANVocoder (fairseq/models/text_to_speech/vocoder.py) with the upsampling rates of a
  50 Hz unit vocoder (5,4,4,2,2 = 320 samples per unit), multi-speaker, widths shrunk; it loads its
  generator from a checkpoint file, so the tiny one is written to a temporary file and read back
  through the real constructor.

Weights come from torch's default initialisation under `torch.manual_seed(seed)` (the global RNG
is left as it was), so one seed gives one model. Nothing is downloaded. It is noise, not dGSLM.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
from typing import Any

K = 24
HUBERT = {"encoder_layers": 1, "encoder_embed_dim": 32, "encoder_ffn_embed_dim": 64,
          "encoder_attention_heads": 2, "conv_pos": 16, "conv_pos_groups": 4, "final_dim": 16,
          "conv_feature_layers": "[(16,10,5)] + [(16,3,2)] * 4 + [(16,2,2)] * 2"}
HUBERT_LAYER = 1
DLM = {"decoder_embed_dim": 32, "decoder_ffn_embed_dim": 64, "decoder_layers": 2, "decoder_cross_layers": 1,
       "decoder_attention_heads": 2, "tokens_per_sample": 3072, "max_target_positions": 3072}
VOCODER = {"resblock": "1", "upsample_rates": [5, 4, 4, 2, 2], "upsample_kernel_sizes": [11, 8, 8, 4, 4],
           "upsample_initial_channel": 32, "resblock_kernel_sizes": [3], "resblock_dilation_sizes": [[1, 3, 5]],
           "num_embeddings": K, "embedding_dim": 8, "model_in_dim": 16, "multispkr": True, "num_speakers": 8}
CHANNELS = ("unitA", "unitB")
GAIN = 3.0



def record(seed: int) -> dict[str, Any]:
    """What identifies a tiny model (runner.json `models`): its config and seed."""
    cfg = {"hubert": HUBERT, "hubert_layer": HUBERT_LAYER, "kmeans_k": K, "speech_dlm": DLM, "speech_dlm_gain": GAIN,
           "vocoder": VOCODER}
    blob = json.dumps(cfg, sort_keys=True).encode()
    return {"kind": "tiny random-weight HuBERT + k-means + SpeechDLM + unit HiFi-GAN (tests and benchmarks "
                    "only, not dGSLM)", "seed": seed, "config": cfg,
            "config_sha256": hashlib.sha256(blob).hexdigest()}


def dictionary():
    from fairseq.data import Dictionary
    d = Dictionary()
    for u in range(K):
        d.add_symbol(str(u))
    return d


def dlm_args(**over: Any) -> argparse.Namespace:
    """The SpeechDLM arguments of the public checkpoint (its README's training command), shrunk."""
    args = argparse.Namespace(
        dropout=0.1, attention_dropout=0.1, activation_dropout=0.0, relu_dropout=0.0, activation_fn="relu",
        share_decoder_input_output_embed=True, decoder_learned_pos=False, no_token_positional_embeddings=False,
        add_bos_token=False, decoder_layerdrop=0.0, decoder_layers_to_keep=None, quant_noise_pq=0.0,
        quant_noise_pq_block_size=8, quant_noise_scalar=0.0, no_scale_embedding=False, layernorm_embedding=False,
        checkpoint_activations=False, offload_activations=False, tpu=False,
        duration_prediction="True", delayed_duration_target="True", main_and_cross_weights="1,0",
        channels=",".join(CHANNELS), next_unit_prediction="False", edge_unit_prediction="True",
        channel_weights=None, data="", sample_break_mode="none", output_dictionary_size=-1,
        max_target_durations=None,
    )
    for k, v in {**DLM, **over}.items():
        setattr(args, k, v)
    return args


def build(seed: int, device: str = "cpu") -> dict[str, Any]:
    """{hubert, hubert_layer, normalize, centroids, dlm, dicts, channels, vocoder, vocoder_cfg} of a tiny model."""
    import torch
    from fairseq.models.hubert.hubert import HubertConfig, HubertModel
    from fairseq.models.speech_dlm import SpeechDLM
    from fairseq.models.text_to_speech.vocoder import CodeHiFiGANVocoder
    from fairseq.models.text_to_speech.codehifigan import CodeGenerator
    from fairseq.tasks.hubert_pretraining import HubertPretrainingConfig
    from fairseq.tasks.speech_dlm_task import SpeechDLMTask

    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        hcfg = HubertConfig(label_rate=50.0, **HUBERT)
        tcfg = HubertPretrainingConfig(label_rate=50.0, sample_rate=16000, normalize=False, data="")
        hubert = HubertModel(hcfg, tcfg, [dictionary()]).eval()
        # the k-means: centroids from the tiny HuBERT's features of seeded noise
        g = torch.Generator().manual_seed(seed + 1)
        noise = 0.3 * torch.randn(1, 16000 * 2, generator=g)
        with torch.no_grad():
            feats, _ = hubert.extract_features(source=noise, padding_mask=None, mask=False, output_layer=HUBERT_LAYER)
        feats = feats[0]
        pick = torch.randperm(feats.shape[0], generator=g)[:K]
        centroids = feats[pick].clone()  # (K, D)
        d = dictionary()
        dicts = {c: d for c in CHANNELS}
        args = dlm_args()
        task = SpeechDLMTask(args, dicts, dicts, targets=["edge", "duration"])
        dlm = SpeechDLM.build_model(args, task).eval()
        with torch.no_grad():
            # sharper than the default initialisation: with it, another user stream changes about 8%
            # of the model channel's sampling distribution per step (total variation), with the
            # layers' weight matrices x GAIN about 26%, so teacher forcing shows in what is sampled
            for p in dlm.decoder.layers.parameters():
                if p.dim() == 2:
                    p.mul_(GAIN)
        gen = CodeGenerator(VOCODER)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny_vocoder.pt")
            torch.save({"generator": gen.state_dict()}, path)
            vocoder = CodeHiFiGANVocoder(path, dict(VOCODER)).eval()
    finally:
        torch.random.set_rng_state(state)
    return {"hubert": hubert.to(device), "hubert_layer": HUBERT_LAYER, "normalize": False,
            "centroids": centroids.to(device), "dlm": dlm.to(device), "dicts": dicts, "channels": list(CHANNELS),
            "duration_prediction": True, "delayed_duration": True, "vocoder": vocoder.to(device),
            "vocoder_cfg": dict(VOCODER), "max_positions": dlm.decoder.max_positions()}
