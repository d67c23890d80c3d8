#!/usr/bin/python3
"""Median duration (µs) of the nodes of one operator in a `spindle profile`
trace, and how many there were per run.

    /usr/bin/python3 bench/models/node_time.py TRACE.json OP_TYPE
"""
import json
import statistics
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    durations = [e["dur"] for e in events if e.get("ph") == "X" and e.get("cat") == "node" and e["name"] == sys.argv[2]]
    if not durations:
        sys.exit(f"no {sys.argv[2]} node in {sys.argv[1]}")
    print(f"{sys.argv[2]} median {statistics.median(durations):.1f} us over {len(durations)} node runs")


if __name__ == "__main__":
    main()
