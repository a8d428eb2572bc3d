"""Writes ATR's arrays as .npy files (no numpy: struct) for `cellc run`.

usage: make_atr_arrays.py DIR [--training] [--bad-shape] [--no-wh] [--fortran]
"""
import os
import random
import struct
import sys


def save(path, shape, values, descr="<f4", fortran=False):
    shape_text = "(%s)" % "".join("%d," % s for s in shape)
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", shape_text)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    code = {"<f4": "f", "<i4": "i", "<i8": "q"}[descr]
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1"))
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def main():
    out = sys.argv[1]
    flags = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    rng = random.Random(5)
    T, B, I, H = 4, 3, 5, 6

    def rand(n):
        return [rng.uniform(-0.5, 0.5) for _ in range(n)]

    save(os.path.join(out, "x_x.npy"), [T, B, I], rand(T * B * I))
    save(os.path.join(out, "param_Wx.npy"), [H, I], rand(H * I),
         fortran="--fortran" in flags)
    if "--no-wh" not in flags:
        rows = H + 1 if "--bad-shape" in flags else H
        save(os.path.join(out, "param_Wh.npy"), [rows, H], rand(rows * H))
    save(os.path.join(out, "lengths.npy"), [B], [4, 1, 3], "<i8")
    if "--training" in flags:
        save(os.path.join(out, "dout.npy"), [T, B, H], rand(T * B * H))
        save(os.path.join(out, "dfinal_h.npy"), [B, H], rand(B * H))


main()
