#!/usr/bin/python3
"""gen_cases.py — one-node models of the default domain at opsets 18-23 (and of
the com.microsoft operators ONNX Runtime GenAI's decoders use, at opset 23),
for checking spindle against ONNX Runtime (tests/opsets/README.md).

  /usr/bin/python3 tests/opsets/gen_cases.py OUT_DIR

Writes OUT_DIR/opsets/<case>/model.onnx, test_data_set_0/input_<i>.pb and
case.json (the inputs' values and the output names, which
tests/opsets/ort_expected.js feeds to ONNX Runtime to write the expected
outputs). Models are written with python3-onnx's helper without its checker
(Debian's onnx 1.12 knows no schema past opset 17). Every operator is
generated at every opset from 18 (or the operator's first) to 23, so each
version of it that ONNX Runtime implements is covered; inputs are seeded.
"""
import json
import os
import shutil
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSETS = range(18, 24)
IR_VERSION = {18: 8, 19: 9, 20: 9, 21: 10, 22: 10, 23: 10}
ELEM = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64, np.int32: TensorProto.INT32,
        np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.bool_: TensorProto.BOOL,
        np.float64: TensorProto.DOUBLE, np.uint32: TensorProto.UINT32, np.uint64: TensorProto.UINT64,
        np.int16: TensorProto.INT16, np.uint16: TensorProto.UINT16}
JS_TYPE = {np.float32: 'float32', np.int64: 'int64', np.int32: 'int32', np.uint8: 'uint8', np.int8: 'int8',
           np.bool_: 'bool', np.float64: 'float64', np.uint32: 'uint32', np.uint64: 'uint64', np.int16: 'int16',
           np.uint16: 'uint16'}

rng = np.random.default_rng(20231123)


def f32(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def ints(*shape, lo=0, hi=10, dtype=np.int64):
    return rng.integers(lo, hi, size=shape).astype(dtype)


def i64(*values):
    return np.array(values, dtype=np.int64)


class Case:
    """One node: op_type, inputs [(name, array or None = absent)], outputs, attributes, first opset."""

    def __init__(self, name, op, inputs, outputs=1, since=18, until=23, consts=(), domain='', functions=(), **attrs):
        self.name, self.op, self.inputs, self.attrs = name, op, inputs, attrs
        self.domain, self.functions = domain, list(functions)  # model-local functions (IR >= 8)
        self.outputs = [f'y{i}' for i in range(outputs)] if isinstance(outputs, int) else outputs
        self.since, self.until = since, until
        self.consts = set(consts)  # inputs written as initializers (axes, pads, shapes...)


def unary_cases():
    cases = []
    floats = ['Abs', 'Neg', 'Sign', 'Relu', 'Exp', 'Floor', 'Ceil', 'Round', 'Sin', 'Cos', 'Tan', 'Atan', 'Sinh',
              'Cosh', 'Asinh', 'Erf', 'Tanh', 'Sigmoid', 'Softplus', 'Softsign', 'HardSwish', 'Identity', 'Mish']
    for op in floats:
        cases.append(Case(op.lower(), op, [('x', f32(2, 3, 4))]))
    for op in ['Sqrt', 'Log', 'Reciprocal', 'Acosh']:
        cases.append(Case(op.lower(), op, [('x', f32(2, 3, 4, lo=1.1, hi=3.0))]))
    for op in ['Asin', 'Acos', 'Atanh']:
        cases.append(Case(op.lower(), op, [('x', f32(2, 3, 4, lo=-0.9, hi=0.9))]))
    cases += [
        Case('leakyrelu', 'LeakyRelu', [('x', f32(2, 3, 4))], alpha=0.2),
        Case('elu', 'Elu', [('x', f32(2, 3, 4))], alpha=0.7),
        Case('selu', 'Selu', [('x', f32(2, 3, 4))]),
        Case('celu', 'Celu', [('x', f32(2, 3, 4))], alpha=1.5),
        Case('hardsigmoid', 'HardSigmoid', [('x', f32(2, 3, 4))], alpha=0.3, beta=0.4),
        Case('thresholdedrelu', 'ThresholdedRelu', [('x', f32(2, 3, 4))], alpha=0.5),
        Case('shrink', 'Shrink', [('x', f32(2, 3, 4))], lambd=0.6, bias=0.1),
        Case('gelu', 'Gelu', [('x', f32(2, 3, 4))], since=20),
        Case('gelu_tanh', 'Gelu', [('x', f32(2, 3, 4))], since=20, approximate='tanh'),
        Case('isnan', 'IsNaN', [('x', np.array([1.0, np.nan, np.inf, -2.0], np.float32))]),
        Case('isinf', 'IsInf', [('x', np.array([1.0, np.nan, np.inf, -np.inf], np.float32))], detect_negative=0),
        Case('not', 'Not', [('x', rng.integers(0, 2, size=(3, 4)).astype(np.bool_))]),
        Case('abs_int32', 'Abs', [('x', ints(3, 4, lo=-9, hi=9, dtype=np.int32))]),
        Case('clip', 'Clip', [('x', f32(2, 3, 4)), ('lo', np.array(-0.5, np.float32)), ('hi', np.array(0.7, np.float32))]),
        Case('clip_int64_min', 'Clip', [('x', ints(3, 4, lo=-9, hi=9)), ('lo', np.array(-2, np.int64))]),
    ]
    return cases


def binary_cases():
    cases = []
    for op in ['Add', 'Sub', 'Mul', 'Div', 'Max', 'Min', 'Sum', 'Mean']:
        cases.append(Case(op.lower(), op, [('a', f32(2, 3, 4)), ('b', f32(3, 1))]))
    for op in ['Add', 'Mul', 'Sub']:
        cases.append(Case(op.lower() + '_int64', op, [('a', ints(2, 3, lo=-9, hi=9)), ('b', ints(3, lo=-9, hi=9))]))
    cases += [
        Case('div_int32', 'Div', [('a', ints(2, 3, lo=-9, hi=9, dtype=np.int32)), ('b', ints(2, 3, lo=1, hi=5, dtype=np.int32))]),
        Case('pow', 'Pow', [('a', f32(2, 3, lo=0.5, hi=2)), ('b', f32(3, lo=-1, hi=2))]),
        Case('mod_fmod', 'Mod', [('a', f32(2, 3)), ('b', f32(2, 3, lo=0.5, hi=2))], fmod=1),
        Case('mod_int', 'Mod', [('a', ints(2, 3, lo=-9, hi=9)), ('b', ints(2, 3, lo=1, hi=5))]),
        Case('prelu', 'PRelu', [('x', f32(2, 3, 4)), ('slope', f32(4))]),
        Case('max_variadic', 'Max', [('a', f32(3, 4)), ('b', f32(4)), ('c', f32(3, 1))]),
        Case('sum_variadic', 'Sum', [('a', f32(3, 4)), ('b', f32(4)), ('c', f32(3, 1))]),
        Case('bitshift_left', 'BitShift', [('a', ints(3, 4, hi=200, dtype=np.uint32)), ('b', ints(4, hi=8, dtype=np.uint32))],
             direction='LEFT'),
        Case('bitshift_right', 'BitShift', [('a', ints(3, 4, hi=200, dtype=np.uint8)), ('b', ints(4, hi=8, dtype=np.uint8))],
             direction='RIGHT'),
    ]
    for op in ['BitwiseAnd', 'BitwiseOr', 'BitwiseXor']:
        cases.append(Case(op.lower(), op, [('a', ints(3, 4, lo=-99, hi=99, dtype=np.int32)), ('b', ints(4, lo=-99, hi=99, dtype=np.int32))]))
        cases.append(Case(op.lower() + '_uint8', op, [('a', ints(3, 4, hi=255, dtype=np.uint8)), ('b', ints(3, 4, hi=255, dtype=np.uint8))]))
    cases.append(Case('bitwisenot', 'BitwiseNot', [('x', ints(3, 4, lo=-99, hi=99, dtype=np.int64))]))
    cases.append(Case('bitwisenot_uint16', 'BitwiseNot', [('x', ints(3, 4, hi=999, dtype=np.uint16))]))
    for op in ['Equal', 'Greater', 'Less', 'GreaterOrEqual', 'LessOrEqual']:
        cases.append(Case(op.lower(), op, [('a', ints(3, 4, hi=4).astype(np.float32)), ('b', ints(4, hi=4).astype(np.float32))]))
    cases.append(Case('equal_int64', 'Equal', [('a', ints(3, 4, hi=3)), ('b', ints(4, hi=3))]))
    b = lambda: rng.integers(0, 2, size=(3, 4)).astype(np.bool_)
    for op in ['And', 'Or', 'Xor']:
        cases.append(Case(op.lower(), op, [('a', b()), ('b', b())]))
    cases.append(Case('where', 'Where', [('c', b()), ('a', f32(3, 4)), ('b', f32(4))]))
    return cases


def reduce_cases():
    cases = []
    ops = ['ReduceSum', 'ReduceMean', 'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceL1', 'ReduceL2', 'ReduceLogSum',
           'ReduceLogSumExp', 'ReduceSumSquare']
    for op in ops:
        x = f32(2, 3, 4, lo=0.2, hi=2.0)
        n = op.lower()
        cases.append(Case(n + '_axes', op, [('x', x), ('axes', i64(1))], consts=['axes']))
        cases.append(Case(n + '_axes_keep0', op, [('x', x), ('axes', i64(0, -1))], consts=['axes'], keepdims=0))
        cases.append(Case(n + '_all', op, [('x', x)]))
        cases.append(Case(n + '_noop', op, [('x', x), ('axes', np.zeros(0, np.int64))], consts=['axes'],
                          noop_with_empty_axes=1))
        cases.append(Case(n + '_axes_runtime', op, [('x', x), ('axes', i64(2))]))
    cases.append(Case('reducemax_int64', 'ReduceMax', [('x', ints(3, 4, lo=-9, hi=9)), ('axes', i64(1))], consts=['axes']))
    cases += [
        Case('argmax', 'ArgMax', [('x', f32(3, 4, 5))], axis=1),
        Case('argmin_last', 'ArgMin', [('x', ints(3, 4, hi=3).astype(np.float32))], axis=-1, keepdims=0,
             select_last_index=1),
        Case('softmax', 'Softmax', [('x', f32(2, 3, 4))]),
        Case('softmax_axis0', 'Softmax', [('x', f32(2, 3, 4))], axis=0),
        Case('logsoftmax', 'LogSoftmax', [('x', f32(2, 3, 4))], axis=1),
        Case('hardmax', 'Hardmax', [('x', f32(2, 3, 4))]),
        Case('cumsum', 'CumSum', [('x', f32(2, 3, 4)), ('axis', np.array(1, np.int64))], exclusive=1, reverse=1),
        Case('topk', 'TopK', [('x', f32(3, 6)), ('k', i64(2))], outputs=2, consts=['k']),
        Case('topk_smallest', 'TopK', [('x', f32(3, 6)), ('k', i64(3))], outputs=2, consts=['k'], largest=0, axis=0),
    ]
    return cases


def tensor_cases():
    x = f32(2, 3, 4)
    cases = [
        Case('reshape', 'Reshape', [('x', x), ('s', i64(4, -1))], consts=['s']),
        Case('reshape_allowzero', 'Reshape', [('x', x), ('s', i64(0, 12))], consts=['s'], allowzero=0),
        Case('flatten', 'Flatten', [('x', x)], axis=2),
        Case('squeeze', 'Squeeze', [('x', f32(2, 1, 4)), ('a', i64(1))], consts=['a']),
        Case('unsqueeze', 'Unsqueeze', [('x', x), ('a', i64(0, -1))], consts=['a']),
        Case('transpose', 'Transpose', [('x', x)], perm=[2, 0, 1]),
        Case('shape', 'Shape', [('x', x)]),
        Case('shape_slice', 'Shape', [('x', x)], start=1, end=-1),
        Case('size', 'Size', [('x', x)]),
        Case('concat', 'Concat', [('a', x), ('b', f32(2, 2, 4))], axis=1),
        Case('split_num_outputs', 'Split', [('x', f32(2, 7))], outputs=3, axis=1, num_outputs=3),
        Case('split_num_outputs_even', 'Split', [('x', f32(6, 2))], outputs=2, num_outputs=2),
        Case('split_input', 'Split', [('x', f32(2, 6)), ('s', i64(1, 5))], outputs=2, consts=['s'], axis=1),
        Case('slice', 'Slice', [('x', x), ('st', i64(0, 1)), ('en', i64(2, 3)), ('ax', i64(1, 2)), ('sp', i64(1, 2))]),
        Case('gather', 'Gather', [('x', x), ('i', i64(2, 0))], axis=1),
        Case('gatherelements', 'GatherElements', [('x', f32(3, 4)), ('i', ints(3, 2, hi=4))], axis=1),
        Case('gathernd', 'GatherND', [('x', x), ('i', i64(0, 1, 1, 2).reshape(2, 2))]),
        Case('scatterelements_max', 'ScatterElements', [('x', f32(3, 4)), ('i', i64(0, 0, 2, 1).reshape(2, 2)),
                                                         ('u', f32(2, 2))], axis=1, reduction='max'),
        Case('scatterelements_min', 'ScatterElements', [('x', f32(3, 4)), ('i', i64(1, 1, 3, 0).reshape(2, 2)),
                                                         ('u', f32(2, 2))], axis=1, reduction='min'),
        Case('scatterelements_add', 'ScatterElements', [('x', f32(3, 4)), ('i', i64(1, 1, 3, 0).reshape(2, 2)),
                                                         ('u', f32(2, 2))], axis=1, reduction='add'),
        Case('scatternd_max', 'ScatterND', [('x', f32(4, 3)), ('i', i64(1, 3, 1).reshape(3, 1)), ('u', f32(3, 3))],
             reduction='max'),
        Case('scatternd_min', 'ScatterND', [('x', f32(4, 3)), ('i', i64(1, 3, 1).reshape(3, 1)), ('u', f32(3, 3))],
             reduction='min'),
        Case('scatternd_mul', 'ScatterND', [('x', f32(4, 3)), ('i', i64(0, 2).reshape(2, 1)), ('u', f32(2, 3))],
             reduction='mul'),
        Case('pad_constant', 'Pad', [('x', f32(2, 3)), ('p', i64(0, 1, 1, 2)), ('v', np.array(0.5, np.float32))],
             consts=['p']),
        Case('pad_reflect', 'Pad', [('x', f32(3, 4)), ('p', i64(1, 2, 2, 1))], consts=['p'], mode='reflect'),
        Case('pad_edge', 'Pad', [('x', f32(3, 4)), ('p', i64(1, 0, 0, 3))], consts=['p'], mode='edge'),
        Case('pad_axes', 'Pad', [('x', f32(2, 3, 4)), ('p', i64(1, 2)), ('v', None), ('a', i64(-1))],
             consts=['p', 'a']),
        Case('pad_axes_two', 'Pad', [('x', f32(2, 3, 4)), ('p', i64(1, 0, 0, 2)), ('v', np.array(-1.0, np.float32)),
                                     ('a', i64(0, 2))], consts=['p', 'a']),
        Case('pad_wrap', 'Pad', [('x', f32(3, 4)), ('p', i64(1, 2, 2, 1))], consts=['p'], mode='wrap', since=19),
        Case('pad_wrap_axes', 'Pad', [('x', f32(2, 3, 4)), ('p', i64(2, 3)), ('v', None), ('a', i64(2))],
             consts=['p', 'a'], mode='wrap', since=19),
        Case('expand', 'Expand', [('x', f32(3, 1)), ('s', i64(2, 3, 4))], consts=['s']),
        Case('tile', 'Tile', [('x', f32(2, 3)), ('r', i64(2, 2))], consts=['r']),
        Case('constantofshape', 'ConstantOfShape', [('s', i64(2, 3))], consts=['s'],
             value=helper.make_tensor('v', TensorProto.FLOAT, [1], [1.5])),
        Case('range', 'Range', [('s', np.array(1.0, np.float32)), ('l', np.array(7.0, np.float32)),
                                ('d', np.array(1.5, np.float32))]),
        Case('cast_to_int64', 'Cast', [('x', f32(3, 4, lo=-5, hi=5))], to=TensorProto.INT64),
        Case('cast_to_float', 'Cast', [('x', ints(3, 4, lo=-5, hi=5, dtype=np.int32))], to=TensorProto.FLOAT),
        Case('castlike', 'CastLike', [('x', f32(3, 4, lo=-5, hi=5)), ('t', ints(1, dtype=np.int32))]),
        Case('depthtospace', 'DepthToSpace', [('x', f32(1, 8, 2, 3))], blocksize=2, mode='CRD'),
        Case('spacetodepth', 'SpaceToDepth', [('x', f32(1, 2, 4, 6))], blocksize=2),
        Case('onehot', 'OneHot', [('i', i64(0, 2, 1)), ('d', i64(4)), ('v', np.array([0, 1], np.float32))]),
        Case('trilu', 'Trilu', [('x', f32(4, 5)), ('k', np.array(1, np.int64))], upper=0),
        Case('nonzero', 'NonZero', [('x', ints(3, 4, hi=2).astype(np.float32))]),
        Case('compress', 'Compress', [('x', f32(3, 4)), ('c', np.array([True, False, True]))], axis=0),
        Case('eyelike', 'EyeLike', [('x', f32(3, 4))], k=1),
        Case('unique', 'Unique', [('x', np.array([2, 1, 1, 3, 4, 3], np.float32))], outputs=4, sorted=1),
        Case('reversesequence', 'ReverseSequence', [('x', f32(4, 3)), ('l', i64(1, 2, 4))], batch_axis=1, time_axis=0),
        Case('dropout', 'Dropout', [('x', f32(3, 4))]),
    ]
    return cases


def nn_cases():
    img = f32(1, 2, 5, 6)
    cases = [
        Case('conv', 'Conv', [('x', img), ('w', f32(3, 2, 3, 3)), ('b', f32(3))], consts=['w', 'b'], pads=[1, 1, 1, 1]),
        Case('conv_strided_dilated', 'Conv', [('x', img), ('w', f32(4, 1, 2, 2))], consts=['w'], group=2,
             strides=[2, 1], dilations=[1, 2]),
        Case('convtranspose', 'ConvTranspose', [('x', img), ('w', f32(2, 3, 3, 3))], consts=['w'], strides=[2, 2]),
        Case('maxpool', 'MaxPool', [('x', img)], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        Case('maxpool_dilated', 'MaxPool', [('x', img)], kernel_shape=[2, 2], dilations=[2, 2]),
        Case('averagepool', 'AveragePool', [('x', img)], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        Case('averagepool_dilated', 'AveragePool', [('x', img)], kernel_shape=[2, 2], dilations=[2, 1], since=19),
        Case('averagepool_dilated_ceil', 'AveragePool', [('x', img)], kernel_shape=[2, 2], strides=[2, 2],
             dilations=[1, 2], ceil_mode=1, since=19),
        Case('lppool', 'LpPool', [('x', img)], kernel_shape=[2, 2], p=2),
        Case('lppool_ceil', 'LpPool', [('x', img)], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        Case('lppool_dilated', 'LpPool', [('x', img)], kernel_shape=[2, 2], dilations=[2, 2], p=1),
        # Inputs narrower than the kernel: the windows are clipped, as ONNX Runtime sizes them.
        Case('maxpool_narrow', 'MaxPool', [('x', f32(1, 2, 5, 1))], kernel_shape=[2, 2], strides=[2, 2]),
        Case('maxpool_narrow_valid', 'MaxPool', [('x', f32(1, 2, 5, 1))], kernel_shape=[1, 3], strides=[1, 3],
             auto_pad='VALID'),
        Case('averagepool_narrow', 'AveragePool', [('x', f32(1, 2, 5, 2))], kernel_shape=[2, 3], strides=[2, 3],
             ceil_mode=1),
        Case('lppool_narrow', 'LpPool', [('x', f32(1, 2, 5, 1))], kernel_shape=[2, 2], strides=[2, 2]),
        Case('globalaveragepool', 'GlobalAveragePool', [('x', img)]),
        Case('globalmaxpool', 'GlobalMaxPool', [('x', img)]),
        Case('globallppool', 'GlobalLpPool', [('x', img)]),
        Case('batchnorm', 'BatchNormalization', [('x', img), ('s', f32(2)), ('b', f32(2)), ('m', f32(2)),
                                                 ('v', f32(2, lo=0.5, hi=2))]),
        Case('instancenorm', 'InstanceNormalization', [('x', img), ('s', f32(2)), ('b', f32(2))]),
        Case('layernorm', 'LayerNormalization', [('x', f32(2, 3, 4)), ('s', f32(4)), ('b', f32(4))]),
        Case('layernorm_axis1', 'LayerNormalization', [('x', f32(2, 3, 4)), ('s', f32(3, 4))], axis=1, epsilon=1e-3),
        Case('groupnorm', 'GroupNormalization', [('x', f32(2, 4, 3, 2)), ('s', f32(2)), ('b', f32(2))], num_groups=2,
             until=20),
        Case('groupnorm_per_channel', 'GroupNormalization', [('x', f32(2, 4, 3, 2)), ('s', f32(4)), ('b', f32(4))],
             num_groups=2, since=21),
        Case('rmsnorm', 'RMSNormalization', [('x', f32(2, 3, 4)), ('s', f32(4))], since=23),
        Case('rmsnorm_axis1', 'RMSNormalization', [('x', f32(2, 3, 4)), ('s', f32(3, 4))], axis=1, epsilon=1e-3, since=23),
        Case('lrn', 'LRN', [('x', img)], size=3),
        Case('matmul', 'MatMul', [('a', f32(2, 3, 4)), ('b', f32(4, 5))]),
        Case('gemm', 'Gemm', [('a', f32(3, 4)), ('b', f32(5, 4)), ('c', f32(5))], transB=1, alpha=0.5, beta=2.0),
        Case('einsum', 'Einsum', [('a', f32(2, 3)), ('b', f32(3, 4))], equation='ij,jk->ik'),
        Case('meanvariancenormalization', 'MeanVarianceNormalization', [('x', img)]),
        Case('resize_linear_scales', 'Resize', [('x', f32(1, 1, 3, 4)), ('roi', None), ('s', np.array([1, 1, 2, 1.5], np.float32))],
             consts=['s'], mode='linear'),
        Case('resize_nearest_sizes', 'Resize', [('x', f32(1, 1, 3, 4)), ('roi', None), ('s', None), ('z', i64(1, 1, 5, 7))],
             consts=['z'], mode='nearest'),
        Case('resize_cubic', 'Resize', [('x', f32(1, 1, 4, 4)), ('roi', None), ('s', np.array([1, 1, 0.75, 1.5], np.float32))],
             consts=['s'], mode='cubic'),
        Case('resize_axes_scales', 'Resize', [('x', f32(1, 2, 3, 4)), ('roi', None), ('s', np.array([2, 0.5], np.float32))],
             consts=['s'], mode='linear', axes=[2, 3]),
        Case('resize_axes_sizes', 'Resize', [('x', f32(1, 2, 3, 4)), ('roi', None), ('s', None), ('z', i64(6))],
             consts=['z'], mode='nearest', axes=[-1]),
        Case('resize_not_larger', 'Resize', [('x', f32(1, 1, 3, 4)), ('roi', None), ('s', None), ('z', i64(7, 7))],
             consts=['z'], mode='linear', axes=[2, 3], keep_aspect_ratio_policy='not_larger'),
        Case('resize_not_smaller', 'Resize', [('x', f32(1, 1, 3, 4)), ('roi', None), ('s', None), ('z', i64(1, 1, 7, 7))],
             consts=['z'], mode='nearest', keep_aspect_ratio_policy='not_smaller'),
        Case('resize_half_pixel_symmetric', 'Resize', [('x', f32(1, 1, 4, 5)), ('roi', None),
                                                       ('s', np.array([1, 1, 1.7, 0.6], np.float32))],
             consts=['s'], mode='linear', coordinate_transformation_mode='half_pixel_symmetric', since=19),
        Case('col2im', 'Col2Im', [('x', f32(2, 3 * 4, 12)), ('i', i64(4, 5)), ('b', i64(2, 2))], consts=['i', 'b']),
        Case('col2im_strided', 'Col2Im', [('x', f32(1, 2 * 6, 9)), ('i', i64(5, 6)), ('b', i64(2, 3))], consts=['i', 'b'],
             strides=[2, 2], dilations=[1, 1], pads=[0, 1, 1, 0]),
        Case('col2im_dilated_padded', 'Col2Im', [('x', f32(1, 2 * 4, 25)), ('i', i64(5, 5)), ('b', i64(2, 2))],
             consts=['i', 'b'], dilations=[2, 2], pads=[1, 1, 1, 1], strides=[1, 1]),
        Case('col2im_3d', 'Col2Im', [('x', f32(1, 2 * 8, 8)), ('i', i64(3, 4, 4)), ('b', i64(2, 2, 2))],
             consts=['i', 'b'], strides=[1, 2, 2], pads=[0, 1, 0, 0, 0, 1]),
        Case('col2im_3d_dilated', 'Col2Im', [('x', f32(2, 1 * 12, 4)), ('i', i64(4, 5, 4)), ('b', i64(1, 3, 4))],
             consts=['i', 'b'], dilations=[2, 1, 1], strides=[2, 2, 1], pads=[0, 0, 0, 0, 0, 0]),
    ]
    # Resize antialias=1: linear and cubic, shrinking and enlarging, scales and sizes.
    aa = [('linear_down', 'linear', 'half_pixel', [1, 1, 0.6, 0.4], None, {}),
          ('linear_down_asym', 'linear', 'asymmetric', [1, 1, 0.5, 0.3], None, {}),
          ('linear_down_align', 'linear', 'align_corners', [1, 1, 0.6, 0.4], None, {}),
          ('linear_down_pytorch', 'linear', 'pytorch_half_pixel', [1, 1, 0.7, 0.25], None, {}),
          ('linear_up', 'linear', 'half_pixel', [1, 1, 1.6, 2.0], None, {}),
          ('linear_mixed', 'linear', 'half_pixel', [1, 1, 0.5, 1.5], None, {}),
          ('linear_sizes', 'linear', 'half_pixel', None, [1, 2, 4, 3], {}),
          ('linear_exclude', 'linear', 'half_pixel', [1, 1, 0.6, 0.4], None, {'exclude_outside': 1}),
          ('cubic_down', 'cubic', 'half_pixel', [1, 1, 0.6, 0.4], None, {}),
          ('cubic_down_asym', 'cubic', 'asymmetric', [1, 1, 0.5, 0.3], None, {}),
          ('cubic_down_align', 'cubic', 'align_corners', [1, 1, 0.6, 0.4], None, {}),
          ('cubic_up', 'cubic', 'half_pixel', [1, 1, 1.6, 2.0], None, {}),
          ('cubic_sizes', 'cubic', 'pytorch_half_pixel', None, [1, 2, 5, 3], {}),
          ('cubic_exclude_a', 'cubic', 'half_pixel', [1, 1, 0.6, 0.4], None, {'exclude_outside': 1, 'cubic_coeff_a': -0.5}),
          ('cubic_a', 'cubic', 'half_pixel', [1, 1, 0.45, 0.8], None, {'cubic_coeff_a': -0.5})]
    for name, mode, coord, scales, sizes, extra in aa:
        inputs = [('x', f32(1, 2, 9, 11)), ('roi', None)]
        if scales is not None:
            inputs.append(('s', np.array(scales, np.float32)))
        else:
            inputs += [('s', None), ('z', i64(*sizes))]
        cases.append(Case('resize_antialias_' + name, 'Resize', inputs, consts=['s', 'z'], mode=mode, antialias=1,
                          coordinate_transformation_mode=coord, **extra))
    cases += [
        Case('resize_antialias_axes', 'Resize', [('x', f32(1, 2, 9, 11)), ('roi', None), ('s', None), ('z', i64(4, 6))],
             consts=['z'], mode='linear', antialias=1, axes=[2, 3], keep_aspect_ratio_policy='not_larger'),
        Case('resize_antialias_3d', 'Resize', [('x', f32(1, 1, 6, 7, 8)), ('roi', None),
                                               ('s', np.array([1, 1, 0.5, 0.6, 0.4], np.float32))],
             consts=['s'], mode='linear', antialias=1),
        # Random operators: ONNX Runtime's draws differ from spindle's; the
        # conformance runner compares their shape, dtype and possible values.
        Case('bernoulli', 'Bernoulli', [('x', f32(3, 4, lo=0.0, hi=1.0))], seed=1.0),
        Case('bernoulli_dtype', 'Bernoulli', [('x', f32(3, 4, lo=0.0, hi=1.0))], dtype=TensorProto.DOUBLE),
        Case('randomuniformlike', 'RandomUniformLike', [('x', f32(2, 5))], low=-1.0, high=2.0, seed=3.0),
        Case('randomnormallike', 'RandomNormalLike', [('x', f32(2, 5))], dtype=TensorProto.DOUBLE),
        Case('randomuniform', 'RandomUniform', [], shape=[3, 2], seed=4.0),
        Case('randomnormal', 'RandomNormal', [], shape=[4], mean=1.0, scale=2.0, dtype=TensorProto.DOUBLE),
        Case('multinomial', 'Multinomial', [('x', f32(2, 4))], sample_size=5, seed=5.0),
        Case('multinomial_int64', 'Multinomial', [('x', f32(3, 4))], sample_size=2, dtype=TensorProto.INT64),
        Case('dropout_training', 'Dropout', [('x', f32(3, 4, 5)), ('r', np.array(0.3, np.float32)),
                                             ('t', np.array(True))], outputs=2, seed=2),
        Case('gridsample', 'GridSample', [('x', f32(1, 2, 4, 5)), ('g', f32(1, 3, 2, 2, lo=-1.1, hi=1.1))],
             mode='linear' , since=20),
        Case('gridsample_16', 'GridSample', [('x', f32(1, 2, 4, 5)), ('g', f32(1, 3, 2, 2, lo=-1.1, hi=1.1))],
             mode='bilinear', until=19),
        Case('gridsample_nearest_border', 'GridSample', [('x', f32(1, 2, 4, 5)), ('g', f32(1, 3, 2, 2, lo=-1.1, hi=1.1))],
             mode='nearest', padding_mode='border', align_corners=1),
        Case('dft', 'DFT', [('x', f32(2, 8, 1))], until=19, axis=1),
        Case('dft_axis_input', 'DFT', [('x', f32(2, 8, 1)), ('n', None), ('a', np.array(1, np.int64))], consts=['a'],
             since=20),
        Case('dft_inverse', 'DFT', [('x', f32(1, 6, 2))], since=20, inverse=1),
        Case('quantizelinear', 'QuantizeLinear', [('x', f32(3, 4)), ('s', np.array(0.05, np.float32)),
                                                  ('z', np.array(128, np.uint8))]),
        Case('dequantizelinear', 'DequantizeLinear', [('x', ints(3, 4, hi=255, dtype=np.uint8)),
                                                      ('s', np.array(0.05, np.float32)), ('z', np.array(100, np.uint8))]),
        Case('dequantizelinear_axis', 'DequantizeLinear', [('x', ints(3, 4, lo=-100, hi=100, dtype=np.int8)),
                                                           ('s', f32(4, lo=0.01, hi=0.1)), ('z', np.zeros(4, np.int8))],
             axis=1),
    ]
    ang = rng.uniform(0, 3, size=(6, 4)).astype(np.float32)
    cases += [
        Case('rotaryembedding', 'RotaryEmbedding', [('x', f32(2, 3, 4, 8)), ('c', np.cos(ang)), ('s', np.sin(ang)),
                                                    ('p', ints(2, 4, hi=6))], since=23),
        Case('rotaryembedding_interleaved', 'RotaryEmbedding', [('x', f32(2, 3, 4, 8)), ('c', np.cos(ang)),
                                                                ('s', np.sin(ang)), ('p', ints(2, 4, hi=6))],
             interleaved=1, since=23),
        Case('rotaryembedding_3d_partial', 'RotaryEmbedding', [('x', f32(2, 4, 24)), ('c', np.cos(ang[:, :2])),
                                                               ('s', np.sin(ang[:, :2])), ('p', ints(2, 4, hi=6))],
             num_heads=2, rotary_embedding_dim=4, since=23),
        Case('rotaryembedding_no_positions', 'RotaryEmbedding', [('x', f32(2, 3, 4, 8)), ('c', np.cos(f32(2, 4, 4))),
                                                                 ('s', np.sin(f32(2, 4, 4)))], since=23),
        Case('attention', 'Attention', [('q', f32(2, 3, 4, 8)), ('k', f32(2, 3, 5, 8)), ('v', f32(2, 3, 5, 6))], since=23),
        Case('attention_gqa_causal', 'Attention', [('q', f32(1, 4, 5, 8)), ('k', f32(1, 2, 5, 8)), ('v', f32(1, 2, 5, 8))],
             is_causal=1, since=23),
        Case('attention_3d_mask', 'Attention', [('q', f32(2, 4, 12)), ('k', f32(2, 6, 6)), ('v', f32(2, 6, 4)),
                                                ('m', f32(4, 6, lo=-3, hi=0))], q_num_heads=2, kv_num_heads=1, since=23),
        Case('attention_bool_mask_scale', 'Attention', [('q', f32(1, 2, 3, 4)), ('k', f32(1, 2, 5, 4)), ('v', f32(1, 2, 5, 4)),
                                                        ('m', np.array([[True, True, False, True, True],
                                                                        [True, False, True, True, False],
                                                                        [False, True, True, True, True]]))],
             scale=0.3, since=23),
        Case('attention_past_present', 'Attention', [('q', f32(1, 2, 2, 4)), ('k', f32(1, 2, 2, 4)), ('v', f32(1, 2, 2, 4)),
                                                     ('m', None), ('pk', f32(1, 2, 3, 4)), ('pv', f32(1, 2, 3, 4))],
             outputs=3, is_causal=1, since=23),
        Case('attention_softcap_qk', 'Attention', [('q', f32(1, 2, 3, 4, lo=-4, hi=4)), ('k', f32(1, 2, 3, 4, lo=-4, hi=4)),
                                                   ('v', f32(1, 2, 3, 4))], outputs=['y0', '', '', 'y3'], softcap=2.0,
             qk_matmul_output_mode=1, since=23),
        Case('affinegrid', 'AffineGrid', [('t', f32(2, 2, 3)), ('z', i64(2, 3, 4, 5))], consts=['z'], since=20),
        Case('affinegrid_align', 'AffineGrid', [('t', f32(2, 2, 3)), ('z', i64(2, 3, 4, 5))], consts=['z'],
             align_corners=1, since=20),
        Case('affinegrid_3d', 'AffineGrid', [('t', f32(1, 3, 4)), ('z', i64(1, 1, 2, 3, 4))], consts=['z'], since=20),
        Case('centercroppad', 'CenterCropPad', [('x', f32(5, 4, 3)), ('z', i64(3, 7, 3))], consts=['z']),
        Case('centercroppad_axes', 'CenterCropPad', [('x', f32(5, 4, 3)), ('z', i64(2, 6))], consts=['z'], axes=[-1, 0]),
    ]
    return cases


def more_cases():
    """Recurrent, quantized, signal, detection, loss and control-flow operators."""
    def branch(name, value):
        out = helper.make_tensor_value_info(name + '_out', TensorProto.FLOAT, [3])
        c = helper.make_node('Constant', [], [name + '_out'], value=helper.make_tensor('v', TensorProto.FLOAT, [3], value))
        return helper.make_graph([c], name, [], [out])

    loop_body = helper.make_graph(
        [helper.make_node('Identity', ['cond_in'], ['cond_out']), helper.make_node('Add', ['v_in', 'v_in'], ['v_out']),
         helper.make_node('Identity', ['v_out'], ['scan_out'])], 'body',
        [helper.make_tensor_value_info('i', TensorProto.INT64, []), helper.make_tensor_value_info('cond_in', TensorProto.BOOL, []),
         helper.make_tensor_value_info('v_in', TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info('cond_out', TensorProto.BOOL, []), helper.make_tensor_value_info('v_out', TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info('scan_out', TensorProto.FLOAT, [2])])
    scan_body = helper.make_graph(
        [helper.make_node('Add', ['s_in', 'x_t'], ['s_out']), helper.make_node('Identity', ['s_out'], ['y_t'])], 'scan',
        [helper.make_tensor_value_info('s_in', TensorProto.FLOAT, [2]), helper.make_tensor_value_info('x_t', TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info('s_out', TensorProto.FLOAT, [2]), helper.make_tensor_value_info('y_t', TensorProto.FLOAT, [2])])
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1],
                       [0, 100, 1, 101]]], np.float32)
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], np.float32)
    return [
        Case('constant', 'Constant', [], value=helper.make_tensor('v', TensorProto.FLOAT, [2, 2], [1, 2, 3, 4])),
        Case('constant_ints', 'Constant', [], value_ints=[1, 2, 3]),
        Case('if', 'If', [('c', np.array(False))], then_branch=branch('then', [1, 2, 3]), else_branch=branch('else', [4, 5, 6])),
        Case('loop', 'Loop', [('m', np.array(3, np.int64)), ('cond', np.array(True)), ('v', f32(2))], outputs=2, body=loop_body),
        Case('scan', 'Scan', [('s', f32(2)), ('x', f32(3, 2))], outputs=2, body=scan_body, num_scan_inputs=1),
        Case('rnn', 'RNN', [('x', f32(3, 2, 4)), ('w', f32(1, 5, 4)), ('r', f32(1, 5, 5)), ('b', f32(1, 10))],
             outputs=2, hidden_size=5),
        Case('gru', 'GRU', [('x', f32(3, 2, 4)), ('w', f32(1, 15, 4)), ('r', f32(1, 15, 5)), ('b', f32(1, 30))],
             outputs=2, hidden_size=5, linear_before_reset=1),
        Case('lstm', 'LSTM', [('x', f32(3, 2, 4)), ('w', f32(2, 20, 4)), ('r', f32(2, 20, 5)), ('b', f32(2, 40))],
             outputs=3, hidden_size=5, direction='bidirectional'),
        Case('convinteger', 'ConvInteger', [('x', ints(1, 2, 4, 4, hi=255, dtype=np.uint8)),
                                            ('w', ints(3, 2, 2, 2, hi=255, dtype=np.uint8)), ('xz', np.array(3, np.uint8))]),
        Case('matmulinteger', 'MatMulInteger', [('a', ints(3, 4, hi=255, dtype=np.uint8)), ('b', ints(4, 2, hi=255, dtype=np.uint8)),
                                                ('az', np.array(12, np.uint8)), ('bz', np.array(7, np.uint8))]),
        Case('qlinearmatmul', 'QLinearMatMul', [('a', ints(3, 4, hi=255, dtype=np.uint8)), ('as', np.array(0.02, np.float32)),
                                                ('az', np.array(120, np.uint8)), ('b', ints(4, 2, hi=255, dtype=np.uint8)),
                                                ('bs', np.array(0.03, np.float32)), ('bz', np.array(130, np.uint8)),
                                                ('ys', np.array(0.05, np.float32)), ('yz', np.array(128, np.uint8))]),
        Case('qlinearconv', 'QLinearConv', [('x', ints(1, 2, 4, 4, hi=255, dtype=np.uint8)), ('xs', np.array(0.02, np.float32)),
                                            ('xz', np.array(120, np.uint8)), ('w', ints(3, 2, 2, 2, hi=255, dtype=np.uint8)),
                                            ('ws', np.array(0.03, np.float32)), ('wz', np.array(130, np.uint8)),
                                            ('ys', np.array(0.2, np.float32)), ('yz', np.array(128, np.uint8))]),
        Case('dynamicquantizelinear', 'DynamicQuantizeLinear', [('x', f32(3, 4))], outputs=3),
        Case('det', 'Det', [('x', f32(2, 3, 3))]),
        Case('hannwindow', 'HannWindow', [('n', np.array(8, np.int64))]),
        Case('hammingwindow', 'HammingWindow', [('n', np.array(7, np.int64))], periodic=0),
        Case('blackmanwindow', 'BlackmanWindow', [('n', np.array(9, np.int64))]),
        Case('melweightmatrix', 'MelWeightMatrix', [('b', np.array(8, np.int64)), ('d', np.array(16, np.int64)),
                                                    ('r', np.array(8000, np.int64)), ('lo', np.array(100.0, np.float32)),
                                                    ('hi', np.array(3000.0, np.float32))]),
        Case('stft', 'STFT', [('x', f32(1, 32, 1)), ('st', np.array(8, np.int64)), ('w', np.hanning(16).astype(np.float32))],
             consts=['st'], onesided=1),
        Case('nonmaxsuppression', 'NonMaxSuppression', [('b', boxes), ('s', scores), ('m', np.array([3], np.int64)),
                                                        ('iou', np.array([0.5], np.float32))]),
        Case('roialign', 'RoiAlign', [('x', f32(1, 2, 6, 6)), ('r', np.array([[0, 0, 4, 4], [1, 1, 5, 3]], np.float32)),
                                      ('i', i64(0, 0))], output_height=2, output_width=3, sampling_ratio=2),
        Case('maxunpool', 'MaxUnpool', [('x', f32(1, 1, 2, 2)), ('i', i64(0, 3, 9, 14).reshape(1, 1, 2, 2))],
             kernel_shape=[2, 2], strides=[2, 2]),
        Case('negativeloglikelihoodloss', 'NegativeLogLikelihoodLoss', [('x', f32(3, 5)), ('t', i64(1, 0, 4))]),
        Case('softmaxcrossentropyloss', 'SoftmaxCrossEntropyLoss', [('x', f32(3, 5)), ('t', i64(1, 0, 4))],
             reduction='sum'),
        Case('tfidfvectorizer', 'TfIdfVectorizer', [('x', i64(1, 2, 3, 2, 1, 4))], mode='TF', min_gram_length=1,
             max_gram_length=2, max_skip_count=0, ngram_counts=[0, 3], ngram_indexes=[0, 1, 2, 3],
             pool_int64s=[1, 2, 4, 2, 1]),
        Case('optionalhaselement', 'OptionalHasElement', [('x', f32(2))]),
        Case('optionalgetelement', 'OptionalGetElement', [('x', f32(2))]),
    ]


def nbits_cases():
    """com.microsoft MatMulNBits (4 bits, uint8 zero points, K not a multiple of the block) at
    accuracy_level 0 (float A) and 4 (A quantized per block to int8), 3 rows, and 40 rows at level 4; constant
    weights."""
    cases = []
    K, N = 200, 37
    for bs in (16, 32, 64, 128):
        kb = (K + bs - 1) // bs
        codes = ints(N, kb, bs, hi=16, dtype=np.uint8)
        b = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
        scales = rng.uniform(0.001, 0.05, size=(N * kb,)).astype(np.float32)
        zp = ints(N * ((kb + 1) // 2), hi=256, dtype=np.uint8)
        for level in (0, 4):
            cases.append(Case(f'matmulnbits_b{bs}_level{level}', 'MatMulNBits',
                              [('a', f32(3, K)), ('b', b), ('s', scales), ('z', zp)], consts=['b', 's', 'z'],
                              since=18, until=18, domain='com.microsoft', K=K, N=N, bits=4, block_size=bs,
                              accuracy_level=level))
        # A prompt's rows at accuracy_level 4: the int8 GEMM.
        cases.append(Case(f'matmulnbits_b{bs}_level4_rows40', 'MatMulNBits',
                          [('a', f32(40, K)), ('b', b), ('s', scales), ('z', zp)], consts=['b', 's', 'z'],
                          since=18, until=18, domain='com.microsoft', K=K, N=N, bits=4, block_size=bs,
                          accuracy_level=4))
    return cases


def dqlstm_cases():
    """com.microsoft DynamicQuantizeLSTM (ONNX Runtime's quantize_dynamic LSTM): 8-bit W [D, I, 4H] and R
    [D, H, 4H] with scales and zero points per direction or per gate unit, as constants (packed when the session
    loads) and as graph inputs; int8 and uint8 weights; forward, reverse, bidirectional with sequence_lens and
    initial states; peepholes, input_forget and clip. Hidden sizes of 6 and 40 (4H of 24 and 160: panels and a
    ragged one)."""
    one = dict(since=23, until=23, domain='com.microsoft')
    cases = []

    def weights(d, k, h, t, per_unit, zp=0):
        w = ints(d, k, 4 * h, lo=-127 if t == np.int8 else 0, hi=128 if t == np.int8 else 256, dtype=t)
        shape = (d, 4 * h) if per_unit else (d,)
        scale = rng.uniform(0.002, 0.02, size=shape).astype(np.float32)
        return w, scale, np.full(shape, zp, t)

    def case(name, d, t_len, b, i, h, t=np.int8, per_unit=False, consts=True, zp=0, extra=(), outputs=3, **attrs):
        x = f32(t_len, b, i, lo=-1.5, hi=1.5)
        w, ws, wz = weights(d, i, h, t, per_unit, zp)
        r, rs, rz = weights(d, h, h, t, per_unit, zp)
        bias = f32(d, 8 * h, lo=-0.5, hi=0.5)
        opt = dict(extra)
        inputs = [('x', x), ('w', w), ('r', r), ('b', bias), ('sl', opt.get('sl')), ('h0', opt.get('h0')),
                  ('c0', opt.get('c0')), ('p', opt.get('p')), ('ws', ws), ('wz', wz), ('rs', rs), ('rz', rz)]
        c = ['w', 'r', 'b', 'ws', 'wz', 'rs', 'rz'] if consts else ['ws', 'wz', 'rs', 'rz']
        cases.append(Case(f'ms_dqlstm_{name}', 'DynamicQuantizeLSTM', inputs, outputs=outputs, consts=c,
                          hidden_size=h, **attrs, **one))

    case('fwd_i8', 1, 7, 2, 5, 6)
    case('fwd_i8_per_unit_h40', 1, 6, 1, 24, 40, per_unit=True)
    case('fwd_i8_inputs', 1, 5, 3, 7, 40, per_unit=True, consts=False)
    case('fwd_u8_zp128', 1, 6, 2, 9, 40, t=np.uint8, zp=128)
    case('reverse_i8', 1, 6, 2, 5, 6, direction='reverse')
    lens = np.array([6, 3, 5], np.int32)
    case('bidi_lens_states', 2, 6, 3, 8, 40, per_unit=True, direction='bidirectional',
         extra=[('sl', lens), ('h0', f32(2, 3, 40, lo=-0.5, hi=0.5)), ('c0', f32(2, 3, 40, lo=-0.5, hi=0.5))])
    case('bidi_lens_no_y', 2, 6, 3, 8, 6, direction='bidirectional', outputs=['', 'y1', 'y2'],
         extra=[('sl', lens)])
    case('peephole_input_forget_clip', 1, 5, 2, 6, 40, extra=[('p', f32(1, 120, lo=-0.5, hi=0.5))], input_forget=1,
         clip=1.5)
    return cases


def with_defaults(function, defaults):
    """A FunctionProto with attribute defaults (attribute_proto, field 11 of IR 9), which Debian's
    onnx 1.12 cannot write: appended in wire format."""
    raw = function.SerializeToString()
    for a in defaults:
        body = a.SerializeToString()
        length, n = b'', len(body)
        while True:
            length += bytes([(n & 0x7f) | (0x80 if n > 0x7f else 0)])
            n >>= 7
            if not n:
                break
        raw += bytes([(11 << 3) | 2]) + length + body
    out = type(function)()
    out.ParseFromString(raw)
    return out


def function_cases():
    """Models calling model-local functions (inlined at load), with attribute references."""
    def ref(name, ref_name, kind):
        a = helper.make_attribute(name, 0.0 if kind == TensorProto.FLOAT else 0)
        a.ClearField('f')
        a.ClearField('i')
        a.ref_attr_name = ref_name
        a.type = {TensorProto.FLOAT: a.FLOAT, TensorProto.INT64: a.INT}[kind]
        return a

    scale = helper.make_node('Constant', [], ['alpha_t'])
    scale.attribute.append(ref('value_float', 'alpha', TensorProto.FLOAT))
    body = [scale, helper.make_node('Mul', ['x', 'alpha_t'], ['t']), helper.make_node('Add', ['t', 'y'], ['z'])]
    scaled_add = lambda opset: helper.make_function('custom', 'ScaledAdd', ['x', 'y'], ['z'], body,
                                                    [helper.make_opsetid('', opset)], ['alpha'])
    softmax = helper.make_node('Softmax', ['x'], ['s'])
    softmax.attribute.append(ref('axis', 'axis', TensorProto.INT64))
    inner_call = helper.make_node('ScaledAdd', ['s', 'x'], ['z'], domain='custom', alpha=2.0)
    nested = lambda opset: helper.make_function('custom', 'SoftmaxPlus', ['x'], ['z'], [softmax, inner_call],
                                                [helper.make_opsetid('', opset), helper.make_opsetid('custom', 1)],
                                                ['axis'])
    cases = []
    for opset in OPSETS:
        cases.append(Case(f'function_scaled_add_{opset}', 'ScaledAdd', [('a', f32(2, 3)), ('b', f32(3))],
                          since=opset, until=opset, domain='custom', functions=[scaled_add(opset)], alpha=0.5))
        with_default = with_defaults(scaled_add(opset), [helper.make_attribute('alpha', 3.0)])
        cases.append(Case(f'function_default_attr_{opset}', 'ScaledAdd', [('a', f32(2, 3)), ('b', f32(3))],
                          since=max(opset, 19), until=opset, domain='custom', functions=[with_default]))
        cases.append(Case(f'function_nested_{opset}', 'SoftmaxPlus', [('a', f32(2, 3, 4))], since=opset, until=opset,
                          domain='custom', functions=[nested(opset), scaled_add(opset)], axis=1))
    return cases


def contrib_cases():
    """com.microsoft operators of decoders exported by ONNX Runtime GenAI's model builder."""
    ms = 'com.microsoft'

    def caches(positions, half):
        ang = np.outer(np.arange(positions), 1.0 / 10000 ** (np.arange(half) / half)).astype(np.float32)
        return np.cos(ang), np.sin(ang)

    def i32(*values):
        return np.array(values, dtype=np.int32)

    c8, s8 = caches(16, 4)   # head size 8
    c2, s2 = caches(16, 2)   # rotary dim 4 of head size 8
    c16, s16 = caches(16, 8)  # head size 16 (ONNX Runtime's rotary GroupQueryAttention needs a multiple
    # of 16; its rotary dim / 2 a multiple of 8: 16 of head size 32 is partial)
    one = dict(since=23, until=23, domain=ms)
    cases = [
        Case('simplifiedlayernorm', 'SimplifiedLayerNormalization', [('x', f32(2, 3, 16)), ('s', f32(16))],
             outputs=2, since=23, epsilon=1e-6),
        Case('ms_skipsimplifiedlayernorm', 'SkipSimplifiedLayerNormalization',
             [('x', f32(2, 3, 16)), ('skip', f32(2, 3, 16)), ('g', f32(16))], outputs=['y0', '', '', 'y3'], **one,
             epsilon=1e-6),
        Case('ms_skipsimplifiedlayernorm_bias', 'SkipSimplifiedLayerNormalization',
             [('x', f32(2, 3, 16)), ('skip', f32(2, 3, 16)), ('g', f32(16)), ('b', f32(16))], outputs=4, **one),
        Case('ms_rotaryembedding', 'RotaryEmbedding', [('x', f32(2, 3, 16)), ('p', ints(2, 3, hi=16)), ('c', c8),
                                                      ('s', s8)], **one, num_heads=2),
        Case('ms_rotaryembedding_interleaved_start', 'RotaryEmbedding', [('x', f32(1, 3, 16)), ('p', i64(5)),
                                                                        ('c', c8), ('s', s8)], **one, interleaved=1),
        Case('ms_rotaryembedding_partial', 'RotaryEmbedding', [('x', f32(2, 3, 16)), ('p', ints(2, 3, hi=16)),
                                                              ('c', c2), ('s', s2)], **one, num_heads=2,
             rotary_embedding_dim=4),
        Case('ms_rotaryembedding_4d', 'RotaryEmbedding', [('x', f32(2, 2, 3, 8)), ('p', ints(2, 3, hi=16)), ('c', c8),
                                                         ('s', s8)], **one),
    ]
    # GroupQueryAttention: 4 query heads sharing 2 key / value heads, head size 8.
    prompt = [('q', f32(2, 5, 32)), ('k', f32(2, 5, 16)), ('v', f32(2, 5, 16)), ('pk', None), ('pv', None),
              ('sl', i32(4, 4)), ('t', np.array(5, np.int32))]
    decode = [('q', f32(2, 1, 32)), ('k', f32(2, 1, 16)), ('v', f32(2, 1, 16)), ('pk', f32(2, 2, 6, 8)),
              ('pv', f32(2, 2, 6, 8)), ('sl', i32(6, 4)), ('t', np.array(7, np.int32))]
    step3 = [('q', f32(1, 3, 32)), ('k', f32(1, 3, 16)), ('v', f32(1, 3, 16)), ('pk', f32(1, 2, 4, 8)),
             ('pv', f32(1, 2, 4, 8)), ('sl', i32(6)), ('t', np.array(7, np.int32))]
    gqa = dict(outputs=3, num_heads=4, kv_num_heads=2, **one)
    cases += [
        Case('ms_gqa_prompt', 'GroupQueryAttention', prompt, **gqa),
        Case('ms_gqa_decode', 'GroupQueryAttention', decode, **gqa),
        Case('ms_gqa_three_new_tokens', 'GroupQueryAttention', step3, **gqa),
        Case('ms_gqa_rotary', 'GroupQueryAttention',
             [('q', f32(2, 1, 64)), ('k', f32(2, 1, 32)), ('v', f32(2, 1, 32)), ('pk', f32(2, 2, 6, 16)),
              ('pv', f32(2, 2, 6, 16)), ('sl', i32(6, 4)), ('t', np.array(7, np.int32)), ('c', c16), ('s', s16)],
             do_rotary=1, **gqa),
        Case('ms_gqa_rotary_interleaved_partial', 'GroupQueryAttention',
             [('q', f32(1, 3, 128)), ('k', f32(1, 3, 64)), ('v', f32(1, 3, 64)), ('pk', f32(1, 2, 4, 32)),
              ('pv', f32(1, 2, 4, 32)), ('sl', i32(6)), ('t', np.array(7, np.int32)), ('c', c16), ('s', s16)],
             do_rotary=1, rotary_interleaved=1, **gqa),
        Case('ms_gqa_packed_prompt_rotary', 'GroupQueryAttention',
             [('qkv', f32(1, 5, 128)), ('k', None), ('v', None), ('pk', None), ('pv', None), ('sl', i32(4)),
              ('t', np.array(5, np.int32)), ('c', c16), ('s', s16)], do_rotary=1, **gqa),
        Case('ms_gqa_local_window', 'GroupQueryAttention', step3, local_window_size=2, **gqa),
        Case('ms_gqa_softcap', 'GroupQueryAttention', step3, softcap=1.5, **gqa),
        Case('ms_gqa_scale', 'GroupQueryAttention', step3, scale=0.5, **gqa),
        Case('ms_gqa_mha', 'GroupQueryAttention',
             [('q', f32(1, 2, 16)), ('k', f32(1, 2, 16)), ('v', f32(1, 2, 16)), ('pk', f32(1, 2, 3, 8)),
              ('pv', f32(1, 2, 3, 8)), ('sl', i32(4)), ('t', np.array(5, np.int32))], outputs=3, num_heads=2,
             kv_num_heads=2, **one),
    ]
    return cases


def qoperator_cases():
    """com.microsoft operators of ONNX Runtime's QOperator-format models: QLinearConcat, QLinearAveragePool,
    QLinearSoftmax, QLinearWhere, on uint8 and int8 (scales and zero points as graph inputs, so ONNX Runtime
    builds its tables at run time, and as initializers, so it builds them when the session loads)."""
    one = dict(since=23, until=23, domain='com.microsoft')

    def q(t, *shape):
        return ints(*shape, lo=-128 if t == np.int8 else 0, hi=128 if t == np.int8 else 256, dtype=t)

    def sc(v):
        return np.array(v, np.float32)

    def zp(t, v):
        return np.array(v, t)

    cases = []
    for t, tn in ((np.uint8, 'u8'), (np.int8, 'i8')):
        z = (lambda u, i: zp(t, u if t == np.uint8 else i))
        # Three inputs of different scales on a middle axis (the third with Y's parameters: copied).
        cat = [('ys', sc(0.05)), ('yz', z(128, -3)), ('x0', q(t, 2, 3, 4)), ('s0', sc(0.02)), ('z0', z(120, 5)),
               ('x1', q(t, 2, 5, 4)), ('s1', sc(0.11)), ('z1', z(7, -100)), ('x2', q(t, 2, 1, 4)), ('s2', sc(0.05)),
               ('z2', z(128, -3))]
        cases.append(Case(f'ms_qlinearconcat_{tn}_axis1', 'QLinearConcat', cat, axis=1, **one))
        cases.append(Case(f'ms_qlinearconcat_{tn}_const', 'QLinearConcat', cat, axis=1,
                          consts=['ys', 'yz', 's0', 'z0', 's1', 'z1', 's2', 'z2'], **one))
        neg = [('ys', sc(0.3)), ('yz', z(3, 0)), ('x0', q(t, 2, 3, 2)), ('s0', sc(0.01)), ('z0', z(200, 60)),
               ('x1', q(t, 2, 3, 5)), ('s1', sc(0.5)), ('z1', z(100, -20)), ('x2', q(t, 2, 3, 1)), ('s2', sc(1.7)),
               ('z2', z(0, 127))]
        cases.append(Case(f'ms_qlinearconcat_{tn}_axis_neg1', 'QLinearConcat', neg, axis=-1, **one))
        cases.append(Case(f'ms_qlinearconcat_{tn}_axis_neg3', 'QLinearConcat',
                          [('ys', sc(0.04)), ('yz', z(10, 1)), ('x0', q(t, 1, 3, 2)), ('s0', sc(0.03)),
                           ('z0', z(131, -9)), ('x1', q(t, 2, 3, 2)), ('s1', sc(0.06)), ('z1', z(90, 12)),
                           ('x2', q(t, 3, 3, 2)), ('s2', sc(0.02)), ('z2', z(140, -40))], axis=-3, **one))

        # QLinearAveragePool: x, x_scale, x_zero_point, y_scale, y_zero_point.
        def pool(x):
            return [('x', x), ('xs', sc(0.07)), ('xz', z(118, -6)), ('ps', sc(0.05)), ('pz', z(125, 4))]
        for cip in (0, 1):
            cases.append(Case(f'ms_qlinearavgpool_{tn}_pads_strides_cip{cip}', 'QLinearAveragePool',
                              pool(q(t, 2, 3, 7, 8)), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                              count_include_pad=cip, **one))
            cases.append(Case(f'ms_qlinearavgpool_{tn}_ceil_cip{cip}', 'QLinearAveragePool', pool(q(t, 1, 2, 7, 7)),
                              kernel_shape=[2, 3], strides=[2, 2], pads=[0, 1, 1, 0], ceil_mode=1,
                              count_include_pad=cip, **one))
            cases.append(Case(f'ms_qlinearavgpool_{tn}_nhwc_cip{cip}', 'QLinearAveragePool', pool(q(t, 2, 6, 7, 5)),
                              kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1], channels_last=1,
                              count_include_pad=cip, **one))
            cases.append(Case(f'ms_qlinearavgpool_{tn}_nhwc_ceil_cip{cip}', 'QLinearAveragePool',
                              pool(q(t, 1, 7, 6, 4)), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 0],
                              ceil_mode=1, channels_last=1, count_include_pad=cip, **one))
            cases.append(Case(f'ms_qlinearavgpool_{tn}_3d_cip{cip}', 'QLinearAveragePool', pool(q(t, 1, 2, 4, 5, 6)),
                              kernel_shape=[2, 3, 2], strides=[2, 2, 2], pads=[1, 0, 1, 0, 1, 1],
                              count_include_pad=cip, **one))
        cases.append(Case(f'ms_qlinearavgpool_{tn}_1d_same_upper', 'QLinearAveragePool', pool(q(t, 2, 3, 9)),
                          kernel_shape=[4], strides=[2], auto_pad='SAME_UPPER', **one))
        cases.append(Case(f'ms_qlinearavgpool_{tn}_same_lower_nhwc', 'QLinearAveragePool', pool(q(t, 1, 5, 6, 3)),
                          kernel_shape=[2, 3], auto_pad='SAME_LOWER', channels_last=1, count_include_pad=1, **one))
        cases.append(Case(f'ms_qlinearavgpool_{tn}_1d_nhwc', 'QLinearAveragePool', pool(q(t, 2, 9, 5)),
                          kernel_shape=[3], strides=[2], pads=[1, 2], channels_last=1, **one))
        cases.append(Case(f'ms_qlinearavgpool_{tn}_3d_nhwc', 'QLinearAveragePool', pool(q(t, 1, 4, 5, 6, 3)),
                          kernel_shape=[3, 2, 2], strides=[1, 2, 2], pads=[1, 1, 0, 1, 0, 1], ceil_mode=1,
                          channels_last=1, count_include_pad=1, **one))
        cases.append(Case(f'ms_qlinearavgpool_{tn}_whole', 'QLinearAveragePool', pool(q(t, 2, 3, 4, 5)),
                          kernel_shape=[4, 5], **one))
        cases.append(Case(f'ms_qlinearavgpool_{tn}_whole_nhwc', 'QLinearAveragePool', pool(q(t, 2, 4, 5, 9)),
                          kernel_shape=[4, 5], channels_last=1, **one))

        # QLinearSoftmax: X, X_scale, x_zero_point, y_scale, y_zero_point; the output as quantized to 1/256.
        sm_x = q(t, 2, 3, 10)
        sm_x[0, 0, 3] = 127 if t == np.int8 else 255  # one dominant value: a share of ~1
        sm = [('x', sm_x), ('xs', sc(0.08)), ('xz', z(128, 0)), ('ys', sc(1 / 256)), ('yz', z(0, -128))]
        for opset in (12, 13):
            cases.append(Case(f'ms_qlinearsoftmax_{tn}_last_opset{opset}', 'QLinearSoftmax', sm, axis=-1, opset=opset,
                              **one))
            cases.append(Case(f'ms_qlinearsoftmax_{tn}_axis1_opset{opset}', 'QLinearSoftmax',
                              [('x', q(t, 2, 4, 5)), ('xs', sc(0.2)), ('xz', z(100, 3)), ('ys', sc(0.004)),
                               ('yz', z(2, -120))], axis=1, opset=opset, **one))
        cases.append(Case(f'ms_qlinearsoftmax_{tn}_const', 'QLinearSoftmax', sm, axis=-1, opset=13,
                          consts=['xs', 'xz', 'ys', 'yz'], **one))
        cases.append(Case(f'ms_qlinearsoftmax_{tn}_default_axis_opset11', 'QLinearSoftmax',
                          [('x', q(t, 3, 2, 6)), ('xs', sc(0.05)), ('xz', z(128, 0)), ('ys', sc(1 / 255)),
                           ('yz', z(0, -128))], opset=11, **one))

        # QLinearWhere: condition, X, x_scale, x_zero_point, Y, y_scale, y_zero_point, z_scale, z_zero_point.
        cases.append(Case(f'ms_qlinearwhere_{tn}_broadcast', 'QLinearWhere',
                          [('c', rng.integers(0, 2, size=(2, 1, 4)).astype(np.bool_)), ('x', q(t, 1, 3, 1)),
                           ('xs', sc(0.03)), ('xz', z(140, 10)), ('y', q(t, 4)), ('ys', sc(0.09)), ('yz', z(60, -50)),
                           ('zs', sc(0.05)), ('zz', z(128, 0))], **one))
        cases.append(Case(f'ms_qlinearwhere_{tn}_scalar_copy', 'QLinearWhere',
                          [('c', rng.integers(0, 2, size=(3, 4)).astype(np.bool_)), ('x', q(t)),
                           ('xs', sc(0.05)), ('xz', z(128, 0)), ('y', q(t, 1, 4)), ('ys', sc(0.02)), ('yz', z(3, -3)),
                           ('zs', sc(0.05)), ('zz', z(128, 0))], consts=['xs', 'xz', 'ys', 'yz', 'zs', 'zz'], **one))

        # Larger inputs, and scales whose quotients fall on exact halves (rounded to even).
        cases.append(Case(f'ms_qlinearconcat_{tn}_ties', 'QLinearConcat',
                          [('ys', sc(1.0)), ('yz', z(100, -7)), ('x0', q(t, 3, 16, 5)), ('s0', sc(0.5)),
                           ('z0', z(127, 1)), ('x1', q(t, 3, 16, 7)), ('s1', sc(0.25)), ('z1', z(3, -2)),
                           ('x2', q(t, 3, 16, 2)), ('s2', sc(1.5)), ('z2', z(250, 100))], axis=2, **one))
        cases.append(Case(f'ms_qlinearavgpool_{tn}_ties', 'QLinearAveragePool',
                          [('x', q(t, 1, 4, 9, 9)), ('xs', sc(1.0)), ('xz', z(0, 0)), ('ps', sc(1.0)), ('pz', z(0, 0))],
                          kernel_shape=[2, 2], pads=[1, 1, 1, 1], **one))
        cases.append(Case(f'ms_qlinearavgpool_{tn}_large', 'QLinearAveragePool', pool(q(t, 2, 8, 17, 19)),
                          kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], **one))
        cases.append(Case(f'ms_qlinearavgpool_{tn}_large_nhwc', 'QLinearAveragePool', pool(q(t, 2, 17, 19, 19)),
                          kernel_shape=[5, 3], strides=[2, 1], pads=[2, 1, 2, 1], channels_last=1,
                          count_include_pad=1, **one))
        for xsv in (0.02, 0.3):
            cases.append(Case(f'ms_qlinearsoftmax_{tn}_large_xs{xsv}', 'QLinearSoftmax',
                              [('x', q(t, 4, 16, 64)), ('xs', sc(xsv)), ('xz', z(128, 0)), ('ys', sc(1 / 256)),
                               ('yz', z(0, -128))], axis=-1, opset=13, **one))
        cases.append(Case(f'ms_qlinearsoftmax_{tn}_wide_opset12', 'QLinearSoftmax',
                          [('x', q(t, 3, 40, 50)), ('xs', sc(0.01)), ('xz', z(128, 0)), ('ys', sc(1 / 256)),
                           ('yz', z(0, -128))], axis=1, opset=12, **one))
        cases.append(Case(f'ms_qlinearsoftmax_{tn}_axis0_opset13', 'QLinearSoftmax',
                          [('x', q(t, 30, 3, 7)), ('xs', sc(0.1)), ('xz', z(128, 0)), ('ys', sc(1 / 200)),
                           ('yz', z(10, -100))], axis=0, opset=13, **one))
        cases.append(Case(f'ms_qlinearwhere_{tn}_large', 'QLinearWhere',
                          [('c', rng.integers(0, 2, size=(4, 1, 6, 1)).astype(np.bool_)), ('x', q(t, 5, 1, 8)),
                           ('xs', sc(0.5)), ('xz', z(3, 3)), ('y', q(t, 4, 5, 1, 8)), ('ys', sc(0.25)),
                           ('yz', z(200, -77)), ('zs', sc(1.0)), ('zz', z(128, 0))], **one))
    return cases


def qcontrib_cases():
    """com.microsoft operators ONNX Runtime's quantization tool writes into models (QDQ conversions and
    quantize_dynamic): QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearSigmoid, QLinearLeakyRelu, QGemm,
    DynamicQuantizeMatMul, MatMulIntegerToFloat, and com.microsoft Gelu; uint8 and int8, scales and zero points as
    graph inputs and as initializers, broadcasting, per-column weight scales."""
    one = dict(since=23, until=23, domain='com.microsoft')

    def q(t, *shape):
        return ints(*shape, lo=-128 if t == np.int8 else 0, hi=128 if t == np.int8 else 256, dtype=t)

    def sc(v):
        return np.array(v, np.float32)

    cases = []
    for t, tn in ((np.uint8, 'u8'), (np.int8, 'i8')):
        def z(u, i):
            return np.array(u if t == np.uint8 else i, t)
        # QLinearAdd / QLinearMul: A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point.
        for op, cs in (('QLinearAdd', 0.061), ('QLinearMul', 0.37)):
            low = op.lower()
            same = [('a', q(t, 2, 3, 8)), ('as', sc(0.043)), ('az', z(121, -7)), ('b', q(t, 2, 3, 8)),
                    ('bs', sc(0.029)), ('bz', z(133, 9)), ('cs', sc(cs)), ('cz', z(117, 3))]
            cases.append(Case(f'ms_{low}_{tn}', op, same, **one))
            cases.append(Case(f'ms_{low}_{tn}_const', op, same, consts=['as', 'az', 'bs', 'bz', 'cs', 'cz'], **one))
            cases.append(Case(f'ms_{low}_{tn}_broadcast', op,
                              [('a', q(t, 2, 1, 5, 7)), ('as', sc(0.021)), ('az', z(100, -20)), ('b', q(t, 3, 1, 7)),
                               ('bs', sc(0.09)), ('bz', z(140, 12)), ('cs', sc(cs * 1.7)), ('cz', z(128, 0))],
                              consts=['as', 'az', 'bs', 'bz', 'cs', 'cz'], **one))
            cases.append(Case(f'ms_{low}_{tn}_scalar_b', op,
                              [('a', q(t, 4, 33)), ('as', sc(0.05)), ('az', z(128, 0)), ('b', q(t)), ('bs', sc(0.2)),
                               ('bz', z(110, -18)), ('cs', sc(cs)), ('cz', z(90, -40))], **one))
            cases.append(Case(f'ms_{low}_{tn}_large', op,
                              [('a', q(t, 3, 16, 70)), ('as', sc(0.013)), ('az', z(127, -1)), ('b', q(t, 16, 70)),
                               ('bs', sc(0.017)), ('bz', z(129, 1)), ('cs', sc(cs * 0.8)), ('cz', z(125, -2))],
                              consts=['as', 'az', 'bs', 'bz', 'cs', 'cz'], **one))
        # QLinearGlobalAveragePool: X, x_scale, x_zero_point, y_scale, y_zero_point.
        for cl in (0, 1):
            shape = (2, 5, 6, 7) if cl == 0 else (2, 6, 7, 5)
            cases.append(Case(f'ms_qlinearglobalavgpool_{tn}_cl{cl}', 'QLinearGlobalAveragePool',
                              [('x', q(t, *shape)), ('xs', sc(0.07)), ('xz', z(118, -6)), ('ys', sc(0.031)),
                               ('yz', z(125, 4))], channels_last=cl, **one))
            cases.append(Case(f'ms_qlinearglobalavgpool_{tn}_cl{cl}_large', 'QLinearGlobalAveragePool',
                              [('x', q(t, 1, 64, 7, 7) if cl == 0 else q(t, 1, 7, 7, 64)), ('xs', sc(0.02)),
                               ('xz', z(128, 0)), ('ys', sc(0.011)), ('yz', z(120, -9))],
                              consts=['xs', 'xz', 'ys', 'yz'], channels_last=cl, **one))
        # QLinearSigmoid / QLinearLeakyRelu: X, X_scale, X_zero_point, Y_scale, Y_zero_point.
        every = np.arange(-128, 128).astype(t) if t == np.int8 else np.arange(256).astype(t)
        for op, ys, yz, attrs in (('QLinearSigmoid', 1 / 256, z(0, -128), {}),
                                  ('QLinearLeakyRelu', 0.043, z(100, -30), {'alpha': 0.13})):
            low = op.lower()
            inputs = [('x', every.reshape(4, 64)), ('xs', sc(0.047)), ('xz', z(131, 3)), ('ys', sc(ys)), ('yz', yz)]
            cases.append(Case(f'ms_{low}_{tn}', op, inputs, **attrs, **one))
            cases.append(Case(f'ms_{low}_{tn}_const', op, inputs, consts=['xs', 'xz', 'ys', 'yz'], **attrs, **one))
    # QGemm: A, a_scale, a_zero_point, B, b_scale, b_zero_point, C (int32), y_scale, y_zero_point; uint8 A.
    for tb, tbn in ((np.int8, 's8'), (np.uint8, 'u8')):
        bz_col = np.array(np.full(6, 3 if tb == np.int8 else 128), tb)
        gemm = [('a', q(np.uint8, 5, 9)), ('as', sc(0.031)), ('az', np.array(117, np.uint8)), ('b', q(tb, 9, 6)),
                ('bs', sc(0.017)), ('bz', np.array(0 if tb == np.int8 else 128, tb)),
                ('c', ints(6, lo=-900, hi=900, dtype=np.int32)), ('ys', sc(0.21)), ('yz', np.array(120, np.uint8))]
        cases.append(Case(f'ms_qgemm_u8{tbn}_quantized', 'QGemm', gemm, consts=['b', 'bs', 'bz', 'c'], **one))
        cases.append(Case(f'ms_qgemm_u8{tbn}_float', 'QGemm', gemm[:7], consts=['b', 'bs', 'bz', 'c'], **one))
        cases.append(Case(f'ms_qgemm_u8{tbn}_transb_per_column_alpha', 'QGemm',
                          [('a', q(np.uint8, 7, 12)), ('as', sc(0.02)), ('az', np.array(128, np.uint8)),
                           ('b', q(tb, 6, 12)), ('bs', rng.uniform(0.005, 0.03, size=6).astype(np.float32)),
                           ('bz', bz_col), ('c', ints(7, 6, lo=-500, hi=500, dtype=np.int32)), ('ys', sc(0.3)),
                           ('yz', np.array(90, np.uint8))], consts=['b', 'bs', 'bz'], transB=1, alpha=0.75, **one))
        cases.append(Case(f'ms_qgemm_u8{tbn}_transa_no_c', 'QGemm',
                          [('a', q(np.uint8, 12, 4)), ('as', sc(0.02)), ('az', np.array(100, np.uint8)),
                           ('b', q(tb, 12, 33)), ('bs', sc(0.011)), ('bz', np.array(0 if tb == np.int8 else 128, tb)),
                           ('c', None), ('ys', sc(0.4)), ('yz', np.array(128, np.uint8))], consts=['b', 'bs', 'bz'],
                          transA=1, **one))
    # DynamicQuantizeMatMul: A (float), B, b_scale, b_zero_point, bias.
    for tb, tbn in ((np.int8, 's8'), (np.uint8, 'u8')):
        zero = 0 if tb == np.int8 else 128
        cases.append(Case(f'ms_dynamicquantizematmul_{tbn}', 'DynamicQuantizeMatMul',
                          [('a', f32(3, 5, 24)), ('b', q(tb, 24, 10)), ('bs', sc([0.013])),
                           ('bz', np.array([zero], tb))], consts=['b', 'bs', 'bz'], **one))
        cases.append(Case(f'ms_dynamicquantizematmul_{tbn}_per_column_bias', 'DynamicQuantizeMatMul',
                          [('a', f32(7, 40, lo=-3.0, hi=1.0)), ('b', q(tb, 40, 33)),
                           ('bs', rng.uniform(0.004, 0.02, size=33).astype(np.float32)),
                           ('bz', np.array(rng.integers(zero - 5, zero + 5, size=33), tb)), ('bias', f32(33))],
                          consts=['b', 'bs', 'bz', 'bias'], **one))
        cases.append(Case(f'ms_dynamicquantizematmul_{tbn}_inputs', 'DynamicQuantizeMatMul',
                          [('a', f32(2, 16)), ('b', q(tb, 16, 8)), ('bs', sc([0.02])), ('bz', None),
                           ('bias', f32(8))], **one))
    # MatMulIntegerToFloat: A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias.
    for tb, tbn in ((np.int8, 's8'), (np.uint8, 'u8')):
        zero = 0 if tb == np.int8 else 128
        cases.append(Case(f'ms_matmulintegertofloat_u8{tbn}', 'MatMulIntegerToFloat',
                          [('a', q(np.uint8, 2, 6, 20)), ('b', q(tb, 20, 9)), ('as', sc(0.025)), ('bs', sc(0.012)),
                           ('az', np.array(119, np.uint8)), ('bz', np.array(zero, tb)), ('bias', f32(9))],
                          consts=['b', 'bs', 'bz', 'bias'], **one))
        cases.append(Case(f'ms_matmulintegertofloat_u8{tbn}_per_column', 'MatMulIntegerToFloat',
                          [('a', q(np.uint8, 5, 37)), ('b', q(tb, 37, 21)), ('as', sc(0.03)),
                           ('bs', rng.uniform(0.004, 0.02, size=21).astype(np.float32)), ('az', np.array(128, np.uint8)),
                           ('bz', np.array(rng.integers(zero - 4, zero + 4, size=21), tb))],
                          consts=['b', 'bs', 'bz'], **one))
    cases.append(Case('ms_gelu', 'Gelu', [('x', f32(3, 4, 17, lo=-5.0, hi=5.0))], **one))
    # QLinearAdd with A one value (ONNX Runtime swaps the operands) and with B one value per channel plane.
    for t, tn in ((np.uint8, 'u8'), (np.int8, 'i8')):
        def zq(u, i):
            return np.array(u if t == np.uint8 else i, t)
        cases.append(Case(f'ms_qlinearadd_{tn}_scalar_a', 'QLinearAdd',
                          [('a', q(t, 1)), ('as', sc(0.3)), ('az', zq(101, 7)), ('b', q(t, 5, 40)), ('bs', sc(0.021)),
                           ('bz', zq(135, -4)), ('cs', sc(0.057)), ('cz', zq(128, 0))], **one))
        cases.append(Case(f'ms_qlinearadd_{tn}_per_channel', 'QLinearAdd',
                          [('a', q(t, 2, 6, 5, 9)), ('as', sc(0.019)), ('az', zq(126, 2)), ('b', q(t, 1, 6, 1, 1)),
                           ('bs', sc(0.044)), ('bz', zq(130, -1)), ('cs', sc(0.033)), ('cz', zq(122, 5))],
                          consts=['b', 'as', 'az', 'bs', 'bz', 'cs', 'cz'], **one))
    cases.append(Case('ms_qgemm_u8s8_c_per_row', 'QGemm',
                      [('a', q(np.uint8, 6, 10)), ('as', sc(0.025)), ('az', np.array(120, np.uint8)),
                       ('b', q(np.int8, 10, 13)), ('bs', sc(0.013)), ('bz', np.array(0, np.int8)),
                       ('c', ints(6, 1, lo=-700, hi=700, dtype=np.int32)), ('ys', sc(0.17)),
                       ('yz', np.array(128, np.uint8))], consts=['b', 'bs', 'bz'], **one))
    return cases


def all_cases():
    return (unary_cases() + binary_cases() + reduce_cases() + tensor_cases() + nn_cases() + more_cases() +
            function_cases() + contrib_cases() + nbits_cases() + qoperator_cases() + dqlstm_cases() +
            qcontrib_cases())


def json_value(v):
    """int64 as text (JavaScript numbers are doubles); NaN and infinities as JavaScript spells them."""
    if isinstance(v, float) and not np.isfinite(v):
        return 'NaN' if np.isnan(v) else ('Infinity' if v > 0 else '-Infinity')
    return str(v) if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53 else v


def write_case(root, case, opset):
    name = f'test_{case.name}' if case.functions else f'test_{case.name}_opset{opset}'
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, 'test_data_set_0'))
    graph_inputs, inits, node_inputs, feeds = [], [], [], []
    for in_name, value in case.inputs:
        if value is None:
            node_inputs.append('')
            continue
        node_inputs.append(in_name)
        if in_name in case.consts:
            inits.append(numpy_helper.from_array(value, in_name))
            continue
        graph_inputs.append(helper.make_tensor_value_info(in_name, ELEM[value.dtype.type], list(value.shape)))
        feeds.append((in_name, value))
    while node_inputs and node_inputs[-1] == '':
        node_inputs.pop()
    node = helper.make_node(case.op, node_inputs, case.outputs, name=case.name, domain=case.domain, **case.attrs)
    outputs = [helper.make_value_info(o, helper.TypeProto()) for o in case.outputs if o]
    graph = helper.make_graph([node], case.name, graph_inputs, outputs, initializer=inits)
    imports = [helper.make_opsetid('', opset)] + ([helper.make_opsetid(case.domain, 1)] if case.domain else [])
    model = helper.make_model(graph, opset_imports=imports, producer_name='gen_cases.py', functions=case.functions)
    model.ir_version = IR_VERSION[opset]
    with open(os.path.join(d, 'model.onnx'), 'wb') as f:
        f.write(model.SerializeToString())
    spec = {'op': case.op, 'opset': opset, 'inputs': [], 'outputs': [o for o in case.outputs if o]}
    for i, (in_name, value) in enumerate(feeds):
        with open(os.path.join(d, 'test_data_set_0', f'input_{i}.pb'), 'wb') as f:
            f.write(numpy_helper.from_array(value, in_name).SerializeToString())
        data = value.reshape(-1).tolist()
        spec['inputs'].append({'name': in_name, 'type': JS_TYPE[value.dtype.type], 'dims': list(value.shape),
                               'data': [json_value(v) for v in data]})
    with open(os.path.join(d, 'case.json'), 'w') as f:
        json.dump(spec, f)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    root = os.path.join(sys.argv[1], 'opsets')
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    n = 0
    for case in all_cases():
        for opset in OPSETS:
            if case.since <= opset <= case.until:
                write_case(root, case, opset)
                n += 1
    print(f'{n} cases in {root}')


if __name__ == '__main__':
    main()
