#!/usr/bin/python3
"""Fills fuzz/corpus/ with the seed inputs for fuzz/npy_fuzz.cpp: every good and malformed fixture.

    /usr/bin/python3 fuzz/make_corpus.py

Each file is named after the fixture it copies, so a finding can be traced to its seed.
Files over 4096 bytes (the fuzzer's -max_len) are cut to their first 4096 bytes.
"""
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
MAX_LEN = 4096

shutil.rmtree(CORPUS, ignore_errors=True)
os.makedirs(CORPUS)
count = 0
for kind in ("npy_good", "npy_malformed"):
    directory = os.path.join(ROOT, "verify", kind)
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".npy"):
            continue
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read(MAX_LEN)
        with open(os.path.join(CORPUS, "{}-{}".format(kind[4:], name)), "wb") as f:
            f.write(data)
        count += 1
print("wrote {} seeds to {}".format(count, CORPUS))

# Seeds for fuzz/idx_fuzz.cpp: small image and label files, raw and gzip, and a few broken ones.
import gzip
import json
import struct

IDX = os.path.join(ROOT, "fuzz", "corpus-idx")
shutil.rmtree(IDX, ignore_errors=True)
os.makedirs(IDX)
images = struct.pack(">IIII", 0x803, 2, 3, 4) + bytes(range(24))
labels = struct.pack(">II", 0x801, 5) + bytes([0, 9, 3, 3, 7])
seeds = {
    "images-2x3x4": images,
    "labels-5": labels,
    "images-truncated": images[:-5],
    "labels-trailing": labels + b"\x00",
    "labels-bad-class": labels[:-1] + b"\x0a",
    "images-wrong-magic": b"\x00\x00\x08\x01" + images[4:],
    "images-huge-count": struct.pack(">IIII", 0x803, 0xFFFFFFFF, 28, 28) + bytes(16),
}
for name, data in list(seeds.items()):
    seeds[name + ".gz"] = gzip.compress(data, mtime=0)
for name, data in seeds.items():
    with open(os.path.join(IDX, name), "wb") as f:
        f.write(data)
print("wrote {} seeds to {}".format(len(seeds), IDX))

# Seeds for fuzz/checkpoint_manifest_fuzz.cpp: a valid manifest as attnlab writes one, and edits of it.
MANIFEST = os.path.join(ROOT, "fuzz", "corpus-checkpoint_manifest")
shutil.rmtree(MANIFEST, ignore_errors=True)
os.makedirs(MANIFEST)
good = {"format": "attnlab-vit-checkpoint", "version": 2, "method": "exact", "method_description": "softmax",
        "D": 8, "H": 2, "L": 1, "mlp": 12, "n": 16, "patch": 4, "stride": 2, "pad": 1, "image": 8, "classes": 10,
        "projection_k": 0, "features": 0, "landmarks": 0, "pinv_iterations": 0, "seed": 7, "step": 3,
        "parameters": [{"name": "embed.W", "file": "embed.W.npy", "shape": [16, 8], "dtype": "float32", "kind": "parameter"},
                       {"name": "head.b", "file": "head.b.npy", "shape": [10], "dtype": "float32", "kind": "parameter"}]}
variants = {"good": good, "stride-3": dict(good, stride=3), "n-wrong": dict(good, n=15), "D-huge": dict(good, D=1e300),
            "version-1": dict(good, version=1), "shape-negative": dict(good, parameters=[dict(good["parameters"][0], shape=[-1])]),
            # A tensor listed twice (the second entry at another file), a dtype or kind the files do not hold,
            # a model too large for any machine's memory (widths inside the accepted range).
            "name-twice": dict(good, parameters=good["parameters"] + [dict(good["parameters"][0], file="head.b.npy")]),
            "dtype-float64": dict(good, parameters=[dict(good["parameters"][0], dtype="float64")]),
            "kind-weights": dict(good, parameters=[dict(good["parameters"][0], kind="weights")]),
            "L-2e20": dict(good, L=1 << 20)}
for name, m in variants.items():
    with open(os.path.join(MANIFEST, name + ".json"), "w") as f:
        json.dump(m, f, indent=1)
with open(os.path.join(MANIFEST, "deep.json"), "w") as f:
    f.write("[" * 100 + "]" * 100)
# A key given twice (json.dump cannot write one): "D" twice, the second silently winning in a last-wins reader.
with open(os.path.join(MANIFEST, "key-twice.json"), "w") as f:
    f.write(json.dumps(good, indent=1).replace('"D": 8,', '"D": 8,\n "D": 64,', 1))
print("wrote {} seeds to {}".format(len(variants) + 2, MANIFEST))

# Seeds for fuzz/safetensors_fuzz.cpp: small well-formed files and every malformed case the checks refuse
# (verify/safetensors/st_format.py, plain Python), each cut to the fuzzer's -max_len.
sys.path.insert(0, os.path.join(ROOT, "verify", "safetensors"))
import st_format  # noqa: E402

SAFETENSORS = os.path.join(ROOT, "fuzz", "corpus-safetensors")
shutil.rmtree(SAFETENSORS, ignore_errors=True)
os.makedirs(SAFETENSORS)
st_seeds = [("good-" + name, data) for name, data in st_format.good_cases()] + \
           [("bad-" + name, data) for name, data, _ in st_format.malformed_cases()]
for name, data in st_seeds:
    with open(os.path.join(SAFETENSORS, name + ".safetensors"), "wb") as f:
        f.write(data[:MAX_LEN])
print("wrote {} seeds to {}".format(len(st_seeds), SAFETENSORS))

# Seeds for fuzz/shard_stamp_fuzz.cpp: a shard, a merged and a run stamp laid out as stamp_json writes them,
# and near-misses of each (a field missing or mistyped, counts out of range or past an int, paths that
# leave the directory, a key twice).
STAMP = os.path.join(ROOT, "fuzz", "corpus-shard_stamp")
shutil.rmtree(STAMP, ignore_errors=True)
os.makedirs(STAMP)


def stamp_text(s):
    """A stamp as stamp_json (lib/attnlab/lab/shard_stamp.cpp) lays it out; a key left out of `s` is left out."""
    lines = []
    for key in ("format", "experiment", "run", "finished", "previous_run", "shard", "shards", "seed", "quick", "build",
                "options", "sweeps", "hosts", "tables", "artifacts"):
        if key not in s:
            continue
        if key in ("hosts", "tables", "artifacts") and s[key]:
            lines.append('  "%s": [\n%s\n  ]' % (key, ",\n".join("    " + json.dumps(row) for row in s[key])))
        else:
            lines.append('  "%s": %s' % (key, json.dumps(s[key])))
    return "{\n" + ",\n".join(lines) + "\n}\n"


shard = {"format": "attnlab-shard-2", "experiment": "exp_qk_identities", "shard": 2, "shards": 3,
         "seed": "20250311", "quick": True, "build": "a6c794d avx2", "options": "--method exact --epochs 3",
         "sweeps": [5, 12, 0], "hosts": [{"shard": 2, "host": "node7", "cpu": "AMD EPYC 7763 64-Core Processor"}],
         "tables": [{"file": "qk_identities.csv", "bytes": 1234, "crc32": 4294967295},
                    {"file": "qk_timing.csv", "bytes": 0, "crc32": 0}],
         "artifacts": [{"file": "checkpoints/exact/manifest.json", "bytes": 900, "crc32": 17}]}
merged = dict(shard, format="attnlab-merged-2", shard=0,
              hosts=[{"shard": i, "host": "node%d" % i, "cpu": "cpu"} for i in (1, 2, 3)])
run = dict(shard, format="attnlab-run-1", run="node7-4242-18a2b3c4d5e6f708", finished=False,
           previous_run="node7-4100-18a2b3c4d5e6f000", shard=1, shards=1, hosts=[dict(shard["hosts"][0], shard=1)])
table = shard["tables"][0]
stamps = {
    "shard": shard, "merged": merged, "run": run, "run-finished": dict(run, finished=True, previous_run=""),
    "shard-1-of-1-empty": dict(shard, shard=1, shards=1, sweeps=[], hosts=[], tables=[], artifacts=[]),
    "seed-max": dict(shard, seed="18446744073709551615"), "seed-2e64": dict(shard, seed="18446744073709551616"),
    "seed-number": dict(shard, seed=7), "seed-negative": dict(shard, seed="-1"),
    "format-9": dict(shard, format="attnlab-shard-9"), "shard-4-of-3": dict(shard, shard=4),
    "shard-0": dict(shard, shard=0), "run-shard-2": dict(run, shard=2, shards=2), "merged-shard-1": dict(merged, shard=1),
    # Counts past an int: 2^32 + 2 and 2^32 + 3 wrap to 2 of 3 in a 32-bit int.
    "shard-2e32": dict(shard, shard=(1 << 32) + 2, shards=(1 << 32) + 3),
    "shards-huge": dict(shard, shards=2000000000), "shard-fraction": dict(shard, shard=1.5),
    "host-shard-2e32": dict(shard, hosts=[dict(shard["hosts"][0], shard=(1 << 32) + 2)]),
    "sweeps-negative": dict(shard, sweeps=[-1]), "sweeps-2e53": dict(shard, sweeps=[2 ** 53 + 2]),
    "sweeps-string": dict(shard, sweeps=["5"]), "quick-string": dict(shard, quick="true"),
    "finished-missing": {k: v for k, v in run.items() if k != "finished"},
    "tables-missing": {k: v for k, v in shard.items() if k != "tables"},
    "table-path": dict(shard, tables=[dict(table, file="../x.csv")]),
    "table-hidden": dict(shard, tables=[dict(table, file=".claims.csv")]),
    "table-empty": dict(shard, tables=[dict(table, file="")]),
    "crc-2e32": dict(shard, tables=[dict(table, crc32=1 << 32)]),
    "bytes-negative": dict(shard, tables=[dict(table, bytes=-1)]),
    "artifact-absolute": dict(shard, artifacts=[{"file": "/etc/passwd", "bytes": 1, "crc32": 1}]),
    "artifact-climbs": dict(shard, artifacts=[{"file": "checkpoints/../../x", "bytes": 1, "crc32": 1}]),
    "artifact-trailing-slash": dict(shard, artifacts=[{"file": "checkpoints/", "bytes": 1, "crc32": 1}]),
    # An experiment's name is a file name too: <experiment>.shard.json, and the merged stamp written from it.
    "experiment-climbs": dict(shard, experiment="../../exp_qk_identities"),
    "experiment-path": dict(shard, experiment="sub/exp_qk_identities"),
    "experiment-empty": dict(shard, experiment=""), "experiment-hidden": dict(shard, experiment=".exp"),
    "newline-in-format": dict(shard, format="attnlab-shard-2\nsecond line"),
    "newline-in-table": dict(shard, tables=[dict(table, file="a\nb.csv")]),
}
for name, s in stamps.items():
    with open(os.path.join(STAMP, name + ".json"), "w") as f:
        f.write(stamp_text(s))
with open(os.path.join(STAMP, "key-twice.json"), "w") as f:
    f.write(stamp_text(shard).replace('"shard": 2,', '"shard": 2,\n  "shard": 3,', 1))
with open(os.path.join(STAMP, "not-object.json"), "w") as f:
    f.write('["attnlab-shard-2"]\n')
print("wrote {} seeds to {}".format(len(stamps) + 2, STAMP))

# Seeds for fuzz/json_fuzz.cpp: the JSON reader alone, every kind of value and every refusal it names.
JSON = os.path.join(ROOT, "fuzz", "corpus-json")
shutil.rmtree(JSON, ignore_errors=True)
os.makedirs(JSON)
json_seeds = {
    "values": '{"a": [1, -2.5e3, 0, true, false, null, "x\\"\\\\\\/\\n\\t"], "b": {}, "c": []}',
    "numbers": "[0, -0, 1.5, 1e308, -1e-308, 5e-324, 9007199254740992, 9007199254740993, 1E+2, 0.1e-2]",
    "number-inf": "[1e309]", "number-leading-zero": "[01]", "number-dot": "[1.]", "number-exp": "[1e]",
    "number-plus": "[+1]", "number-hex": "[0x10]", "number-nan": "[NaN]",
    "string-control": '["a\x01b"]', "string-unterminated": '["abc', "escape-unicode": '["\\u0041"]',
    "escape-bad": '["\\q"]', "key-twice": '{"a": 1, "b": 2, "a": 3}',
    "key-twice-newline": '{"a\\nb": 1, "a\\nb": 2}', "key-not-string": "{1: 2}",
    "trailing": "{} x", "trailing-comma": "[1, 2,]", "missing-colon": '{"a" 1}', "empty": "", "spaces": " \t\r\n",
    "deep-64": "[" * 64 + "]" * 64, "deep-65": "[" * 65 + "]" * 65, "deep-objects": '{"a":' * 70 + "1" + "}" * 70,
    "true-prefix": "[tru]", "null-suffix": "[nullx]", "utf8": '{"\xc3\xa9": "\xe2\x82\xac"}',
}
for name, text in json_seeds.items():
    with open(os.path.join(JSON, name + ".json"), "wb") as f:
        f.write(text.encode("utf-8", "surrogateescape"))
print("wrote {} seeds to {}".format(len(json_seeds), JSON))
