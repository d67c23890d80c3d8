"""Per-node times of spindle (its `spindle profile` Chrome trace) next to
ONNX Runtime's (its profiler's JSON), median over the profiled runs, worst
differences first. ONNX Runtime names a fused node after the value it
writes (e.g. "<Relu output>_nchwc" for a Conv with its Relu), so each
spindle node is matched through the model: its name, its output, and the
outputs of the activation chain it absorbed. ORT nodes left unmatched (ops
spindle fuses away or ORT adds: QuickGelu, Reorder*) are summed.

Usage: /usr/bin/python3 bench/models/per_node.py MODEL.onnx SPINDLE_TRACE ORT_PROFILE [TOP]
"""
import collections
import json
import re
import statistics
import sys

import onnx

FUSABLE = {"Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Mul", "Add", "LeakyRelu", "Tanh",
           "BatchNormalization"}


def aliases(graph):
    consumers = collections.defaultdict(list)
    for n in graph.node:
        for i in n.input:
            consumers[i].append(n)
    out = {}
    for n in graph.node:
        names, cur = {n.name}, n
        for _ in range(4):
            if not cur.output:
                break
            names.add(cur.output[0])
            nxt = consumers.get(cur.output[0], [])
            if len(nxt) != 1 or nxt[0].op_type not in FUSABLE:
                break
            cur = nxt[0]
            names.add(cur.name)
        out[n.name] = names
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    model, sp_path, ort_path = sys.argv[1:4]
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 25
    alias = aliases(onnx.load(model).graph)
    d = json.load(open(sp_path))
    sp, sp_op = collections.defaultdict(list), {}
    for e in d["traceEvents"] if isinstance(d, dict) else d:
        if e.get("cat") == "node":
            sp[e["args"]["node"]].append(e["dur"])
            sp_op[e["args"]["node"]] = e["name"]
    ort, shape = collections.defaultdict(list), {}
    for e in json.load(open(ort_path)):
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            # QDQ fusions name their node "<first node>_token_<n>"
            name = re.sub(r"_token_\d+$", "", e["name"][: -len("_kernel_time")])
            ort[name].append(e["dur"])
            shape[name] = (e["args"].get("input_type_shape"), e["args"].get("output_type_shape"))
    med = lambda v: statistics.median(v)
    used, rows = set(), []
    for n, times in sp.items():
        al = alias.get(n, {n})
        match = [m for m in ort if m not in used and (m in al or m.replace("_nchwc", "") in al)]
        used |= set(match)
        rows.append((med(times) - sum(med(ort[m]) for m in match), n, med(times), sum(med(ort[m]) for m in match),
                     shape[match[0]] if match else None))
    rows.sort(reverse=True)
    total_sp, total_ort = sum(r[2] for r in rows), sum(med(v) for v in ort.values())
    left = sum(med(ort[m]) for m in ort if m not in used)
    print(f"spindle {total_sp / 1000:.2f} ms, ONNX Runtime {total_ort / 1000:.2f} ms "
          f"(of which {left / 1000:.2f} ms in ORT nodes with no spindle node)")
    print(f"{'diff us':>8} {'spindle':>8} {'ORT':>8}  {'op':12} node / ORT shapes")
    for diff, n, a, b, sh in rows[:top]:
        dims = ""
        if sh:
            ins = [list(x.values())[0] for x in sh[0]][:2]
            outs = [list(x.values())[0] for x in sh[1]][:1]
            dims = f"{ins} -> {outs}"
        print(f"{diff:8.0f} {a:8.0f} {b:8.0f}  {sp_op[n]:12} {n[:48]} {dims}")


if __name__ == "__main__":
    main()
