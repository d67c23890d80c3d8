"""Two spindle binaries on one model, alternated A B / B A for ROUNDS rounds
(`spindle bench MODEL --intra I --runs R --json` each), median over rounds of
each round's p50 and CPU ms per inference: how a change is timed on these
noisy 2-core machines (copy the CLI of each build aside first; it links
spindle statically).

Usage: /usr/bin/python3 bench/models/ab_binaries.py OLD NEW MODEL INTRA ROUNDS RUNS [spindle bench args...]
"""
import json
import statistics
import subprocess
import sys


def main():
    if len(sys.argv) < 7:
        sys.exit(__doc__)
    old, new, model, intra, rounds, runs = sys.argv[1:7]
    extra = sys.argv[7:]
    p50 = {"old": [], "new": []}
    cpu = {"old": [], "new": []}
    for r in range(int(rounds)):
        for side in (("old", "new") if r % 2 == 0 else ("new", "old")):
            exe = old if side == "old" else new
            out = subprocess.run([exe, "bench", model, "--intra", intra, "--runs", runs, "--json"] + extra,
                                 capture_output=True, text=True, check=True).stdout
            j = json.loads(out)
            p50[side].append(j["latency_ms"]["p50"])
            cpu[side].append(j["cpu_ms_per_inference"])
    o, n = statistics.median(p50["old"]), statistics.median(p50["new"])
    print(f"{model.split('/')[-1]} intra {intra}: old {o:.3f} new {n:.3f} ms, new/old {n / o:.3f}; "
          f"CPU ms old {statistics.median(cpu['old']):.3f} new {statistics.median(cpu['new']):.3f}")


if __name__ == "__main__":
    main()
