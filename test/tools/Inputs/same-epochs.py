"""Checks that two runs' OUT.jsonl files have the same epochs: the named
fields of every epoch event agree to 1e-3 (relative). Prints 'N epochs
agree' or exits 1 naming the first difference."""
import json
import sys

first, second, fields = sys.argv[1], sys.argv[2], sys.argv[3:]


def epochs(path):
    with open(path) as f:
        events = [json.loads(line) for line in f]
    return [e for e in events if e["event"] == "epoch"]


a, b = epochs(first), epochs(second)
if len(a) != len(b):
    sys.exit(f"{len(a)} epochs in {first}, {len(b)} in {second}")
for index, (x, y) in enumerate(zip(a, b)):
    for field in fields:
        if abs(x[field] - y[field]) > 1e-3 * max(1.0, abs(x[field])):
            sys.exit(f"epoch {index + 1}: {field} {x[field]} vs {y[field]}")
print(f"{len(a)} epochs agree")
