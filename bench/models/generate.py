#!/usr/bin/python3
"""Greedy generation through spindle's Python API with an IOBinding, the loop
`spindle generate` runs in C++ and bench/models/generate_ort.js on
onnxruntime-node: the prompt once with an empty cache (prefill), then one
token per step, each step's `present.N.key / .value` bound as the next
step's `past_key_values.N.key / .value` as the OrtValues the run returned
(no copy through numpy), the logits' last row's argmax as the next token.

Usage:
  PYTHONPATH=<build>/bindings/python /usr/bin/python3 bench/models/generate.py MODEL \\
      --prompt-ids 1,2,3 --max-new-tokens N [--intra N] [--warmup N] [--json]

The model takes input_ids and position_ids (int64 [1, S]), optionally an
attention_mask (int64 [1, P + S], all ones), and
past_key_values.N.key / .value ([1, kv_heads, P, head_size]), and returns
logits [1, S, vocab] and present.N.key / .value, as bench/models/
decoder_model.py and gpt_decoder_model.py export them. Prints the generated
ids, the prefill time, the median time of a decode step and tokens/s
(--json: one object, the same keys as `spindle generate --json`).
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

import spindle


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("--prompt-ids", required=True, help="comma-separated token ids")
    p.add_argument("--max-new-tokens", type=int, required=True)
    p.add_argument("--intra", type=int, default=0, help="intra-op threads (0: spindle's default)")
    p.add_argument("--warmup", type=int, default=1, help="untimed prefills first")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    try:
        a.prompt = [int(t) for t in a.prompt_ids.split(",")]
    except ValueError:
        p.error(f"--prompt-ids {a.prompt_ids!r}: expected comma-separated integers")
    if not a.prompt or a.max_new_tokens < 1 or a.warmup < 0:
        p.error("expected a prompt, --max-new-tokens of 1 or more and --warmup of 0 or more")
    return a


def cache_names(session):
    """(past input, present output) pairs, and each past's [kv_heads, head_size]."""
    outputs = {o.name for o in session.get_outputs()}
    pairs = []
    for i in session.get_inputs():
        if not i.name.startswith("past_key_values."):
            continue
        present = "present." + i.name[len("past_key_values."):]
        if present not in outputs:
            sys.exit(f"generate: {i.name} has no output {present}")
        heads, size = i.shape[1], i.shape[3]
        if not isinstance(heads, int) or not isinstance(size, int):
            sys.exit(f"generate: {i.name} has shape {i.shape}; expected fixed heads and head size")
        pairs.append((i.name, present, heads, size))
    return pairs


def step(session, binding, ids, start, past, cache, mask):
    """One run over `ids` at positions start.. with the cache `past` (name ->
    OrtValue); `cache` is cache_names' list, `mask` whether the model takes an
    attention_mask. Returns (next token, the new cache)."""
    binding.clear_binding_inputs()
    binding.clear_binding_outputs()
    binding.bind_cpu_input("input_ids", np.array([ids], dtype=np.int64))
    binding.bind_cpu_input("position_ids", np.arange(start, start + len(ids), dtype=np.int64)[None, :])
    if mask:
        binding.bind_cpu_input("attention_mask", np.ones((1, start + len(ids)), dtype=np.int64))
    for name, value in past.items():
        binding.bind_ortvalue_input(name, value)
    binding.bind_output("logits")
    for _, present, _, _ in cache:
        binding.bind_output(present)
    session.run_with_iobinding(binding)
    out = binding.get_outputs()
    logits = out[0].numpy()
    token = int(np.argmax(logits[0, -1]))
    return token, {past_name: out[1 + k] for k, (past_name, _, _, _) in enumerate(cache)}


def main():
    a = parse_args()
    options = spindle.SessionOptions()
    if a.intra:
        options.intra_op_num_threads = a.intra
    session = spindle.InferenceSession(a.model, options)
    cache = cache_names(session)
    mask = any(i.name == "attention_mask" for i in session.get_inputs())
    binding = session.io_binding()
    empty = {name: spindle.OrtValue.ortvalue_from_numpy(np.zeros((1, heads, 0, size), dtype=np.float32))
             for name, _, heads, size in cache}
    for _ in range(a.warmup):  # first-run allocations and weight packing
        step(session, binding, a.prompt, 0, empty, cache, mask)
    times = []
    t0 = time.perf_counter()
    token, past = step(session, binding, a.prompt, 0, empty, cache, mask)
    times.append(time.perf_counter() - t0)
    generated = [token]
    while len(generated) < a.max_new_tokens:
        t0 = time.perf_counter()
        token, past = step(session, binding, [token], len(a.prompt) + len(generated) - 1, past, cache, mask)
        times.append(time.perf_counter() - t0)
        generated.append(token)
    prefill_ms = times[0] * 1e3
    decode = times[1:]
    result = {
        "model": a.model,
        "intra_threads": a.intra,
        "prompt_tokens": len(a.prompt),
        "generated_ids": generated,
        "prefill_ms": prefill_ms,
        "prefill_tokens_per_s": 1e3 * len(a.prompt) / prefill_ms,
        "decode_steps": len(decode),
    }
    if decode:
        p50 = statistics.median(decode)
        result.update({"decode_p50_ms": p50 * 1e3, "decode_tokens_per_s": 1.0 / p50})
    if a.json:
        print(json.dumps(result))
        return
    print("generated ", " ".join(str(t) for t in generated))
    print(f"prefill    {len(a.prompt)} tokens in {prefill_ms:.2f} ms ({result['prefill_tokens_per_s']:.1f} tokens/s)")
    if decode:
        print(f"decode     {len(decode)} steps, p50 {result['decode_p50_ms']:.2f} ms ({result['decode_tokens_per_s']:.1f} tokens/s)")


if __name__ == "__main__":
    main()
