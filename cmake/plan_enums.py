#!/usr/bin/env python3
"""Writes cellrt/PlanEnums.inc from schedule/PlanEnums.td's records.

The plan's enums (phases, reference kinds, buffer extents) are listed once,
as the sched dialect's I32EnumAttrs. llvm-tblgen --dump-json gives their
records; this turns each into an X-macro the runtime (which must not depend
on LLVM) expands into its enum class and its names.

usage: plan_enums.py RECORDS.json OUT.inc
"""
import json
import sys

# The dialect's enum (its def) and the runtime's X-macro.
ENUMS = [("Sched_Phase", "CELLRT_PLAN_PHASES"),
         ("Sched_RefKind", "CELLRT_PLAN_REF_KINDS"),
         ("Sched_Extent", "CELLRT_PLAN_BUFFER_EXTENTS")]


def cases(records, name):
    enum = records[name]
    for case in enum["enumerants"]:
        record = records[case["def"]]
        yield record["symbol"], record["value"], record["str"]


def main():
    records_path, out_path = sys.argv[1:3]
    with open(records_path) as f:
        records = json.load(f)
    lines = ["// Generated from schedule/PlanEnums.td by cmake/plan_enums.py:",
             "// do not edit. X(NAME, VALUE, \"text\") per case, in order.",
             ""]
    for enum, macro in ENUMS:
        lines.append(f"#define {macro}(X) \\")
        for symbol, value, text in cases(records, enum):
            lines.append(f'  X({symbol}, {value}, "{text}") \\')
        lines.append("")
    text = "\n".join(lines) + "\n"
    try:
        with open(out_path) as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(out_path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
