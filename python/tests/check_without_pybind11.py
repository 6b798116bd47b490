#!/usr/bin/python3
"""The build where pybind11 is missing: configured in a scratch directory with -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON,
the configuration succeeds, has no module target, `make python`'s target says why and fails, and every python.* test is
reported skipped by ctest (not passed), with the reason, while the other tests are registered as before.

usage: check_without_pybind11.py --source DIR --work DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    r = subprocess.run(["cmake", "-S", a.source, "-B", a.work, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON"],
                       capture_output=True, text=True)
    failures = []
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        return 1
    if "attnlab Python module: not built (pybind11 not found" not in r.stdout:
        failures.append("the configuration does not say the module is not built")
    targets = subprocess.run(["cmake", "--build", a.work, "--target", "help"], capture_output=True, text=True).stdout
    if "attnlab_python" in targets:
        failures.append("a module target exists without pybind11")
    for needed in ("attend", "attnlab_inspect", "verify_attnlab", "python"):
        if f"... {needed}\n" not in targets:
            failures.append(f"no target {needed}")
    made = subprocess.run(["cmake", "--build", a.work, "--target", "python"], capture_output=True, text=True)
    if made.returncode == 0 or "pybind11 not found" not in made.stdout + made.stderr:
        failures.append("the python target does not fail saying pybind11 is missing")
    listed = subprocess.run(["ctest", "-N"], cwd=a.work, capture_output=True, text=True).stdout
    python_tests = re.findall(r"Test +#\d+: (python\.\S+)", listed)
    if not python_tests or "test_method_gradients" not in listed or "inspect.layouts" not in listed:
        failures.append(f"the tests are not all registered: {listed[-500:]}")
    ran = subprocess.run(["ctest", "-R", r"^python\.", "-V"], cwd=a.work, capture_output=True, text=True)
    skipped = re.findall(r"(python\.\S+) \.+\*+Skipped", ran.stdout)
    if sorted(skipped) != sorted(python_tests) or ran.stdout.count("CMake found no pybind11") != len(python_tests):
        failures.append(f"ctest did not report every python test skipped with its reason:\n{ran.stdout}")
    if ran.returncode != 0:
        failures.append(f"ctest failed: {ran.stdout}")
    print(f"without pybind11: configured, no module target, {len(python_tests)} python tests skipped: {', '.join(sorted(skipped))}")
    for f in failures:
        print("FAIL", f)
    shutil.rmtree(a.work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
