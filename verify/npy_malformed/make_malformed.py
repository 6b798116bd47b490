#!/usr/bin/python3
"""Writes the malformed and unsupported .npy files verify/test_npy.cpp must reject, and EXPECTED.tsv.

    /usr/bin/python3 verify/npy_malformed/make_malformed.py

EXPECTED.tsv has one row per file: the file name and a substring of the one-line error
("<file>: <problem>") that reading it must give. Every file here must stay malformed: the
attend executable is also run on each one and must exit with status 2.
"""
import io
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
expected = {}


def write(name, data, message):
    assert name not in expected, name
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    expected[name] = message


def saved(array, **kw):
    buf = io.BytesIO()
    np.save(buf, array, **kw)
    return buf.getvalue()


def npy(header, data=b"", version=1, pad=True):
    """An .npy file with `header` as its dict text, padded as numpy pads it."""
    text = header.encode("utf-8") if isinstance(header, str) else header
    prefix = 10 if version == 1 else 12
    if pad:
        text += b" " * (63 - (prefix + len(text)) % 64) + b"\n"
    length = len(text).to_bytes(2 if version == 1 else 4, "little")
    return b"\x93NUMPY" + bytes([version, 0]) + length + text + data


def dict_text(descr="'<f8'", fortran="False", shape="(2, 3)"):
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)


six = np.arange(1.0, 7.0).tobytes()  # data for a (2, 3) '<f8' array
good = npy(dict_text(), six)

# The prefix: magic, version, header length.
write("empty.npy", b"", "bad magic")
write("bad_magic.npy", b"\x93NUMPZ" + good[6:], "bad magic")
write("text_file.npy", b"descr,fortran_order,shape\n1,2,3\n", "bad magic")
write("npz_archive.npy", b"PK\x03\x04" + b"\x00" * 60, "bad magic")
write("magic_only.npy", b"\x93NUMPY", "ends inside the format version")
write("version_0_0.npy", b"\x93NUMPY\x00\x00" + good[8:], "unsupported .npy format version 0.0")
write("version_4_0.npy", b"\x93NUMPY\x04\x00" + good[8:], "unsupported .npy format version 4.0")
write("version_1_1.npy", b"\x93NUMPY\x01\x01" + good[8:], "unsupported .npy format version 1.1")
write("truncated_length_field_v1.npy", b"\x93NUMPY\x01\x00\x76", "ends inside the header length")
write("truncated_length_field_v2.npy", b"\x93NUMPY\x02\x00\x76\x00\x00", "ends inside the header length")
write("header_length_past_eof.npy", b"\x93NUMPY\x01\x00" + (1000).to_bytes(2, "little") + good[10:60],
      "truncated header: the header length says 1000 bytes, the file has 50")
write("header_length_4GiB.npy", b"\x93NUMPY\x02\x00\xff\xff\xff\xff" + good[10:], "truncated header: the header length says 4294967295")
write("truncated_header.npy", good[:40], "truncated header")
write("header_too_long.npy", npy(dict_text() + " " * 70000, six, version=2), "implausibly long")

# The data: exactly as long as the shape says.
write("truncated_data.npy", good[:-3], "truncated data: shape (2, 3) needs 48 bytes, the file has 45")
write("header_only.npy", npy(dict_text()), "truncated data: shape (2, 3) needs 48 bytes, the file has 0")
write("trailing_data.npy", good + b"\x00" * 8, "8 bytes of trailing data")
write("shape_lies_larger.npy", npy(dict_text(shape="(3, 3)"), six), "truncated data: shape (3, 3) needs 72 bytes")
write("shape_lies_smaller.npy", npy(dict_text(shape="(2, 2)"), six), "16 bytes of trailing data: shape (2, 2)")
write("shape_lies_dtype_f4.npy", npy(dict_text(descr="'<f4'"), six), "24 bytes of trailing data")

# Element types we do not read.
write("dtype_i4.npy", saved(np.arange(6, dtype="<i4")), "unsupported dtype '<i4'")
write("dtype_i8.npy", saved(np.arange(6, dtype="<i8")), "unsupported dtype '<i8'")
write("dtype_c16.npy", saved(np.ones(3, dtype="<c16")), "unsupported dtype '<c16'")
write("dtype_f2.npy", saved(np.ones(3, dtype="<f2")), "unsupported dtype '<f2'")
write("dtype_longdouble.npy", saved(np.ones(3, dtype=np.longdouble)), "unsupported dtype '<f16'")
write("dtype_bool.npy", saved(np.ones(3, dtype=bool)), "unsupported dtype '|b1'")
write("dtype_U3.npy", saved(np.array(["abc", "de"])), "unsupported dtype '<U3'")
write("dtype_S2.npy", saved(np.array([b"ab"])), "unsupported dtype '|S2'")
write("dtype_float64_name.npy", npy(dict_text(descr="'float64'"), six), "unsupported dtype 'float64'")
write("big_endian_f8.npy", saved(np.arange(6.0).astype(">f8")), "big-endian data ('>f8')")
write("big_endian_f4.npy", saved(np.arange(6.0).astype(">f4")), "big-endian data ('>f4')")
write("object_array.npy", saved(np.array([1.0, "x", None], dtype=object), allow_pickle=True), "object arrays are not supported")
write("structured_dtype.npy", saved(np.zeros(2, dtype=[("a", "<f8"), ("b", "<f8")])), "structured dtypes are not supported")
write("descr_unquoted.npy", npy(dict_text(descr="f8"), six), "expected a quoted string for 'descr'")
write("descr_escape.npy", npy(dict_text(descr="'<f\\x38'"), six), "escape sequence in 'descr'")

# Shapes.
write("shape_overflows_size_t.npy", npy(dict_text(shape="(1099511627776, 1099511627776, 1099511627776)")),
      "shape (1099511627776, 1099511627776, 1099511627776) is too large")
write("shape_overflows_ptrdiff_t.npy", npy(dict_text(shape="(1152921504606846976,)")), "shape (1152921504606846976,) is too large")
write("shape_overflows_with_zero_dim.npy", npy(dict_text(shape="(0, 4611686018427387904, 4)")), "is too large")
write("shape_entry_overflows_u64.npy", npy(dict_text(shape="(99999999999999999999999,)")), "shape entry overflows 64 bits")
write("shape_negative_dim.npy", npy(dict_text(shape="(-1, 3)"), six), "negative dimension")
write("shape_five_d.npy", npy(dict_text(shape="(1, 1, 1, 2, 3)"), six), "5-d arrays are not supported")
write("shape_scalar.npy", saved(np.float64(1.5)), "0-d (scalar) arrays are not supported")
write("shape_not_tuple.npy", npy(dict_text(shape="6"), six), "expected '(' to open the shape tuple")
write("shape_parenthesised_int.npy", npy(dict_text(shape="(6)"), six), "shape (6) is an integer, not a tuple")
write("shape_list.npy", npy(dict_text(shape="[2, 3]"), six), "expected '(' to open the shape tuple")
write("shape_float_dim.npy", npy(dict_text(shape="(2.0, 3)"), six), "non-negative decimal integers")
write("shape_hex_dim.npy", npy(dict_text(shape="(0x2, 3)"), six), "non-negative decimal integers")
write("shape_leading_zero.npy", npy(dict_text(shape="(02, 3)"), six), "leading zero")
write("shape_double_comma.npy", npy(dict_text(shape="(2,, 3)"), six), "non-negative decimal integers")
write("shape_long_suffix_v3.npy", npy(dict_text(shape="(2L, 3L)"), six, version=3), "non-negative decimal integers")

# The dict itself.
write("header_not_dict.npy", npy("['<f8', False, (2, 3)]", six), "expected '{' at the start of the header")
write("header_empty.npy", npy(b"", six, pad=False), "expected '{' at the start of the header")
write("header_missing_descr.npy", npy("{'fortran_order': False, 'shape': (2, 3), }", six), "no 'descr' key")
write("header_missing_fortran_order.npy", npy("{'descr': '<f8', 'shape': (2, 3), }", six), "no 'fortran_order' key")
write("header_missing_shape.npy", npy("{'descr': '<f8', 'fortran_order': False, }", six), "no 'shape' key")
write("header_extra_key.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), 'extra': 1, }", six),
      "unknown key 'extra'")
write("header_duplicate_shape.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), 'shape': (2, 3), }", six),
      "'shape' given twice")
write("header_fortran_order_int.npy", npy(dict_text(fortran="0"), six), "'fortran_order' must be True or False")
write("header_fortran_order_lowercase.npy", npy(dict_text(fortran="true"), six), "'fortran_order' must be True or False")
write("header_fortran_order_trueish.npy", npy(dict_text(fortran="Truest"), six), "'fortran_order' must be True or False")
write("header_unterminated_string.npy", npy("{'descr: '<f8', 'fortran_order': False, 'shape': (2, 3), }", six), "expected ':' after a header key")
write("header_unterminated_key.npy", npy("{'descr", six), "unterminated string for a header key")
write("header_missing_colon.npy", npy("{'descr' '<f8', 'fortran_order': False, 'shape': (2, 3), }", six), "expected ':' after a header key")
write("header_missing_close_brace.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3) ", six),
      "expected '}' to close the header dict")
write("header_text_after_dict.npy", npy(dict_text() + " x", six), "text after the closing '}'")
write("header_two_dicts.npy", npy(dict_text() + dict_text(), six), "text after the closing '}'")
write("header_non_ascii_v3.npy", npy("{'déscr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", six, version=3),
      "non-ASCII byte \\xc3 at byte 3 of the header")
write("header_latin1_v1.npy", npy(b"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), } \xe9", six),
      "non-ASCII byte \\xe9")
write("header_nul_byte.npy", npy(b"{'descr': '<f8\x00', 'fortran_order': False, 'shape': (2, 3), }", six), "control byte \\x00")
write("header_escape_byte.npy", npy(b"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }\x1b[31m", six),
      "control byte \\x1b")

# Values: every one must be finite; the message names the first bad one by its C-order flat index.
nan5 = np.arange(1.0, 7.0)
nan5[5] = np.nan
write("value_nan.npy", saved(nan5.reshape(2, 3)), "value nan at flat index 5 (index (1, 2), C order) is not finite")
write("value_inf_f4.npy", saved(np.array([np.inf, 1.0], dtype="<f4")), "value inf at flat index 0 (index (0,), C order)")
fort = np.asfortranarray(np.arange(6.0).reshape(2, 3))
fort[1, 0] = -np.inf
fort[0, 2] = np.nan
# In file (Fortran) order the -inf comes first; numpy's a.flat, and our message, count in C order.
write("value_nan_fortran.npy", saved(fort), "value nan at flat index 2 (index (0, 2), C order) is not finite")
last = np.ones((2, 2, 3, 2))
last[1, 1, 2, 1] = np.nan
write("value_nan_4d_last.npy", saved(last), "value nan at flat index 23 (index (1, 1, 2, 1), C order)")

for name in sorted(os.listdir(HERE)):
    if name.endswith(".npy") and name not in expected:
        os.remove(os.path.join(HERE, name))  # a case renamed or removed from this script
with open(os.path.join(HERE, "EXPECTED.tsv"), "w") as f:
    f.write("file\tmessage\n")
    for name in sorted(expected):
        f.write("{}\t{}\n".format(name, expected[name]))
print("wrote {} malformed files to {}".format(len(expected), HERE))
