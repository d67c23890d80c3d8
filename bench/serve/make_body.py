#!/usr/bin/python3
"""Writes an infer request body for every input of a served model, from its
metadata (GET /v2/models/NAME): dynamic dimensions become 1, values random.
Usage: make_body.py PORT NAME OUT json|binary [NAME=DIMS ...]  (DIMS like 1x3x48x192)
Prints the JSON header length (binary; "-" for json), then --shape flags for spindle bench."""
import json
import sys
import urllib.request

import numpy as np

port, name, out, kind = sys.argv[1:5]
given = {k: [int(d) for d in v.split('x')] for k, v in (a.split('=', 1) for a in sys.argv[5:])}
meta = json.load(urllib.request.urlopen("http://127.0.0.1:%s/v2/models/%s" % (port, name)))
types = {"FP32": np.float32, "FP64": np.float64, "INT64": np.int64, "INT32": np.int32, "UINT8": np.uint8,
         "INT8": np.int8, "BOOL": np.bool_}
rng = np.random.default_rng(0)
header, blob = {"inputs": []}, b""
for i in meta["inputs"]:
    shape = given.get(i["name"]) or [d if d >= 0 else 1 for d in i["shape"]]
    a = (rng.random(shape) * 2 - 1).astype(types[i["datatype"]])
    entry = {"name": i["name"], "shape": shape, "datatype": i["datatype"]}
    if kind == "binary":
        entry["parameters"] = {"binary_data_size": a.nbytes}
        blob += a.tobytes()
    else:
        entry["data"] = a.ravel().tolist()
    header["inputs"].append(entry)
if kind == "binary":
    header["outputs"] = [{"name": o["name"], "parameters": {"binary_data": True}} for o in meta["outputs"]]
h = json.dumps(header).encode()
with open(out, "wb") as f:
    f.write(h + blob)
print(len(h) if kind == "binary" else "-")
print(" ".join("--shape %s=%s" % (e["name"], "x".join(map(str, e["shape"])) or "1") for e in header["inputs"]))
