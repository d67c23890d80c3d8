#!/usr/bin/env bash
# Hostile-input probes of issue 11, run against the `spindle` command line
# tool: each probe builds a small hostile model or tensor file (Debian's
# python3-onnx) and runs `spindle run` on it under a time limit (30 s, or
# PROBE_TIME_LIMIT) and an
# address-space limit (4 GiB), from the model's directory (the libonnx
# checker resolves external-data paths against the current one), then
# prints one table row: the probe, how the process ended (clean error / ran
# / signal / killed by the time limit), its peak RSS and the first line of
# its error or the start of its output.
# docs/reliability.md holds the table this prints.
#
#   fuzz/probes.sh [SPINDLE_BINARY]   (default build/spindle)
set -uo pipefail
cd "$(dirname "$0")/.."
spindle=$(realpath "${1:-build/spindle}")
if [ ! -x "$spindle" ]; then
  echo "probes.sh: $spindle not found; build it first: cmake --build build --target spindle_cli" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/models"

/usr/bin/python3 - "$work" <<'EOF'
import sys, os, numpy as np, onnx, onnx.numpy_helper
from onnx import helper, TensorProto as TP
w = sys.argv[1]
m_dir = w + "/models/"
def save(name, nodes, inits, inputs, outputs, opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    open(m_dir + name, "wb").write(m.SerializeToString())
def out(name, t=TP.FLOAT, shape=None, rank=None):
    # rank: a shape of that many unnamed-size dimensions (the checker wants a shape)
    return helper.make_tensor_value_info(name, t, shape if rank is None else ["d%d" % i for i in range(rank)])
def big_init(name):
    t = TP(); t.name = name; t.data_type = TP.FLOAT; t.dims.extend([2**62 + 1, 4]); t.raw_data = b"\0" * 16; return t
save("overflow_gather.onnx", [helper.make_node("Gather", ["data", "idx"], ["y"])],
     [big_init("data"), helper.make_tensor("idx", TP.INT64, [1], [100000])], [], [out("y", rank=2)])
save("overflow_scatter_fold.onnx", [helper.make_node("ScatterElements", ["data", "ix", "upd"], ["y"])],
     [big_init("data"), helper.make_tensor("ix", TP.INT64, [1, 1], [100000]), helper.make_tensor("upd", TP.FLOAT, [1, 1], [1.0])],
     [], [out("y", rank=2)])
save("constantofshape_huge.onnx", [helper.make_node("ConstantOfShape", ["s"], ["y"])],
     [helper.make_tensor("s", TP.INT64, [2], [2**31, 2**31])], [], [out("y", rank=2)])
save("constantofshape_overflow.onnx", [helper.make_node("ConstantOfShape", ["s"], ["y"])],
     [helper.make_tensor("s", TP.INT64, [2], [2**32, 2**32])], [], [out("y", rank=2)])
save("reshape_overflow.onnx", [helper.make_node("Reshape", ["x", "s"], ["y"])],
     [helper.make_tensor("s", TP.INT64, [2], [2**62, 2**62])], [out("x", TP.FLOAT, [4])], [out("y", rank=2)])
for name, loc in (("external_absolute.onnx", "/etc/passwd"), ("external_dotdot.onnx", "../../../../../../../../etc/passwd")):
    t = TP(); t.name = "w"; t.data_type = TP.UINT8; t.dims.extend([16]); t.data_location = TP.EXTERNAL
    e = t.external_data.add(); e.key = "location"; e.value = loc
    save(name, [helper.make_node("Identity", ["w"], ["y"])], [t], [], [out("y", TP.UINT8, [16])])
os.symlink("/etc/passwd", m_dir + "passwd_link")
t = TP(); t.name = "w"; t.data_type = TP.UINT8; t.dims.extend([16]); t.data_location = TP.EXTERNAL
e = t.external_data.add(); e.key = "location"; e.value = "passwd_link"
save("external_symlink.onnx", [helper.make_node("Identity", ["w"], ["y"])], [t], [], [out("y", TP.UINT8, [16])])
t = TP(); t.name = "w"; t.data_type = TP.FLOAT; t.dims.extend([4]); t.data_location = TP.EXTERNAL
for k, v in (("location", "weights.bin"), ("length", str(10**12))):
    e = t.external_data.add(); e.key = k; e.value = v
open(m_dir + "weights.bin", "wb").write(b"\0" * 16)
save("external_huge_length.onnx", [helper.make_node("Identity", ["w"], ["y"])], [t], [], [out("y", TP.FLOAT, [4])])
t = TP(); t.name = "w"; t.data_type = TP.FLOAT; t.dims.extend([4]); t.data_location = TP.EXTERNAL
for k, v in (("location", "weights.bin"), ("offset", "12x")):
    e = t.external_data.add(); e.key = k; e.value = v
save("external_bad_offset.onnx", [helper.make_node("Identity", ["w"], ["y"])], [t], [], [out("y", TP.FLOAT, [4])])
t = TP(); t.name = "w"; t.data_type = TP.FLOAT; t.dims.extend([300000000]); t.raw_data = b"\0" * 16
save("big_initializer_no_data.onnx", [helper.make_node("Identity", ["w"], ["y"])], [t], [], [out("y", rank=1)])
body = helper.make_graph([helper.make_node("Identity", ["c"], ["co"]), helper.make_node("Identity", ["c"], ["sc"])], "body",
    [helper.make_tensor_value_info("i", TP.INT64, []), helper.make_tensor_value_info("c", TP.BOOL, [])],
    [helper.make_tensor_value_info("co", TP.BOOL, []), helper.make_tensor_value_info("sc", TP.BOOL, [])])
save("endless_loop.onnx", [helper.make_node("Loop", ["", "cond"], ["scan"], body=body)],
     [helper.make_tensor("cond", TP.BOOL, [], [True])], [], [out("scan", TP.BOOL, rank=1)])
save("hammingwindow_huge.onnx", [helper.make_node("HammingWindow", ["n"], ["y"])],
     [helper.make_tensor("n", TP.INT32, [], [2**31 - 1])], [], [out("y", rank=1)], opset=17)
save("roialign_huge_sampling.onnx", [helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], sampling_ratio=2**30, output_height=2, output_width=2)],
     [helper.make_tensor("rois", TP.FLOAT, [1, 4], [0, 0, 3, 3]), helper.make_tensor("bi", TP.INT64, [1], [0])],
     [out("x", TP.FLOAT, [1, 1, 4, 4])], [out("y", rank=4)], opset=16)
# ConvTranspose whose weight is declared rank 1 and a map-typed graph output
# (libonnx shape inference crashed on it).
def map_type():
    t = onnx.TypeProto(); t.map_type.key_type = TP.INT64
    t.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(TP.FLOAT, []))
    return t
mp = helper.make_model(helper.make_graph(
    [helper.make_node("ConvTranspose", ["x", "w"], ["y"]), helper.make_node("Identity", ["m"], ["mo"])], "g",
    [out("x", TP.FLOAT, [1, 1, 3, 3]), out("w", TP.FLOAT, [1]),
     helper.make_value_info("m", map_type())],
    [out("y", rank=4),
     helper.make_value_info("mo", map_type())]),
    opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 3)])
mp.ir_version = 8
open(m_dir + "convtranspose_rank1_map_output.onnx", "wb").write(mp.SerializeToString())
# Nested If, 40 levels.
def nested(depth):
    if depth == 0:
        return helper.make_graph([helper.make_node("Identity", ["x"], ["r0"])], "leaf", [], [out("r0", TP.FLOAT, [1])])
    inner = nested(depth - 1)
    name = "r%d" % depth
    leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["e%d" % depth])], "e%d" % depth, [],
                             [out("e%d" % depth, TP.FLOAT, [1])])
    return helper.make_graph([helper.make_node("If", ["c"], [name], then_branch=inner, else_branch=leaf)], "b%d" % depth, [],
                             [out(name, TP.FLOAT, [1])])
g = nested(40)
save("nested_if_40.onnx", list(g.node), [], [out("c", TP.BOOL, []), out("x", TP.FLOAT, [1])], [out("r40", TP.FLOAT, [1])])
save("relu.onnx", [helper.make_node("Relu", ["x"], ["y"])], [], [out("x", TP.FLOAT, [4])], [out("y", TP.FLOAT, [4])])
save("identity.onnx", [helper.make_node("Identity", ["x"], ["y"])], [], [out("x", TP.FLOAT, rank=1)], [out("y", TP.FLOAT, rank=1)])
# Identity of any rank (no declared shape), fed a rank-30000 .npy: numpy
# writes it as format 2.0 and must read spindle's output back.
save("identity_any_rank.onnx", [helper.make_node("Identity", ["x"], ["y"])], [],
     [helper.make_tensor_value_info("x", TP.FLOAT, None)], [helper.make_tensor_value_info("y", TP.FLOAT, None)])
# (numpy arrays hold at most 32 dimensions: the file is written by hand)
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ", ".join(["1"] * 30000)
h += " " * ((64 - (12 + len(h) + 1) % 64) % 64) + "\n"
open(w + "/rank30000.npy", "wb").write(b"\x93NUMPY\x02\x00" + len(h).to_bytes(4, "little") + h.encode() +
                                        np.float32(7.25).tobytes())
# Endless and special files read whole: the model, an options file.
os.symlink("/dev/zero", m_dir + "zero_link.onnx")
os.mkfifo(w + "/fifo.npy")
open(w + "/deep.json", "w").write('{"intra_op_num_threads": ' + "[" * 200000 + "]" * 200000 + "}")
open(w + "/a_file", "w").write("x")
# Functions F0..F29, each calling the one below twice: 2^29 nodes once expanded.
fs = [helper.make_function("fan", "F0", ["x"], ["y"], [helper.make_node("Relu", ["x"], ["y"])],
                           [helper.make_opsetid("", 18)])]
for k in range(1, 30):
    fs.append(helper.make_function("fan", "F%d" % k, ["x"], ["y"],
        [helper.make_node("F%d" % (k - 1), ["x"], ["t"], domain="fan"),
         helper.make_node("F%d" % (k - 1), ["t"], ["y"], domain="fan")], [helper.make_opsetid("", 18)]))
g = helper.make_graph([helper.make_node("F29", ["x"], ["y"], domain="fan")], "g",
                      [out("x", TP.FLOAT, [4])], [out("y", TP.FLOAT, [4])])
m = helper.make_model(g, functions=fs, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("fan", 1)])
m.ir_version = 8
open(m_dir + "functions_2pow29.onnx", "wb").write(m.SerializeToString())
# Chains of 100,000 nodes: every optimizer pass must stay linear.
def chain(name, op, with_constant=False):
    nodes = [helper.make_node(op, ["x" if i == 0 else "v%d" % i] + (["one"] if with_constant else []),
                              ["y" if i == 99999 else "v%d" % (i + 1)]) for i in range(100000)]
    save(name, nodes, [helper.make_tensor("one", TP.FLOAT, [1], [1.0])] if with_constant else [],
         [out("x", TP.FLOAT, [4])], [out("y", TP.FLOAT, [4])])
chain("identity_chain_100k.onnx", "Identity")
chain("dropout_chain_100k.onnx", "Dropout")
chain("add_chain_100k.onnx", "Add", True)
# Single assignment broken: two initializers named w; a node writing an initializer's name.
save("duplicate_initializer.onnx", [helper.make_node("Add", ["x", "w"], ["y"])],
     [helper.make_tensor("w", TP.FLOAT, [4], [1] * 4), helper.make_tensor("w", TP.FLOAT, [4], [2] * 4)],
     [out("x", TP.FLOAT, [4])], [out("y", TP.FLOAT, [4])])
save("node_writes_initializer.onnx", [helper.make_node("Relu", ["x"], ["w"]), helper.make_node("Add", ["x", "w"], ["y"])],
     [helper.make_tensor("w", TP.FLOAT, [4], [1] * 4)], [out("x", TP.FLOAT, [4])], [out("y", TP.FLOAT, [4])])
# tensor files
def npy(name, header, payload=b"\0" * 16):
    h = header + " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    open(w + "/" + name, "wb").write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + payload)
npy("overflow.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905, 4), }")
npy("long_dim.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }")
npy("negative_dim.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 2), }")
npy("garbage_shape.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1x3;2,,2 ), }")
npy("claims_1e12.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }")
np.save(w + "/nan.npy", np.full(4, np.nan, dtype=np.float32))
np.save(w + "/x1144.npy", np.ones((1, 1, 4, 4), dtype=np.float32))
s = onnx.SequenceProto(); s.elem_type = onnx.SequenceProto.TENSOR
s.tensor_values.append(onnx.numpy_helper.from_array(np.ones(3, dtype=np.float32)))
open(w + "/sequence.pb", "wb").write(s.SerializeToString())
EOF

limit=${PROBE_TIME_LIMIT:-30}
printf '| probe | result | peak RSS | message / output |\n|---|---|---|---|\n'
probe() {  # probe NAME MODEL [spindle run arguments...]; MODEL under models/ unless absolute
  local name=$1 model=$2
  shift 2
  local err="$work/err" rss="$work/rss" rc result first
  local outdir=${PROBE_OUTPUT_DIR:-$work/out}
  [[ $model == /* ]] || model="$work/models/$model"
  rm -rf "$work/out"
  (ulimit -v 4194304; cd "$work/models" &&
    /usr/bin/time -f %M -o "$rss" timeout -s KILL "$limit" "$spindle" run "$model" --intra 1 \
      --output-dir "$outdir" "$@" >/dev/null 2>"$err")
  rc=$?
  first=$(grep -v '^Command \(exited\|terminated\)' "$err" | head -n 1 | sed "s|$work/models/||g; s|$work/||g" | cut -c1-160 | tr '|' '/')
  case $rc in
    0) result="ran" ;;
    1 | 2) result="clean error" ;;
    137) result="killed after $limit s" ;;
    *) result="exit $rc"; [ $rc -gt 128 ] && result="signal $((rc - 128))" ;;
  esac
  if [ $rc -eq 0 ] && [ -d "$work/out" ]; then
    first="output: $(/usr/bin/python3 - "$work/out" <<'EOF' 2>&1 | cut -c1-120
import sys, glob, inspect, numpy as np, numpy.lib.format as f
p = sorted(glob.glob(sys.argv[1] + "/*.npy"))[0]
fp = open(p, "rb")
v = f.read_magic(fp)
r = f.read_array_header_1_0 if v == (1, 0) else f.read_array_header_2_0
shape, _, dtype = r(fp, **({"max_header_size": 10**7} if "max_header_size" in inspect.signature(r).parameters else {}))
if len(shape) > 32:  # more dimensions than a numpy array holds: the header only
    print("format %d.%d, %s rank %d (header read by numpy)" % (v[0], v[1], dtype, len(shape)))
else:
    a = np.load(p)
    print(a.dtype, a.shape, a.ravel()[:8].tolist())
EOF
)"
  fi
  local peak="$(( $(tail -n 1 "$rss" 2>/dev/null || echo 0) / 1024 )) MB"
  [ $rc -eq 137 ] && peak="-"  # the killed process's peak is not reported
  printf '| %s | %s | %s | %s |\n' "$name" "$result" "$peak" "$first"
}
probe "initializer dims overflow int64, Gather row 100000" overflow_gather.onnx
probe "same, ScatterElements with a constant index (folded at load)" overflow_scatter_fold.onnx
probe "ConstantOfShape [2^31, 2^31]" constantofshape_huge.onnx
probe "ConstantOfShape [2^32, 2^32] (product overflows)" constantofshape_overflow.onnx
probe "Reshape to [2^62, 2^62]" reshape_overflow.onnx --input x="$work/nan.npy"
probe "external data, absolute /etc/passwd" external_absolute.onnx
probe "external data, ../../../../etc/passwd" external_dotdot.onnx
probe "external data, symlink in the model's directory" external_symlink.onnx
probe "external data, length 1e12" external_huge_length.onnx
probe "external data, offset '12x'" external_bad_offset.onnx
probe "initializer of 3e8 floats holding 16 bytes" big_initializer_no_data.onnx
probe "Loop without trip count, condition always true" endless_loop.onnx
probe "HammingWindow size 2^31-1" hammingwindow_huge.onnx
probe "RoiAlign sampling_ratio 2^30" roialign_huge_sampling.onnx --input x="$work/x1144.npy"
probe "ConvTranspose weight rank 1, map-typed output" convtranspose_rank1_map_output.onnx
probe "If nested 40 deep" nested_if_40.onnx
probe ".npy dims overflow int64" identity.onnx --input x="$work/overflow.npy"
probe ".npy dimension of 23 digits" identity.onnx --input x="$work/long_dim.npy"
probe ".npy negative dimension (-2, 2)" identity.onnx --input x="$work/negative_dim.npy"
probe ".npy garbage shape (1x3;2,,2 )" identity.onnx --input x="$work/garbage_shape.npy"
probe ".npy claiming 1e12 elements, 16 bytes of data" identity.onnx --input x="$work/claims_1e12.npy"
probe ".pb SequenceProto fed as a tensor" identity.onnx --input x="$work/sequence.pb"
probe "Relu(NaN) (ONNX Runtime: NaN)" relu.onnx --input x="$work/nan.npy"
probe "model /dev/zero" /dev/zero
probe "model.onnx a symlink to /dev/zero" zero_link.onnx
probe "--options /dev/zero" relu.onnx --options /dev/zero
probe "--options nested 200,000 deep" relu.onnx --options "$work/deep.json"
probe ".npy input a FIFO without a writer" identity.onnx --input x="$work/fifo.npy"
PROBE_OUTPUT_DIR="$work/a_file" probe "--output-dir an existing file" relu.onnx
probe ".npy of rank 30000 (header > 64 KiB), round trip" identity_any_rank.onnx --input x="$work/rank30000.npy"
probe "functions calling each other twice, 30 levels (2^29 nodes)" functions_2pow29.onnx
probe "100,000 Identity nodes in a chain" identity_chain_100k.onnx --input x="$work/nan.npy"
probe "100,000 Dropout nodes in a chain" dropout_chain_100k.onnx --input x="$work/nan.npy"
probe "100,000 Add-a-constant nodes in a chain" add_chain_100k.onnx --input x="$work/nan.npy"
probe "two initializers named w" duplicate_initializer.onnx --input x="$work/nan.npy"
probe "a node writing an initializer's name" node_writes_initializer.onnx --input x="$work/nan.npy"
probe "--timeout-ms 10000000000000 (overflows now + ms)" relu.onnx --input x="$work/nan.npy" --timeout-ms 10000000000000
