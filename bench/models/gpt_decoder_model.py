#!/usr/bin/env python3
"""A GPT-2-style decoder with a KV cache, exported with Debian's PyTorch
(bench/models/setup.sh installs it): the other decoder shape of the kit,
beside decoder_model.py's LLaMA-style one. 6 layers, model width 384,
multi-head attention (6 query and 6 key-value heads of 64: not grouped),
learned position embeddings (1024 positions), pre-LayerNorm with biases,
an MLP of width 1536 with GELU's tanh approximation, vocabulary 6000, the LM
head tied to the token embedding (one weight, read transposed), the causal
mask sliced from a lower-triangular buffer as GPT-2's code does. 13.3M
float32 parameters. Opset 14.

Inputs: input_ids int64 [1, S], position_ids int64 [1, S],
past_key_values.N.key / .value float32 [1, 6, P, 64] for N in 0..5.
Outputs: logits [1, S, 6000], present.N.key / .value [1, 6, P + S, 64].
S and P are dynamic (P may be 0: a prefill with an empty cache).

  /usr/bin/python3 bench/models/gpt_decoder_model.py [OUT_DIR]

writes OUT_DIR/gpt_decoder.onnx (default ~/.cache/spindle/bench-models) and
prints the --shape arguments of a decode step (1 token after 255) and of a
prefill (128 tokens, empty cache) for `spindle bench`; side_by_side.js takes
`--dim past=255 --dim seq=1 --dim batch=1 --int-range 1024`.
"""
import math
import os
import sys

import torch
from torch import nn

from decoder_model import export_with_cache

LAYERS, D, HEADS, HEAD, FF, VOCAB, POSITIONS = 6, 384, 6, 64, 1536, 6000, 1024


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D)
        self.c_attn = nn.Linear(D, 3 * D)  # q, k, v in one product, as GPT-2
        self.c_proj = nn.Linear(D, D)
        self.ln_2 = nn.LayerNorm(D)
        self.c_fc = nn.Linear(D, FF)
        self.mlp_proj = nn.Linear(FF, D)
        self.register_buffer("bias", torch.tril(torch.ones(POSITIONS, POSITIONS, dtype=torch.bool)), persistent=False)

    def forward(self, x, past_k, past_v):
        b, s, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(D, dim=2)
        q = q.view(b, s, HEADS, HEAD).transpose(1, 2)
        k = k.view(b, s, HEADS, HEAD).transpose(1, 2)
        v = v.view(b, s, HEADS, HEAD).transpose(1, 2)
        k = torch.cat((past_k, k), dim=2)
        v = torch.cat((past_v, v), dim=2)
        total = k.shape[2]
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(HEAD)
        causal = self.bias[total - s:total, :total]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        att = torch.matmul(torch.softmax(w, dim=-1), v)
        x = x + self.c_proj(att.transpose(1, 2).reshape(b, s, D))
        h = nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
        x = x + self.mlp_proj(h)
        return x, k, v


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Embedding(POSITIONS, D)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D)

    def forward(self, input_ids, position_ids, *past):
        x = self.wte(input_ids) + self.wpe(position_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, past[2 * i], past[2 * i + 1])
            presents += [k, v]
        logits = torch.matmul(self.ln_f(x), self.wte.weight.t())  # tied head
        return (logits, *presents)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/spindle/bench-models")
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = Decoder().eval()
    with torch.no_grad():  # GPT-2's initialization scale: std 0.02, LayerNorms near 1
        for name, p in model.named_parameters():
            if "ln" in name:
                p.add_(0.1 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.02)
    export_with_cache(model, os.path.join(out_dir, "gpt_decoder.onnx"), "gpt_decoder_model", LAYERS, HEADS, HEAD, VOCAB)

if __name__ == "__main__":
    main()
