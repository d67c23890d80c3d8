"""bench/models/generate.py: greedy generation through an IOBinding, each
step's present cache bound as the next step's past as the run's OrtValues.
On a one-layer decoder built here (embedding, attention over the cache,
LM head; no mask, so the last position sees every token either way) its
ids equal those of running the whole sequence without a cache at each step,
at one and two threads.
"""
import json
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import spindle

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "models", "generate.py")
VOCAB, D, HEADS, HEAD = 37, 16, 2, 8


def decoder(path):
    rng = np.random.default_rng(5)
    w = lambda *s: numpy_helper.from_array((rng.standard_normal(s) * 0.5).astype(np.float32))
    inits = []
    for name, shape in (("emb", (VOCAB, D)), ("pos", (64, D)), ("wq", (D, D)), ("wk", (D, D)), ("wv", (D, D)),
                        ("head", (D, VOCAB))):
        t = w(*shape)
        t.name = name
        inits.append(t)
    inits.append(numpy_helper.from_array(np.array([1, -1, HEADS, HEAD], dtype=np.int64), "split_heads"))
    inits.append(numpy_helper.from_array(np.array([1, -1, D], dtype=np.int64), "merge_heads"))
    inits.append(numpy_helper.from_array(np.array(HEAD ** -0.5, dtype=np.float32), "scale"))
    heads = lambda x, y: [helper.make_node("Reshape", [x, "split_heads"], [y + "_r"]),
                          helper.make_node("Transpose", [y + "_r"], [y], perm=[0, 2, 1, 3])]
    nodes = [helper.make_node("Gather", ["emb", "input_ids"], ["e"]),
             helper.make_node("Gather", ["pos", "position_ids"], ["p"]),
             helper.make_node("Add", ["e", "p"], ["x"]),
             helper.make_node("MatMul", ["x", "wq"], ["q0"]), helper.make_node("MatMul", ["x", "wk"], ["k0"]),
             helper.make_node("MatMul", ["x", "wv"], ["v0"])]
    nodes += heads("q0", "q") + heads("k0", "k") + heads("v0", "v")
    nodes += [helper.make_node("Concat", ["past_key_values.0.key", "k"], ["present.0.key"], axis=2),
              helper.make_node("Concat", ["past_key_values.0.value", "v"], ["present.0.value"], axis=2),
              helper.make_node("Transpose", ["present.0.key"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["s0"]), helper.make_node("Mul", ["s0", "scale"], ["s"]),
              helper.make_node("Softmax", ["s"], ["a"], axis=-1),
              helper.make_node("MatMul", ["a", "present.0.value"], ["o0"]),
              helper.make_node("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["o1", "merge_heads"], ["o"]),
              helper.make_node("Add", ["o", "x"], ["h"]), helper.make_node("MatMul", ["h", "head"], ["logits"])]
    cache = lambda n, d: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, HEADS, d, HEAD])
    graph = helper.make_graph(
        nodes, "tiny_decoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"]),
         helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "seq"]),
         cache("past_key_values.0.key", "past"), cache("past_key_values.0.value", "past")],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "seq", VOCAB]),
         cache("present.0.key", "total"), cache("present.0.value", "total")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def reference(path, prompt, new_tokens):
    session = spindle.InferenceSession(str(path))
    ids, out = list(prompt), []
    empty = np.zeros((1, HEADS, 0, HEAD), dtype=np.float32)
    for _ in range(new_tokens):
        n = len(ids)
        logits = session.run(["logits"], {"input_ids": np.array([ids], dtype=np.int64),
                                          "position_ids": np.arange(n, dtype=np.int64)[None, :],
                                          "past_key_values.0.key": empty, "past_key_values.0.value": empty})[0]
        out.append(int(np.argmax(logits[0, -1])))
        ids.append(out[-1])
    return out


def test_greedy_ids_through_the_io_binding_equal_recomputing_the_sequence(tmp_path):
    path = tmp_path / "tiny_decoder.onnx"
    decoder(path)
    want = reference(path, [3, 17, 5, 29], 12)
    assert len(set(want)) > 1, want  # the cache really changes what comes next
    for intra in (1, 2):
        run = subprocess.run([sys.executable, SCRIPT, str(path), "--prompt-ids", "3,17,5,29", "--max-new-tokens", "12",
                              "--intra", str(intra), "--json"], capture_output=True, text=True, check=True)
        got = json.loads(run.stdout)
        assert got["generated_ids"] == want, (intra, got, run.stderr)
        assert got["decode_steps"] == 11 and got["prompt_tokens"] == 4
        assert got["prefill_ms"] > 0 and got["decode_p50_ms"] > 0


def test_a_bad_prompt_is_refused_naming_it(tmp_path):
    path = tmp_path / "tiny_decoder.onnx"
    decoder(path)
    run = subprocess.run([sys.executable, SCRIPT, str(path), "--prompt-ids", "3,x", "--max-new-tokens", "2"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "--prompt-ids" in run.stderr
