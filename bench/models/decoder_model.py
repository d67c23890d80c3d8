#!/usr/bin/env python3
"""A LLaMA-style decoder with a KV cache, exported with Debian's PyTorch
(bench/models/setup.sh installs it): 8 layers, model width 512, grouped-query
attention with 8 query and 2 key-value heads of 64, rotary position
embeddings computed in the graph from position_ids, RMSNorm, a SwiGLU MLP of
width 1408, vocabulary 8000, untied embedding and LM head: 30.7M float32
parameters (about 123 MB of weights read per generated token). Opset 14.

Inputs: input_ids int64 [1, S], position_ids int64 [1, S],
past_key_values.N.key / .value float32 [1, 2, P, 64] for N in 0..7.
Outputs: logits [1, S, 8000], present.N.key / .value [1, 2, P + S, 64].
S and P are dynamic (P may be 0: a prefill with an empty cache).

  /usr/bin/python3 bench/models/decoder_model.py [OUT_DIR]

writes OUT_DIR/decoder.onnx (default ~/.cache/spindle/bench-models) and
prints the --shape arguments of a decode step (1 token after 255) and of a
prefill (128 tokens, empty cache) for side_by_side.js / `spindle bench`.
"""
import math
import os
import sys

import torch
from torch import nn

LAYERS, D, HEADS, KV_HEADS, HEAD, FF, VOCAB = 8, 512, 8, 2, 64, 1408, 8000
OPSET = 14


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    a, b = x[..., : HEAD // 2], x[..., HEAD // 2:]
    return torch.cat((-b, a), dim=-1)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_norm = RMSNorm(D)
        self.q = nn.Linear(D, HEADS * HEAD, bias=False)
        self.k = nn.Linear(D, KV_HEADS * HEAD, bias=False)
        self.v = nn.Linear(D, KV_HEADS * HEAD, bias=False)
        self.o = nn.Linear(HEADS * HEAD, D, bias=False)
        self.mlp_norm = RMSNorm(D)
        self.gate = nn.Linear(D, FF, bias=False)
        self.up = nn.Linear(D, FF, bias=False)
        self.down = nn.Linear(FF, D, bias=False)

    def forward(self, x, cos, sin, mask, past_k, past_v):
        b, s, _ = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(b, s, HEADS, HEAD).transpose(1, 2)
        k = self.k(h).view(b, s, KV_HEADS, HEAD).transpose(1, 2)
        v = self.v(h).view(b, s, KV_HEADS, HEAD).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = torch.cat((past_k, k), dim=2)
        v = torch.cat((past_v, v), dim=2)
        rep = HEADS // KV_HEADS
        kr = k.unsqueeze(2).expand(b, KV_HEADS, rep, k.shape[2], HEAD).reshape(b, HEADS, k.shape[2], HEAD)
        vr = v.unsqueeze(2).expand(b, KV_HEADS, rep, v.shape[2], HEAD).reshape(b, HEADS, v.shape[2], HEAD)
        scores = torch.matmul(q, kr.transpose(2, 3)) / math.sqrt(HEAD) + mask
        att = torch.matmul(torch.softmax(scores, dim=-1), vr)
        x = x + self.o(att.transpose(1, 2).reshape(b, s, HEADS * HEAD))
        h = self.mlp_norm(x)
        x = x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))
        return x, k, v


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.norm = RMSNorm(D)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)
        self.register_buffer("inv_freq", 1.0 / (10000.0 ** (torch.arange(0, HEAD, 2).float() / HEAD)), persistent=False)

    def forward(self, input_ids, position_ids, *past):
        x = self.embed(input_ids)
        freqs = position_ids.unsqueeze(-1).float() * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1).unsqueeze(1)  # [1, 1, S, HEAD]
        cos, sin = emb.cos(), emb.sin()
        # Causal mask over the cache and the new tokens: query i (at position
        # P + i) sees keys 0..P + i.
        s = input_ids.shape[1]
        total = past[0].shape[2] + s
        q_pos = torch.arange(s).unsqueeze(-1) + (total - s)
        k_pos = torch.arange(total).unsqueeze(0)
        mask = (k_pos > q_pos).float() * -1e9
        presents = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, mask, past[2 * i], past[2 * i + 1])
            presents += [k, v]
        return (self.lm_head(self.norm(x)), *presents)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/spindle/bench-models")
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = Decoder().eval()
    with torch.no_grad():  # weights of LLaMA-like scale: std 0.02
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.normal_(0.0, 0.02)
    export_with_cache(model, os.path.join(out_dir, "decoder.onnx"), "decoder_model", LAYERS, KV_HEADS, HEAD, VOCAB)

def export_with_cache(model, path, tool, layers, kv_heads, head, vocab):
    """Exports `model` (input_ids, position_ids, then past key / value per
    layer -> logits, then present key / value per layer) at opset OPSET with
    the sequence, past and total lengths dynamic, and prints the --shape
    arguments of a decode step (1 token after 255) and of a prefill (128
    tokens, empty cache). gpt_decoder_model.py exports through it too."""
    S, P = 3, 5
    ids = torch.randint(0, vocab, (1, S))
    pos = torch.arange(P, P + S).unsqueeze(0)
    past = [torch.randn(1, kv_heads, P, head) for _ in range(2 * layers)]
    past_names = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    present_names = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    dynamic = {"input_ids": {1: "seq"}, "position_ids": {1: "seq"}, "logits": {1: "seq"}}
    dynamic.update({n: {2: "past"} for n in past_names})
    dynamic.update({n: {2: "total"} for n in present_names})
    with torch.no_grad():
        torch.onnx.export(model, (ids, pos, *past), path, opset_version=OPSET,
                          input_names=["input_ids", "position_ids"] + past_names,
                          output_names=["logits"] + present_names, dynamic_axes=dynamic)
    params = sum(p.numel() for p in model.parameters())
    print(f"{tool}: {path} ({params / 1e6:.1f}M parameters)", file=sys.stderr)
    cache = lambda p: " ".join(f"{n}=1x{kv_heads}x{p}x{head}" for n in past_names)
    print(f"decode: input_ids=1x1 position_ids=1x1 {cache(255)}")
    print(f"prefill: input_ids=1x128 position_ids=1x128 {cache(0)}")


if __name__ == "__main__":
    main()
