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
8 -> 128 -> 128 and a GRU 48 inside an If, on 64 frames of 8 features).
"""
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
    if name == "if_gru_model":
        return torch.jit.script(BranchyGru().eval()), (torch.randn(1, 8, 64),), ["x"], {}, "x=1x8x64"
    raise SystemExit(f"unknown model '{name}'")


CNNS = ["resnet50", "mobilenet_v3_large", "regnet_y_400mf", "densenet121",
        "resnet18", "squeezenet1_1", "shufflenet_v2_x1_0", "efficientnet_b0"]
SEQUENCES = ["encoder", "encoder_small", "lstm_lm", "gru_tagger", "lstm_tagger", "if_model"]
VERIFY = ["gru_classifier", "if_gru_model"]  # exported only when named
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
