#!/usr/bin/python3
"""The recall task's sequences from recall_spec.md alone, in Python (a second implementation of the spec, sharing no
code with the C++ engine): std::mt19937_64, attnlab's uniform, shuffled_indices and derive_seed written out, the
sequences of a split, and its files as recall_spec.md's "The test set on disk" describes them.

  generate  writes the split's keys.npy, values.npy, labels.npy (int32, (sequences, 2N)) into --out.
  check     regenerates the split a directory written by exp_recall_training holds (its manifest.json names the
            task, the split's seed and the count) and compares the three .npy files byte for byte; with --base-seed S
            it also checks that the manifest's seed is the test split's seed of a sweep based at S. Exit 0 when every
            file agrees, 1 otherwise.

Exit status 2 with one line for bad input; 77 when NumPy is not importable (Debian: python3-numpy).

usage: tools/recall_task.py generate --pairs N --keys K --values V --seed S --split {train,validation,test}
                                     --sequences C --out DIR
       tools/recall_task.py check --dir DIR [--base-seed S]
"""
import argparse
import io
import json
import os
import sys

MASK = (1 << 64) - 1
SPLIT_SALT = {"train": 201, "validation": 202, "test": 203}  # recall_spec.md, "Splits"


class InputError(Exception):
    """Bad input: one line, exit status 2."""


class MT19937_64:
    """std::mt19937_64 (C++11 [rand.predef]): w 64, n 312, m 156, r 31, a 0xb5026f5aa96619e9, tempering u 29
    d 0x5555555555555555, s 17 b 0x71d67fffeda60000, t 37 c 0xfff7eee000000000, l 43, seeded by f 6364136223846793005."""
    N, M = 312, 156
    UPPER, LOWER = MASK ^ ((1 << 31) - 1), (1 << 31) - 1

    def __init__(self, seed):
        mt = [seed & MASK]
        for i in range(1, self.N):
            mt.append((6364136223846793005 * (mt[-1] ^ (mt[-1] >> 62)) + i) & MASK)
        self.mt, self.index = mt, self.N

    def _twist(self):
        mt, n, m = self.mt, self.N, self.M
        for i in range(n):
            y = (mt[i] & self.UPPER) | (mt[(i + 1) % n] & self.LOWER)
            mt[i] = mt[(i + m) % n] ^ (y >> 1) ^ (0xB5026F5AA96619E9 if y & 1 else 0)
        self.index = 0

    def next(self):
        if self.index >= self.N:
            self._twist()
        x = self.mt[self.index]
        self.index += 1
        x ^= (x >> 29) & 0x5555555555555555
        x ^= (x << 17) & 0x71D67FFFEDA60000
        x ^= (x << 37) & 0xFFF7EEE000000000
        x ^= x >> 43
        return x & MASK

    def uniform(self):
        """attnlab's Rng::uniform(): 53 random bits, (next() >> 11) * 2^-53."""
        return (self.next() >> 11) * 2.0 ** -53


def splitmix(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def derive_seed(base, index):
    return splitmix(splitmix(base) ^ ((index * 0xD1B54A32D192ED03 + 1) & MASK))


def shuffled_indices(m, rng):
    idx = list(range(m))
    for i in range(m - 1, 0, -1):
        j = int(rng.uniform() * (i + 1))
        idx[i], idx[j] = idx[j], idx[i]
    return idx


def sequence(pairs, keys, values, seed):
    """(key, value, label) lists of one sequence (recall_spec.md, "One sequence"); -1 where there is none."""
    rng = MT19937_64(seed)
    ks = []
    for _ in range(pairs):
        k = int(rng.uniform() * keys)
        while k in ks:
            k = int(rng.uniform() * keys)
        ks.append(k)
    vs = [int(rng.uniform() * values) for _ in range(pairs)]
    pi = shuffled_indices(2 * pairs, rng)
    key, value, label = [0] * (2 * pairs), [-1] * (2 * pairs), [-1] * (2 * pairs)
    for j in range(pairs):
        key[pi[j]], value[pi[j]] = ks[j], vs[j]
        key[pi[pairs + j]], label[pi[pairs + j]] = ks[j], vs[j]
    return key, value, label


def split_files(pairs, keys, values, split_seed, count):
    """{file name: the bytes numpy.save writes} of the split's three arrays."""
    import numpy as np
    rows = [sequence(pairs, keys, values, derive_seed(split_seed, i)) for i in range(count)]
    out = {}
    for f, name in enumerate(("keys.npy", "values.npy", "labels.npy")):
        a = np.array([r[f] for r in rows], dtype="<i4").reshape(count, 2 * pairs)
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        out[name] = buf.getvalue()
    return out


def check_task(pairs, keys, values, where):
    if not 1 <= pairs <= keys or keys > 1 << 20 or not 1 <= values <= 256:
        raise InputError(f"{where}: pairs {pairs}, keys {keys}, values {values} are not a task (1 <= pairs <= keys, values <= 256)")


def cmd_generate(args):
    check_task(args.pairs, args.keys, args.values, "generate")
    if args.sequences < 0:
        raise InputError(f"--sequences {args.sequences} is negative")
    files = split_files(args.pairs, args.keys, args.values, derive_seed(args.seed, SPLIT_SALT[args.split]), args.sequences)
    os.makedirs(args.out, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)
    print(f"recall_task: {args.sequences} {args.split} sequences of {args.pairs} pairs in {args.out}")
    return 0


def cmd_check(args):
    path = os.path.join(args.dir, "manifest.json")
    try:
        m = json.load(open(path, encoding="utf-8"))
        pairs, keys, values, count = (int(m[k]) for k in ("pairs", "keys", "values", "sequences"))
        seed = int(m["seed"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"{path}: not a recall set's manifest ({e})")
    if m.get("format") != "attnlab-recall-set" or m.get("version") != 1:
        raise InputError(f"{path}: not an attnlab-recall-set manifest of version 1")
    check_task(pairs, keys, values, path)
    problems = []
    if args.base_seed is not None and seed != derive_seed(args.base_seed, SPLIT_SALT["test"]):
        problems.append(f"the manifest's seed {seed} is not the test split's seed of base seed {args.base_seed}, "
                        f"{derive_seed(args.base_seed, SPLIT_SALT['test'])}")
    for name, data in split_files(pairs, keys, values, seed, count).items():
        p = os.path.join(args.dir, name)
        got = open(p, "rb").read() if os.path.isfile(p) else None
        if got is None:
            problems.append(f"{p} is missing")
        elif got != data:
            first = next((i for i, (a, b) in enumerate(zip(got, data)) if a != b), min(len(got), len(data)))
            problems.append(f"{p}: {len(got)} bytes, regenerated {len(data)}; first difference at byte {first}")
    for p in problems:
        print("recall_task check: FAIL:", p)
    if problems:
        return 1
    print(f"recall_task check: {args.dir}: {count} sequences of {pairs} pairs ({keys} keys, {values} values) regenerated "
          "from recall_spec.md: the same bytes")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="a split's sequences as .npy files")
    g.add_argument("--pairs", type=int, required=True)
    g.add_argument("--keys", type=int, required=True)
    g.add_argument("--values", type=int, required=True)
    g.add_argument("--seed", type=int, required=True, help="the sweep's base seed (a run's seed for the training stream)")
    g.add_argument("--split", choices=sorted(SPLIT_SALT), required=True)
    g.add_argument("--sequences", type=int, required=True)
    g.add_argument("--out", required=True)
    c = sub.add_parser("check", help="regenerate a written split and compare it byte for byte")
    c.add_argument("--dir", required=True)
    c.add_argument("--base-seed", type=int, help="check that the split is the test set of a sweep based at this seed")
    args = ap.parse_args()
    try:
        import numpy  # noqa: F401  (the files are numpy.save's)
    except ImportError as e:
        print(f"recall_task: NumPy is not importable ({e}); install Debian's python3-numpy", file=sys.stderr)
        return 77
    try:
        return cmd_generate(args) if args.command == "generate" else cmd_check(args)
    except InputError as e:
        print(f"recall_task: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
