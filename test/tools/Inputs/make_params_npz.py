"""Writes a .npz of float32 arrays, as np.savez does, without NumPy (the
Python running lit may have none), for `cellc check --params`.

usage: make_params_npz.py OUT.npz NAME=SHAPE[:VALUE]...
SHAPE is 6x5 or 6; every element is VALUE, or uniform in [-0.5, 0.5) drawn
from a fixed seed when VALUE is left out. A DTYPE of '<i4' is written for
NAME=SHAPE:int (an array of the wrong type).
"""
import random
import struct
import sys
import zipfile


def npy(shape, values, descr):
    shape_text = "(%s)" % "".join("%d," % s for s in shape)
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        descr, shape_text)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    code = {"<f4": "f", "<i4": "i"}[descr]
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
            header.encode("latin1") +
            struct.pack("<%d%s" % (len(values), code), *values))


def main():
    rng = random.Random(7)
    with zipfile.ZipFile(sys.argv[1], "w") as archive:
        for spec in sys.argv[2:]:
            name, rest = spec.split("=")
            shape_text, _, value = rest.partition(":")
            shape = [int(s) for s in shape_text.split("x")]
            count = 1
            for extent in shape:
                count *= extent
            descr = "<i4" if value == "int" else "<f4"
            values = [0] * count if value == "int" else \
                [float(value)] * count if value else \
                [rng.uniform(-0.5, 0.5) for _ in range(count)]
            archive.writestr(name + ".npy", npy(shape, values, descr))


main()
