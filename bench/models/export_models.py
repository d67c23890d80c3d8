"""Exports the benchmark models with Debian's PyTorch (python3-torch,
python3-torchvision), seeded random weights, opset 14; writes each model with a
line of its input shapes into OUT_DIR/models.tsv.

Usage: /usr/bin/python3 bench/models/export_models.py OUT_DIR [NAME...]

Convolution networks (random weights, BatchNorm running statistics
recalibrated on random batches in train mode first, so activations keep a
realistic scale and outputs are not ~1e-9 noise): resnet50, mobilenet_v3_large,
regnet_y_400mf, densenet121, and for verification resnet18, squeezenet1_1,
shufflenet_v2_x1_0, efficientnet_b0.
Sequence models: encoder (torch.nn.TransformerEncoder, d_model 384, 6 heads,
6 layers, GELU, sequence 128), encoder_small (the same family untuned: d_model
256, 4 heads, ReLU feed-forward 1024, 4 layers, sequence 128), lstm_lm (Embedding, 2-layer LSTM 256, Linear;
int64 tokens, dynamic sequence axis), gru_tagger (Embedding, 2-layer
bidirectional GRU 128, Linear, LogSoftmax), lstm_tagger (the same with LSTM),
if_model (torch.jit.script: the branch taken depends on the input; 1-D
convolutions and an LSTM inside the If).
For verification only (exported when named; not used to tune anything):
densenet169, resnet101, regnet_x_400mf and regnet_y_800mf (the convolution
families' other members),
gru_classifier (Embedding 500x40, one bidirectional GRU 96, Linear on the
last step; 80 tokens), if_gru_model (torch.jit.script: 1-D convolutions
8 -> 128 -> 128 and a GRU 48 inside an If, on 64 frames of 8 features),
bert_tanh (an encoder written out as BERT / GPT-2 code writes one: d 512,
8 heads, 4 layers, feed-forward 2048 with GELU's tanh approximation, a
boolean padding mask; int64 tokens and the mask, dynamic sequence axis).
"""
import math
import os
import sys

import torch
import torchvision

torch.manual_seed(0)
OPSET = 14


def recalibrate(model, shape, batches=4):
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(*shape))
    model.eval()
    return model


def cnn(name):
    model = getattr(torchvision.models, name)(weights=None)
    return recalibrate(model, (8, 3, 224, 224)), (torch.randn(1, 3, 224, 224),), ["input"], {}, "input=1x3x224x224"


class LstmLm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(1000, 128)
        self.rnn = torch.nn.LSTM(128, 256, num_layers=2, batch_first=True)
        self.out = torch.nn.Linear(256, 1000)

    def forward(self, tokens):
        y, _ = self.rnn(self.emb(tokens))
        return self.out(y)


class Tagger(torch.nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.emb = torch.nn.Embedding(1000, 64)
        self.rnn = cell(64, 128, num_layers=2, batch_first=True, bidirectional=True)
        self.out = torch.nn.Linear(256, 17)

    def forward(self, tokens):
        y, _ = self.rnn(self.emb(tokens))
        return torch.log_softmax(self.out(y), dim=-1)


class Encoder(torch.nn.Module):
    def __init__(self, d=384, heads=6, ffn=1536, activation="gelu", layers=6):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=ffn, activation=activation, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


class Branchy(torch.nn.Module):
    """An audio-style front end whose work sits inside If branches."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv1d(1, 64, 5, stride=4, padding=2)
        self.conv2 = torch.nn.Conv1d(64, 64, 3, padding=1)
        self.conv3 = torch.nn.Conv1d(64, 64, 3, padding=1)
        self.lstm = torch.nn.LSTM(64, 64, batch_first=True)
        self.head = torch.nn.Linear(64, 8)

    def forward(self, x):
        if bool(x.abs().mean() > 0.0):
            h = torch.relu(self.conv1(x))
            h = torch.relu(self.conv2(h))
            if bool(h.mean() > -1.0):
                h = torch.relu(self.conv3(h))
                y, _ = self.lstm(h.transpose(1, 2))
                out = self.head(y[:, -1])
            else:
                out = self.head(h.mean(dim=2))
        else:
            out = torch.zeros(1, 8)
        return out


class GruClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(500, 40)
        self.rnn = torch.nn.GRU(40, 96, batch_first=True, bidirectional=True)
        self.out = torch.nn.Linear(192, 6)

    def forward(self, tokens):
        y, _ = self.rnn(self.emb(tokens))
        return self.out(y[:, -1])


class BranchyGru(torch.nn.Module):
    """Another front end with its work in an If branch (1-D convolutions, a GRU)."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv1d(8, 128, 3, padding=1)
        self.conv2 = torch.nn.Conv1d(128, 128, 5, padding=2)
        self.gru = torch.nn.GRU(128, 48, batch_first=True)
        self.head = torch.nn.Linear(48, 4)

    def forward(self, x):
        h = torch.relu(self.conv1(x))
        if bool(h.mean() > 0.0):
            h = torch.relu(self.conv2(h))
            y, _ = self.gru(h.transpose(1, 2))
            out = self.head(y[:, -1])
        else:
            out = self.head(torch.zeros(1, 48))
        return out


class BertLike(torch.nn.Module):
    """An encoder written out as BERT / GPT-2 code writes one (not
    torch.nn.TransformerEncoder): token and position embeddings, per layer
    Linear Q, K, V, heads by view + transpose, scores / sqrt(head size) plus
    an additive padding mask, Softmax, the context back through transpose +
    view, output Linear, residual + LayerNorm, a feed-forward with GELU's
    tanh approximation written out (0.5 x (1 + tanh(...)))."""

    def __init__(self, vocab=1000, d=512, heads=8, ffn=2048, layers=4, max_len=256):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(max_len, d)
        self.ln0 = torch.nn.LayerNorm(d)
        self.layers = torch.nn.ModuleList()
        for _ in range(layers):
            self.layers.append(torch.nn.ModuleDict({
                "q": torch.nn.Linear(d, d), "k": torch.nn.Linear(d, d), "v": torch.nn.Linear(d, d),
                "o": torch.nn.Linear(d, d), "ln1": torch.nn.LayerNorm(d),
                "up": torch.nn.Linear(d, ffn), "down": torch.nn.Linear(ffn, d), "ln2": torch.nn.LayerNorm(d)}))

    @staticmethod
    def gelu_tanh(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.dh).transpose(1, 2)

    def forward(self, tokens, mask):
        b, s = tokens.shape
        h = self.ln0(self.tok(tokens) + self.pos(torch.arange(s).unsqueeze(0)))
        ext = (1.0 - mask.to(torch.float32))[:, None, None, :] * -10000.0
        for L in self.layers:
            q, k, v = self.split(L["q"](h)), self.split(L["k"](h)), self.split(L["v"](h))
            p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.dh) + ext, dim=-1)
            ctx = (p @ v).transpose(1, 2).reshape(b, s, -1)
            h = L["ln1"](h + L["o"](ctx))
            h = L["ln2"](h + L["down"](self.gelu_tanh(L["up"](h))))
        return h


def sequence(name):
    if name == "lstm_lm":
        return LstmLm().eval(), (torch.randint(0, 1000, (1, 64)),), ["tokens"], {"tokens": {1: "seq"}}, "tokens=1x64"
    if name in ("gru_tagger", "lstm_tagger"):
        cell = torch.nn.GRU if name == "gru_tagger" else torch.nn.LSTM
        return Tagger(cell).eval(), (torch.randint(0, 1000, (1, 48)),), ["tokens"], {}, "tokens=1x48"
    if name == "encoder":
        return Encoder().eval(), (torch.randn(1, 128, 384),), ["x"], {}, "x=1x128x384"
    if name == "encoder_small":
        return (Encoder(256, 4, 1024, "relu", 4).eval(), (torch.randn(1, 128, 256),), ["x"], {},
                "x=1x128x256")
    if name == "if_model":
        return torch.jit.script(Branchy().eval()), (torch.randn(1, 1, 512),), ["x"], {}, "x=1x1x512"
    if name == "gru_classifier":
        return GruClassifier().eval(), (torch.randint(0, 500, (1, 80)),), ["tokens"], {}, "tokens=1x80"
    if name == "bert_tanh":
        return (BertLike().eval(), (torch.randint(0, 1000, (1, 64)), torch.ones(1, 64, dtype=torch.bool)),
                ["tokens", "mask"], {"tokens": {1: "seq"}, "mask": {1: "seq"}}, "tokens=1x64 mask=1x64")
    if name == "if_gru_model":
        return torch.jit.script(BranchyGru().eval()), (torch.randn(1, 8, 64),), ["x"], {}, "x=1x8x64"
    raise SystemExit(f"unknown model '{name}'")


CNNS = ["resnet50", "mobilenet_v3_large", "regnet_y_400mf", "densenet121",
        "resnet18", "squeezenet1_1", "shufflenet_v2_x1_0", "efficientnet_b0"]
SEQUENCES = ["encoder", "encoder_small", "lstm_lm", "gru_tagger", "lstm_tagger", "if_model"]
VERIFY = ["gru_classifier", "if_gru_model", "bert_tanh"]  # exported only when named
VERIFY_CNNS = ["densenet169", "resnet101", "regnet_x_400mf", "regnet_y_800mf", "mobilenet_v3_small", "efficientnet_b1",
               "squeezenet1_0", "shufflenet_v2_x0_5"]  # likewise: other members of the families


def main():
    out_dir = sys.argv[1]
    names = sys.argv[2:] or CNNS + SEQUENCES
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    for name in names:
        torch.manual_seed(0)
        model, args, input_names, dynamic, shape = cnn(name) if name in CNNS + VERIFY_CNNS else sequence(name)
        path = os.path.join(out_dir, f"{name}.onnx")
        # With gradients enabled torch's TransformerEncoder takes its exportable
        # path (its fused inference kernel has no ONNX form).
        torch.onnx.export(model, args, path, opset_version=OPSET, input_names=input_names,
                          output_names=["output"], dynamic_axes=dynamic or None)
        rows.append(f"{name}\t{shape}")
        print(f"export_models: {path} ({shape})", flush=True)
    with open(os.path.join(out_dir, "models.tsv"), "a") as f:
        f.write("".join(r + "\n" for r in rows))


if __name__ == "__main__":
    main()
