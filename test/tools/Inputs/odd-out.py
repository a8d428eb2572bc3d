"""Runs a driver's `train` with an --out whose name holds quotes, a
backslash, a newline and letters beyond ASCII, then checks its logs:
OUT.jsonl is one JSON object a line, the first the "config" event with the
options (--out as given), the machine and the versions; OUT.log's lines
start with the local time and its offset from UTC. Prints what it found.

  odd-out.py FOLDER DRIVER train OPTIONS...
"""
import json
import os
import re
import subprocess
import sys

folder, command = sys.argv[1], sys.argv[2:]
os.makedirs(folder, exist_ok=True)
out = os.path.join(folder, 'it\'s "odd" \\ and\nnaïve 中文.ckpt')
subprocess.run(command + ["--out", out], check=True,
               stderr=subprocess.DEVNULL)

with open(out + ".jsonl", encoding="utf-8") as f:
    lines = f.read().split("\n")
assert lines[-1] == "", "the last event ends its line"
events = [json.loads(line) for line in lines[:-1]]
assert all(isinstance(e, dict) for e in events)
print("events:", " ".join(e["event"] for e in events))

first = events[0]
iso = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d"
assert re.fullmatch(iso, first["time"]), first["time"]
assert first["event"] == "config" and first["update"] == 0, first
print("out as given:", first["options"]["out"] == out)
machine = first["machine"]
assert machine["host"] and isinstance(machine["cpu"], str), machine
assert isinstance(machine["cores"], int) and machine["cores"] >= 1, machine
print("threads:", machine["threads"],
      "kernel threads:", machine["kernel_threads"] >= 1)
versions = first["versions"]
semver = r"\d+\.\d+\.\d+"
assert re.fullmatch(semver, versions["cellc"]), versions
assert re.fullmatch(semver, versions["onednn"]), versions
assert versions["compiler"].split()[0] in ("clang", "gcc"), versions
print("versions:", " ".join(versions))

with open(out + ".log", encoding="utf-8") as f:
    log = f.read().splitlines()
assert all(re.match(iso + " ", line) for line in log), log
print("log lines timestamped:", len(log) > 0)
