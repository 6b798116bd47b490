#!/usr/bin/python3
"""Fills fuzz/corpus/ with the seed inputs for fuzz/npy_fuzz.cpp: every good and malformed fixture.

    /usr/bin/python3 fuzz/make_corpus.py

Each file is named after the fixture it copies, so a finding can be traced to its seed.
Files over 4096 bytes (the fuzzer's -max_len) are cut to their first 4096 bytes.
"""
import os
import shutil

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
