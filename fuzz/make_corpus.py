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
