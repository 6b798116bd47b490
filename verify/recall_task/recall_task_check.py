#!/usr/bin/python3
"""The recall test set regenerated from recall_spec.md by a second implementation (tools/recall_task.py, Python, no
code shared with the C++ engine) gives the same bytes.

1. exp_recall_training --quick (the baseline without attention alone, no capacity curve: seconds) writes its test
   set; recall_task.py check regenerates it from the spec and the run's base seed and compares byte for byte.
2. The check can fail: a copy with one label changed is refused.
3. The committed results/recall_test/, when the checkout has one, regenerated from the spec (seed 20250311).

Exit status: 0 all agree, 1 any disagreement, 77 (skipped, with a message) without NumPy, 2 for bad arguments.

usage: recall_task_check.py --bin BIN_DIR --workdir DIR [--python /usr/bin/python3]
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "tools", "recall_task.py")
SEED = 7


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    args = ap.parse_args()
    status, out = run([args.python, "-c", "import numpy"])
    if status != 0:
        print(f"recall_task_check: skipped: {args.python} cannot import numpy; install Debian's python3-numpy")
        return 77
    shutil.rmtree(args.workdir, ignore_errors=True)
    run_dir = os.path.join(args.workdir, "run")
    status, out = run([os.path.join(args.bin, "exp_recall_training"), "--quick", "--method", "no-attention-baseline",
                       "--capacity", "off", "--seed", str(SEED), "--threads", "1", "--out", run_dir])
    if status != 0:
        print(out)
        print(f"recall_task_check: FAIL: exp_recall_training --quick exited with {status}")
        return 1
    failures = []
    test_dir = os.path.join(run_dir, "recall_test")
    status, out = run([args.python, TOOL, "check", "--dir", test_dir, "--base-seed", str(SEED)])
    print(out, end="")
    if status != 0:
        failures.append(f"the quick run's test set does not regenerate (exit {status})")
    # The check must be able to fail: one label changed (the last int32 of labels.npy, a query's or -1).
    bad = os.path.join(args.workdir, "perturbed")
    shutil.copytree(test_dir, bad)
    with open(os.path.join(bad, "labels.npy"), "r+b") as f:
        f.seek(-4, os.SEEK_END)
        word = f.read(4)
        f.seek(-4, os.SEEK_END)
        f.write(bytes([word[0] ^ 1]) + word[1:])
    status, out = run([args.python, TOOL, "check", "--dir", bad, "--base-seed", str(SEED)])
    if status != 1:
        failures.append(f"self-test: a changed label was not refused (exit {status}):\n{out}")
    else:
        print("self-test: a test set with one label changed is refused, as it must be")
    status, out = run([args.python, TOOL, "check", "--dir", test_dir, "--base-seed", str(SEED + 1)])
    if status != 1:
        failures.append(f"self-test: another base seed was not refused (exit {status})")
    committed = os.path.join(ROOT, "results", "recall_test")
    if os.path.isfile(os.path.join(committed, "manifest.json")):
        status, out = run([args.python, TOOL, "check", "--dir", committed, "--base-seed", "20250311"])
        print(out, end="")
        if status != 0:
            failures.append(f"the committed results/recall_test does not regenerate (exit {status})")
    else:
        print("recall_task_check: no committed results/recall_test in this checkout: only the quick run's test set checked")
    shutil.rmtree(args.workdir, ignore_errors=True)
    for f in failures:
        print("recall_task_check: FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
