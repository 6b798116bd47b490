#!/usr/bin/python3
"""Writes the .npy fixtures that verify/test_npy.cpp reads, with NumPy itself, and MANIFEST.tsv.

Run with Debian's /usr/bin/python3 (python3-numpy) from this directory's parent or anywhere:
    /usr/bin/python3 verify/npy_good/make_fixtures.py
MANIFEST.tsv has one row per file: file, descr, the order the array had in NumPy (C or F),
the version passed to write_array (0 for numpy.save's automatic choice), numpy_wrote (1 when
NumPy wrote the bytes, so our writer must reproduce them exactly; 0 for hand-written header
variants NumPy accepts), the shape (comma-separated), and every value in C order (Python repr,
which reads back to the same double).
"""
import io
import os

import numpy as np
from numpy.lib import format as npformat

HERE = os.path.dirname(os.path.abspath(__file__))
rows = []


def values_for(shape, dtype, seed):
    """Deterministic values over many magnitudes, with the edge cases a reader must keep exactly."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    v = rng.standard_normal(size) * 10.0 ** rng.integers(-6, 7, size)
    info = np.finfo(dtype)
    specials = [-0.0, float(info.tiny) / 4, float(info.max), -float(info.max), float(info.tiny), 1.0]
    v[: min(size, len(specials))] = specials[: min(size, len(specials))]
    return v.astype(dtype).reshape(shape)


def record(name, data, descr, order, version, numpy_wrote, array):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    back = np.load(os.path.join(HERE, name))  # every fixture must be one NumPy reads as this array
    assert back.shape == array.shape and back.dtype == array.dtype and np.array_equal(back, array), name
    flat = [repr(float(x)) for x in np.asarray(array).ravel(order="C")]
    rows.append([name, descr, order, str(version), str(numpy_wrote), ",".join(map(str, array.shape)), " ".join(flat)])


def numpy_bytes(array, version):
    buf = io.BytesIO()
    if version == 0:
        np.save(buf, array)
    else:
        npformat.write_array(buf, array, version=(version, 0))
    return buf.getvalue()


def add(shape, dtype, order="C", version=0, seed=0):
    array = values_for(shape, dtype, seed)
    if order == "F":
        array = np.asfortranarray(array)
    descr = np.dtype(dtype).str
    name = "{}_{}_{}_v{}.npy".format(descr[1:], order, "x".join(map(str, shape)) or "scalar", version)
    record(name, numpy_bytes(array, version), descr, order, version, 1, array)


for dtype in ("<f4", "<f8"):
    for shape in [(5,), (3, 4), (2, 3, 4), (2, 2, 3, 2), (1,), (1, 1, 1, 1)]:
        add(shape, dtype, "C", 0, seed=len(shape))
    for shape in [(3, 4), (2, 3, 4), (2, 2, 3, 2), (3, 1), (1, 5)]:
        add(shape, dtype, "F", 0, seed=10 + len(shape))
    # Zero-size dimensions, and long dimensions whose digits change numpy's header padding.
    for shape in [(0,), (0, 3), (3, 0), (2, 0, 4), (0, 1000000000000000), (1000000000000000, 0), (0, 12345, 67890, 1)]:
        add(shape, dtype)
    add((0, 3), dtype, "F")
    add((3, 0, 2), dtype, "F")
    for version in (1, 2, 3):
        add((3, 4), dtype, "C", version, seed=20 + version)
        add((2, 3, 2), dtype, "F", version, seed=30 + version)


def variant(name, header, shape=(2, 3), version=1):
    """A header written by hand in a form NumPy accepts but does not write."""
    array = values_for(shape, "<f8", 99)
    text = header.encode("latin1")
    length = len(text).to_bytes(2 if version == 1 else 4, "little")
    record(name, b"\x93NUMPY" + bytes([version, 0]) + length + text + array.tobytes(), "<f8", "C", version, 0, array)


variant("variant_double_quotes.npy", '{"descr": "<f8", "fortran_order": False, "shape": (2, 3)}\n')
variant("variant_key_order.npy", "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f8'}")
variant("variant_no_trailing_commas.npy", "{'descr':'<f8','fortran_order':False,'shape':(2,3)}")
variant("variant_whitespace.npy", "{\n\t'descr' :\t'<f8' ,\r\n 'fortran_order' : False ,\n 'shape' : ( 2 , 3 , ) ,\n}\n\n   ")
variant("variant_long_suffix.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 3L), }\n")
variant("variant_unpadded_v2.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", version=2)
variant("variant_one_dim_trailing_space.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (6 ,), }\n", shape=(6,))

with open(os.path.join(HERE, "MANIFEST.tsv"), "w") as f:
    f.write("file\tdescr\torder\tversion\tnumpy_wrote\tshape\tvalues\n")
    for row in sorted(rows):
        f.write("\t".join(row) + "\n")
print("wrote {} fixtures to {}".format(len(rows), HERE))
