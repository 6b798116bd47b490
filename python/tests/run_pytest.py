#!/usr/bin/python3
"""ctest's driver of one pytest file of the Python module (python/CMakeLists.txt).

Imports the module from the build tree (PYTHONPATH=<build>/python) and runs pytest on the file. Exit status 77, which
ctest reports as skipped, not passed, when the module was not built (CMake found no pybind11), when pytest is not
installed, or when every test of the file skipped itself (a peer such as PyTorch missing); each says why. A module
that was built but does not import fails.

usage: run_pytest.py --module found|missing --build BUILD_DIR TEST_FILE
"""
import argparse
import os
import sys

SKIP = 77


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", choices=["found", "missing"], required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("test")
    a = ap.parse_args()
    if a.module == "missing":
        print("skipped: the attnlab Python module was not built: CMake found no pybind11 (Debian: pybind11-dev "
              "python3-pybind11 python3-dev; then make python)")
        return SKIP
    try:
        import pytest
    except ImportError as e:
        print(f"skipped: {sys.executable} cannot import pytest ({e}; Debian: python3-pytest)")
        return SKIP
    package = os.path.join(a.build, "python")
    sys.path.insert(0, package)
    os.environ["PYTHONPATH"] = package + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ["ATTNLAB_BUILD"] = os.path.abspath(a.build)
    import attnlab  # noqa: F401  (a module that was built must import: the error fails the test)

    class Outcomes:
        def __init__(self):
            self.passed = self.skipped = 0

        def pytest_runtest_logreport(self, report):
            if report.when == "call" and report.passed:
                self.passed += 1
            if report.skipped:
                self.skipped += 1

    outcomes = Outcomes()
    status = pytest.main(["-q", "-rs", "-p", "no:cacheprovider", a.test], plugins=[outcomes])
    if status == 0 and outcomes.passed == 0 and outcomes.skipped > 0:
        print(f"skipped: every test of {os.path.basename(a.test)} skipped itself (the reasons above)")
        return SKIP
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
