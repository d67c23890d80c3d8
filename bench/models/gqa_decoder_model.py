#!/usr/bin/python3
"""The decoder of decoder_model.py (8 layers, width 512, 8 query / 2 key-value
heads of 64, SwiGLU 1408, vocabulary 8000) in the layout ONNX Runtime GenAI's
model builder writes: SimplifiedLayerNormalization, com.microsoft
SkipSimplifiedLayerNormalization between the blocks (its fourth output the
residual stream), GroupQueryAttention with do_rotary and cos / sin caches,
seqlens_k and total_sequence_length computed from attention_mask. Random
weights (seeded), written with Debian's python3-onnx helper.

Inputs: input_ids int64 [1, S], attention_mask int64 [1, P + S],
past_key_values.N.key / .value float32 [1, 2, P, 64]. Outputs: logits
[1, S, 8000], present.N.key / .value [1, 2, P + S, 64].

  /usr/bin/python3 bench/models/gqa_decoder_model.py [OUT_DIR]

writes OUT_DIR/gqa_decoder.onnx (default ~/.cache/spindle/bench-models), for
`spindle generate` and bench/models/generate_ort.js.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

LAYERS, D, HEADS, KV_HEADS, HEAD, FF, VOCAB, MAX_POS = 8, 512, 8, 2, 64, 1408, 8000, 2048
MS = 'com.microsoft'


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser('~/.cache/spindle/bench-models')
    rng = np.random.default_rng(7)
    inits, nodes = [], []

    def weight(name, *shape, scale=None):
        s = scale if scale is not None else 1.0 / np.sqrt(shape[0])
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name))
        return name

    def gain(name):
        inits.append(numpy_helper.from_array((1.0 + 0.1 * rng.standard_normal(D)).astype(np.float32), name))
        return name

    def node(op, ins, outs, domain='', **attrs):
        nodes.append(helper.make_node(op, ins, outs, name=f'{op}_{len(nodes)}', domain=domain, **attrs))
        return outs[0]

    inv = 1.0 / 10000 ** (np.arange(HEAD // 2) / (HEAD // 2))
    ang = np.outer(np.arange(MAX_POS), inv)
    inits += [numpy_helper.from_array(np.cos(ang).astype(np.float32), 'cos_cache'),
              numpy_helper.from_array(np.sin(ang).astype(np.float32), 'sin_cache'),
              numpy_helper.from_array(np.array([1], np.int64), 'axis1'),
              numpy_helper.from_array(np.array(1, np.int64), 'one')]
    node('ReduceSum', ['attention_mask', 'axis1'], ['mask_sum'], keepdims=0)
    node('Sub', ['mask_sum', 'one'], ['seqlens64'])
    node('Cast', ['seqlens64'], ['seqlens_k'], to=TensorProto.INT32)
    node('Shape', ['attention_mask'], ['mask_shape'])
    node('Gather', ['mask_shape', 'one'], ['total64'], axis=0)
    node('Cast', ['total64'], ['total_seq_len'], to=TensorProto.INT32)

    node('Gather', [weight('embed', VOCAB, D, scale=1.0), 'input_ids'], ['h0'])
    x = node('SimplifiedLayerNormalization', ['h0', gain('attn_norm.0')], ['n0'], epsilon=1e-6)
    residual = 'h0'
    for i in range(LAYERS):
        q = node('MatMul', [x, weight(f'q.{i}', D, HEADS * HEAD)], [f'q{i}'])
        k = node('MatMul', [x, weight(f'k.{i}', D, KV_HEADS * HEAD)], [f'k{i}'])
        v = node('MatMul', [x, weight(f'v.{i}', D, KV_HEADS * HEAD)], [f'v{i}'])
        a = node('GroupQueryAttention', [q, k, v, f'past_key_values.{i}.key', f'past_key_values.{i}.value', 'seqlens_k',
                                         'total_seq_len', 'cos_cache', 'sin_cache'],
                 [f'attn{i}', f'present.{i}.key', f'present.{i}.value'], domain=MS, num_heads=HEADS,
                 kv_num_heads=KV_HEADS, do_rotary=1)
        o = node('MatMul', [a, weight(f'o.{i}', HEADS * HEAD, D)], [f'o{i}'])
        x = node('SkipSimplifiedLayerNormalization', [o, residual, gain(f'mlp_norm.{i}')],
                 [f'mn{i}', '', '', f'r{i}'], domain=MS, epsilon=1e-6)
        residual = f'r{i}'
        g = node('MatMul', [x, weight(f'gate.{i}', D, FF)], [f'g{i}'])
        u = node('MatMul', [x, weight(f'up.{i}', D, FF)], [f'u{i}'])
        s = node('Sigmoid', [g], [f'sg{i}'])
        silu = node('Mul', [g, s], [f'silu{i}'])
        m = node('Mul', [silu, u], [f'm{i}'])
        d = node('MatMul', [m, weight(f'down.{i}', FF, D)], [f'd{i}'])
        norm = f'attn_norm.{i + 1}' if i + 1 < LAYERS else 'final_norm'
        x = node('SkipSimplifiedLayerNormalization', [d, residual, gain(norm)], [f'an{i}', '', '', f'rr{i}'], domain=MS,
                 epsilon=1e-6)
        residual = f'rr{i}'
    node('MatMul', [x, weight('lm_head', D, VOCAB)], ['logits'])

    kv = [1, KV_HEADS, 'past', HEAD]
    inputs = [helper.make_tensor_value_info('input_ids', TensorProto.INT64, [1, 'seq']),
              helper.make_tensor_value_info('attention_mask', TensorProto.INT64, [1, 'total'])]
    outputs = [helper.make_tensor_value_info('logits', TensorProto.FLOAT, [1, 'seq', VOCAB])]
    for i in range(LAYERS):
        for t in ('key', 'value'):
            inputs.append(helper.make_tensor_value_info(f'past_key_values.{i}.{t}', TensorProto.FLOAT, kv))
            outputs.append(helper.make_tensor_value_info(f'present.{i}.{t}', TensorProto.FLOAT,
                                                         [1, KV_HEADS, 'total', HEAD]))
    graph = helper.make_graph(nodes, 'gqa_decoder', inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid(MS, 1)],
                              producer_name='gqa_decoder_model.py')
    model.ir_version = 8
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, 'gqa_decoder.onnx')
    with open(path, 'wb') as f:
        f.write(model.SerializeToString())
    print(f'wrote {path} ({sum(np.prod(t.dims) for t in inits) / 1e6:.1f}M values)')


if __name__ == '__main__':
    main()
