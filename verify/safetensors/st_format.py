"""The safetensors format in plain Python (no NumPy), for the checks and the fuzz corpus: a writer of
well-formed files, and the malformed files every reader of hostile input must refuse.

A file: an 8-byte little-endian u64 N, N bytes of UTF-8 JSON {name: {"dtype", "shape", "data_offsets":
[begin, end]}, "__metadata__": {str: str}} padded with spaces, then the data (C order, little-endian).
"""
import json
import struct

DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
               "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}


def header_json(entries, metadata=None):
    """The header text of `entries` [(name, dtype, shape, begin, end)], in their order."""
    obj = {}
    if metadata is not None:
        obj["__metadata__"] = metadata
    for name, dtype, shape, begin, end in entries:
        obj[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [begin, end]}
    return json.dumps(obj, separators=(",", ":"))


def pack(header_text, data, pad=True):
    """Length, header (padded with spaces to a multiple of 8 when pad), data."""
    raw = header_text if isinstance(header_text, bytes) else header_text.encode("utf-8")
    if pad:
        raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw)) + raw + data


def safetensors_bytes(tensors, metadata=None):
    """A well-formed file of `tensors` [(name, dtype, shape, raw bytes)], data contiguous in the given order."""
    entries, data, offset = [], b"", 0
    for name, dtype, shape, raw in tensors:
        count = 1
        for s in shape:
            count *= s
        assert len(raw) == count * DTYPE_BYTES[dtype], name
        entries.append((name, dtype, shape, offset, offset + len(raw)))
        data += raw
        offset += len(raw)
    return pack(header_json(entries, metadata), data)


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def malformed_cases():
    """[(case name, bytes, what the refusal must mention)]: each a file that must be refused whole, with one
    line naming it. A small well-formed file is edited one way at a time."""
    w = f32([0.5, -1.0, 2.0, 0.25, 1.5, -0.75])  # a 2 x 3 F32 weight
    good = [("w", "F32", [2, 3], 0, 24)]
    cases = [
        ("short", b"\x08\x00\x00", "shorter than the 8-byte header length"),
        ("header-past-end", struct.pack("<Q", 1000) + b"{}", "past the end of the file"),
        ("header-too-long", struct.pack("<Q", 100_000_001) + b"{}" + b" " * 6, "above the bound"),
        ("not-json", pack("this is not JSON", w), "malformed JSON"),
        ("not-object", pack("[1, 2, 3]", w), "not a JSON object"),
        ("not-utf8", pack(b'{"w\xff": 1}', b""), "not UTF-8"),
        ("deep", pack("[" * 100 + "]" * 100, b""), "nested deeper"),
        ("entry-not-object", pack('{"w": 7}', w), "is not an object"),
        ("no-offsets", pack('{"w": {"dtype": "F32", "shape": [2, 3]}}', w), "no \"data_offsets\""),
        ("unknown-key", pack('{"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24], "x": 1}}', w), "unknown key"),
        ("unknown-dtype", pack(header_json([("w", "F33", [2, 3], 0, 24)]), w), "unknown dtype"),
        ("shape-negative", pack(header_json([("w", "F32", [-2, 3], 0, 24)]), w), "not a non-negative integer"),
        ("shape-fraction", pack(header_json([("w", "F32", [2.5, 3], 0, 24)]), w), "not a non-negative integer"),
        # A whole number written with a decimal point or an exponent is not an integer in the file's grammar.
        ("shape-decimal-point", pack('{"w": {"dtype": "F32", "shape": [2.0, 3], "data_offsets": [0, 24]}}', w),
         "not a non-negative integer"),
        ("offset-exponent", pack('{"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 2.4e1]}}', w),
         "are not non-negative integers"),
        ("duplicate-name", pack('{"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, '
                                '"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}', w), "duplicate key"),
        ("size-mismatch", pack(header_json([("w", "F32", [2, 2], 0, 24)]), w), "needs 16 bytes"),
        ("size-overflow", pack(header_json([("w", "F32", [2 ** 32, 2 ** 32, 2 ** 20], 0, 24)]), w), "more than 2^64"),
        ("offsets-reversed", pack(header_json([("w", "F32", [0], 24, 0)]), w), "end before they begin"),
        ("past-data", pack(header_json([("w", "F32", [2, 4], 0, 32)]), w), "reach past"),
        ("overlap", pack(header_json([("a", "F32", [2, 3], 0, 24), ("b", "F32", [2], 16, 24)]), w), "overlap"),
        ("gap", pack(header_json([("w", "F32", [2, 2], 8, 24)]), w), "unused"),
        ("trailing", pack(header_json(good), w + b"\x00" * 4), "after the last tensor"),
        ("metadata-not-strings", pack(header_json(good, {"format": 1}), w), "is not a string"),
        ("metadata-not-object", pack('{"__metadata__": [], "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}', w),
         "\"__metadata__\" is not an object"),
    ]
    return cases


def good_cases():
    """[(case name, bytes)]: small well-formed files (fuzz seeds)."""
    w = f32([0.5, -1.0, 2.0, 0.25, 1.5, -0.75])
    return [
        ("f32", safetensors_bytes([("w", "F32", [2, 3], w)])),
        ("f32-metadata", safetensors_bytes([("w", "F32", [2, 3], w)], {"format": "pt"})),
        ("bf16-f16-f64", safetensors_bytes([("a", "BF16", [2], b"\x80\x3f\x00\xc0"), ("b", "F16", [2], b"\x00\x3c\x00\xc0"),
                                            ("c", "F64", [1], struct.pack("<d", 3.0))])),
        ("scalar-and-empty", safetensors_bytes([("s", "F32", [], f32([1.0])), ("e", "F32", [0, 4], b""), ("i", "I32", [1], b"\x01\x00\x00\x00")])),
        ("nan", safetensors_bytes([("w", "F32", [2], f32([1.0, float("nan")]))])),
    ]
