#!/usr/bin/python3
"""qoperator_from_qdq.py — a QDQ model with some of its units rewritten as the
com.microsoft operators of QOperator-format models, to check spindle against
ONNX Runtime on them inside a real network (no QOperator model of the ONNX
model zoo is needed).

  /usr/bin/python3 bench/models/qoperator_from_qdq.py QDQ.onnx OUT.onnx [--appendix] [--expose N]
  /usr/bin/python3 bench/models/qoperator_from_qdq.py --compare REF_DIR OUT_DIR...

Rewrites:
  - Concat whose inputs all come from DequantizeLinear: DQ(QLinearConcat(...)),
    Y's scale and zero point those of the input of largest scale (the others
    are requantized through ONNX Runtime's tables, that one copied);
  - AveragePool fed by DQ (directly or through a Pad of zeros):
    DQ(QLinearAveragePool(...)) with Y's parameters X's;
  - --appendix: on the first graph output (the logits), Q -> QLinearSoftmax
    (opset 13) and QLinearWhere(Greater(DQ(softmax), 0.0008), softmax, logits)
    as two more uint8 outputs.
The first N (default 3) rewritten quantized tensors become graph outputs too,
so a comparison sees the ops' own bytes. Then, e.g.:

  node tools/ort/reference.js OUT.onnx REF
  build/spindle run OUT.onnx --input input=REF/inputs/input.npy --output-dir RUN --intra 2
  /usr/bin/python3 bench/models/qoperator_from_qdq.py --compare REF RUN

--compare prints, per output, how many integer elements differ (and the
largest difference) or the largest float difference.
"""
import argparse
import glob
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def constant_of(graph, producers, name):
    for init in graph.initializer:
        if init.name == name:
            return numpy_helper.to_array(init)
    node = producers.get(name)
    if node is not None and node.op_type == 'Constant':
        return numpy_helper.to_array(node.attribute[0].t)
    return None


def elem_type(graph, producers, zero_point):
    z = constant_of(graph, producers, zero_point)
    return TensorProto.INT8 if z is not None and z.dtype == np.int8 else TensorProto.UINT8


def rewrite(graph):
    """The rewritten node list and the new quantized tensors (name, element type)."""
    producers = {o: n for n in graph.node for o in n.output}
    nodes, quantized = [], []
    for n in graph.node:
        srcs = [producers.get(i) for i in n.input]
        if n.op_type == 'Concat' and all(s is not None and s.op_type == 'DequantizeLinear' for s in srcs):
            scales = [float(constant_of(graph, producers, s.input[1])) for s in srcs]
            ref = srcs[int(np.argmax(scales))]
            y = n.output[0] + '_q'
            inputs = [ref.input[1], ref.input[2]]
            for s in srcs:
                inputs += [s.input[0], s.input[1], s.input[2]]
            axis = [a.i for a in n.attribute if a.name == 'axis'][0]
            nodes.append(helper.make_node('QLinearConcat', inputs, [y], domain='com.microsoft', axis=axis))
            nodes.append(helper.make_node('DequantizeLinear', [y, ref.input[1], ref.input[2]], [n.output[0]]))
            quantized.append((y, elem_type(graph, producers, ref.input[2])))
            continue
        if n.op_type == 'AveragePool' and srcs[0] is not None:
            dq = srcs[0]
            if dq.op_type == 'Pad' and not constant_of(graph, producers, dq.input[1]).any():
                dq = producers.get(dq.input[0])
            if dq is not None and dq.op_type == 'DequantizeLinear':
                y = n.output[0] + '_q'
                attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
                nodes.append(helper.make_node('QLinearAveragePool', [dq.input[0], dq.input[1], dq.input[2],
                                                                     dq.input[1], dq.input[2]], [y],
                                              domain='com.microsoft', **attrs))
                nodes.append(helper.make_node('DequantizeLinear', [y, dq.input[1], dq.input[2]], [n.output[0]]))
                quantized.append((y, elem_type(graph, producers, dq.input[2])))
                continue
        nodes.append(n)
    return nodes, quantized


def appendix(graph, logits):
    """QLinearSoftmax and QLinearWhere on the logits; their outputs' names."""
    params = [('app_ls', 0.25, np.float32), ('app_lz', 128, np.uint8), ('app_ss', 1 / 8192, np.float32),
              ('app_sz', 0, np.uint8), ('app_th', 0.0008, np.float32), ('app_zs', 0.05, np.float32),
              ('app_zz', 100, np.uint8)]
    graph.initializer.extend(numpy_helper.from_array(np.array(v, t), name) for name, v, t in params)
    return [
        helper.make_node('QuantizeLinear', [logits, 'app_ls', 'app_lz'], ['app_lq']),
        helper.make_node('QLinearSoftmax', ['app_lq', 'app_ls', 'app_lz', 'app_ss', 'app_sz'], ['app_softmax'],
                         domain='com.microsoft', opset=13, axis=-1),
        helper.make_node('DequantizeLinear', ['app_softmax', 'app_ss', 'app_sz'], ['app_sf']),
        helper.make_node('Greater', ['app_sf', 'app_th'], ['app_c']),
        helper.make_node('QLinearWhere', ['app_c', 'app_softmax', 'app_ss', 'app_sz', 'app_lq', 'app_ls', 'app_lz',
                                          'app_zs', 'app_zz'], ['app_where'], domain='com.microsoft'),
    ], [('app_softmax', TensorProto.UINT8), ('app_where', TensorProto.UINT8)]


def compare(ref, runs):
    for f in sorted(glob.glob(os.path.join(ref, 'outputs', '*.npy'))):
        want = np.load(f)
        for run in runs:
            got = np.load(os.path.join(run, os.path.basename(f)))
            name = f'{run}: {os.path.basename(f)}'
            if want.dtype.kind in 'iu':
                d = np.abs(want.astype(np.int64) - got.astype(np.int64))
                print(f'{name}: {int((d != 0).sum())} of {d.size} elements differ, largest difference {int(d.max())}')
            else:
                print(f'{name}: largest difference {float(np.abs(want - got).max())}')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('paths', nargs='+')
    ap.add_argument('--appendix', action='store_true')
    ap.add_argument('--expose', type=int, default=3)
    ap.add_argument('--compare', action='store_true')
    args = ap.parse_args()
    if args.compare:
        compare(args.paths[0], args.paths[1:])
        return
    src, dst = args.paths
    model = onnx.load(src)
    graph = model.graph
    nodes, quantized = rewrite(graph)
    exposed = quantized[:args.expose]
    if args.appendix:
        more, names = appendix(graph, graph.output[0].name)
        nodes += more
        exposed += names
    del graph.node[:]
    graph.node.extend(nodes)
    for name, t in exposed:
        graph.output.append(helper.make_tensor_value_info(name, t, None))
    model.opset_import.append(helper.make_opsetid('com.microsoft', 1))
    onnx.save(model, dst)
    kinds = [n.op_type for n in nodes if n.domain == 'com.microsoft']
    print(f'{dst}: ' + ', '.join(f'{kinds.count(k)} {k}' for k in sorted(set(kinds))) + f'; exposed {[e[0] for e in exposed]}')


if __name__ == '__main__':
    main()
