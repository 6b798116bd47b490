#!/usr/bin/python3
"""One whole training step of every attention method, attnlab against PyTorch autograd (issue 14 item 3): the ViT's,
and the recall model's (recall_spec.md: the token embedding and the head at the queries, with exact attention,
with Linformer and without attention).

For each method: bin/vit_step_dump writes a small model's checkpoint, a random batch and attnlab's step in
double (loss, logits, every parameter's gradient, the Adam-updated parameters); tools/vit_torch.py `step` redoes
the step from the same checkpoint and batch in float64 with autograd and torch.optim.Adam; `compare` compares the
two, tensor by tensor. Then a self-test: copies of attnlab's output with one gradient entry or one updated
parameter moved by a small amount must each be refused by `compare` (so this check can fail).

Tolerances (unitless, as `compare` forms them; fixed here, from float64 rounding, u = 2^-53 = 1.1e-16):
  loss, logits, gradients: max |diff| / (the reference tensor's largest magnitude)  <= TOL = 1e-9.
    Both sides compute the same functions in double in different orders. A backward entry is a sum of at most
    N n = 320 token contributions, each the product of a chain of a few hundred roundings through 2 blocks
    forward and back (Nystrom: 6 pseudoinverse iterations of 3 products each); the standard bound gamma_k =
    k u / (1 - k u) with k ~ 10^3 - 10^4 puts the error relative to the sum of |terms| at ~1e-12. Entries of a
    tensor that cancel (sum << sum of |terms|) are measured against the tensor's largest entry, which costs up
    to a further 10^2 - 10^3: 1e-9. A wrong formula is off by a fraction of the gradient itself (1e-3 or more).
  updated parameters: max |diff| / lr <= TOL_UPDATE = 1e-6. Adam's first step moves each entry by
    lr g / (|g| + eps) with eps = 1e-8: a gradient rounding error delta moves it by at most lr delta / eps, and
    for gradients that are zero in exact arithmetic (both sides' noise ~1e-17) that is ~1e-9 lr; 1e-6 leaves a
    margin of 10^3 and still catches a wrong bias correction, beta or eps (off by a good fraction of lr).

Exit status: 0 all agree, 1 any disagreement (or a failed step), 77 (skipped, with a message) when the Python
interpreter cannot import torch (Debian: python3-torch), 2 for bad arguments.

usage: vit_step_check.py --dump BIN/vit_step_dump --workdir DIR [--python /usr/bin/python3] [--keep]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIRROR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "vit_torch.py")
TOL, TOL_UPDATE = 1e-9, 1e-6
STEP, TOTAL_STEPS = 3, 10  # a step inside the cosine schedule, so lr is neither the peak nor 0


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", required=True, help="the vit_step_dump executable")
    ap.add_argument("--workdir", required=True, help="a directory to write into (emptied first)")
    ap.add_argument("--python", default="/usr/bin/python3", help="the interpreter with torch and numpy")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    if not os.access(args.dump, os.X_OK):
        print(f"vit_step_check: --dump {args.dump} is not an executable", file=sys.stderr)
        return 2
    status, out = run([args.python, "-c", "import torch, numpy"])
    if status != 0:
        last = out.strip().splitlines()[-1] if out.strip() else f"exit status {status}"
        print(f"vit_step_check: skipped: {args.python} cannot import torch and numpy ({last}); "
              "install Debian's python3-torch to compare a training step against PyTorch autograd")
        return 77
    import numpy as np  # only now: the interpreter running us may lack it when the skip above applies

    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    status, out = run([args.dump, "--out", args.workdir, "--step", str(STEP), "--total-steps", str(TOTAL_STEPS)])
    print(out, end="")
    if status != 0:
        print(f"vit_step_check: FAIL: {args.dump} exited with status {status}")
        return 1
    methods = sorted(d for d in os.listdir(args.workdir) if os.path.isdir(os.path.join(args.workdir, d)))
    failures = [] if methods else [f"{args.dump} wrote no method's directory"]
    for m in methods:
        d = os.path.join(args.workdir, m)
        batch = (["--keys", os.path.join(d, "keys.npy"), "--values", os.path.join(d, "values.npy")]
                 if os.path.isfile(os.path.join(d, "keys.npy")) else ["--images", os.path.join(d, "images.npy")])
        status, out = run([args.python, MIRROR, "step", "--checkpoint", os.path.join(d, "checkpoint"), *batch,
                           "--labels", os.path.join(d, "labels.npy"),
                           "--out", os.path.join(d, "torch"), "--step", str(STEP), "--total-steps", str(TOTAL_STEPS)])
        print(out, end="")
        if status != 0:
            failures.append(f"{m}: vit_torch.py step exited with status {status}")
            continue
        status, out = compare(args.python, os.path.join(d, "torch"), os.path.join(d, "attnlab"))
        print(f"---- {m}: attnlab against PyTorch autograd\n{out}", end="")
        if status != 0:
            failures.append(f"{m}: attnlab's step disagrees with PyTorch's (exit status {status})")

    # The self-test: the comparison must refuse a gradient entry moved by 1e-6 of its tensor's scale and an
    # updated parameter moved by 1e-4 lr (each 10^3 above its tolerance and far below a real bug's size).
    if not failures and methods:
        d = os.path.join(args.workdir, methods[0])
        ref, cand = os.path.join(d, "torch"), os.path.join(d, "attnlab")
        for kind, name, size in (("grad", "block1.attn.Wk", None), ("updated", "block0.mlp.b1", 1e-4)):
            bad = os.path.join(d, f"perturbed-{kind}")
            shutil.rmtree(bad, ignore_errors=True)
            shutil.copytree(cand, bad)
            path = os.path.join(bad, kind, name + ".npy")
            a = np.load(path)
            if size is None:
                a.flat[a.size // 2] += 1e-6 * float(np.max(np.abs(a)))
            else:
                with open(os.path.join(ref, "step.json")) as f:
                    lr = float(json.load(f)["lr"])
                a.flat[0] += size * lr
            np.save(path, a)
            status, out = compare(args.python, ref, bad)
            if status != 1:
                failures.append(f"self-test: {kind}/{name} perturbed, compare exited with {status} (1 expected):\n{out}")
            else:
                print(f"self-test: {methods[0]}'s {kind} {name} perturbed: refused, as it must be")

    if not args.keep:
        shutil.rmtree(args.workdir, ignore_errors=True)
    for f in failures:
        print("vit_step_check: FAIL:", f)
    if failures:
        return 1
    print(f"vit_step_check: {len(methods)} methods ({', '.join(methods)}): attnlab's step equals PyTorch's "
          f"(tolerances {TOL:g}, updates {TOL_UPDATE:g} lr)")
    return 0


def compare(python, reference, candidate):
    return run([python, MIRROR, "compare", "--reference", reference, "--candidate", candidate,
                "--tol", str(TOL), "--tol-update", str(TOL_UPDATE)])


if __name__ == "__main__":
    sys.exit(main())
