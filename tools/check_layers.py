#!/usr/bin/env python3
"""Checks that every #include under lib/attnlab/ respects the library's layers (docs/architecture.md, "Layers").

Each layer is a folder lib/attnlab/<layer>/. A file may include headers of the layers LAYERS lists for its
own layer, and third-party headers THIRD_PARTY lists for it; standard C++ headers (<vector>, <cmath>: no
slash, no ".h") are always allowed. The CMake targets enforce the same structure at link time
(CMakeLists.txt: attnlab_core, attnlab_numerics, attnlab_io, attnlab_model, attnlab); this check sees the
header-only dependencies a linker cannot.

usage: tools/check_layers.py [LIB_DIR]    (default: lib/attnlab beside this script's parent)
       tools/check_layers.py --self-test  (the check on a made-up tree with known violations)
Exit status 0 when every include is allowed, 1 with one line per violation (file:line, the include,
why) otherwise, 2 for bad usage.
"""
import os
import re
import sys
import tempfile

# Which layers a layer's files may include (its own always). The table is the architecture: numerics
# (core, linalg, qk, theory, attention) know nothing of files, formats or command lines; io knows only
# core; model is the trained ViT on both; lab, the experiments' layer, sits on top.
NUMERICS = ["core", "linalg", "qk", "theory", "attention"]
LAYERS = {
    "core": [],
    "linalg": ["core"],
    "qk": ["core", "linalg"],
    "theory": ["core", "linalg", "qk"],
    "attention": ["core", "linalg", "qk"],
    "io": ["core"],
    "model": NUMERICS + ["io"],
    "lab": NUMERICS + ["io", "model"],
}
# Third-party headers by prefix (a directory such as "Eigen/" or a file such as "zlib.h").
THIRD_PARTY = {
    "core": ["Eigen/"],
    "linalg": ["Eigen/", "immintrin.h"],
    "qk": ["Eigen/", "Spectra/"],
    "theory": ["Eigen/"],
    "attention": ["Eigen/", "omp.h"],
    "io": ["Eigen/", "fmt/", "zlib.h", "sys/", "unistd.h", "fcntl.h", "signal.h", "pthread.h"],
    "model": ["Eigen/", "unsupported/Eigen/", "fmt/", "omp.h"],
    "lab": ["Eigen/", "CLI/", "fmt/", "boost/", "sys/", "unistd.h", "fcntl.h", "omp.h", "spawn.h"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(lib_dir, path):
    rel = os.path.relpath(path, lib_dir)
    return rel.split(os.sep)[0] if os.sep in rel else None


def violations(lib_dir):
    found = []
    for root, _, files in os.walk(lib_dir):
        for name in sorted(files):
            if not name.endswith((".hpp", ".cpp", ".h")):
                continue
            path = os.path.join(root, name)
            layer = layer_of(lib_dir, path)
            rel = os.path.relpath(path, os.path.dirname(os.path.dirname(lib_dir)))
            if layer not in LAYERS:
                found.append(f"{rel}: folder '{layer}' is not a layer of tools/check_layers.py's table")
                continue
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    kind, header = m.groups()
                    where = f"{rel}:{number}: #include {kind}{header}{'>' if kind == '<' else chr(34)}"
                    if header.startswith("attnlab/"):
                        target = header.split("/")[1]
                        if target != layer and target not in LAYERS[layer]:
                            allowed = ", ".join([layer] + LAYERS[layer])
                            found.append(f"{where}: layer '{layer}' may include {allowed}, not '{target}'")
                    elif kind == '"':
                        found.append(f"{where}: quote includes are for attnlab/ headers only")
                    elif "/" in header or header.endswith(".h"):
                        if not any(header.startswith(p) for p in THIRD_PARTY[layer]):
                            allowed = ", ".join(THIRD_PARTY[layer])
                            found.append(f"{where}: layer '{layer}' may use third-party headers {allowed} only")
    return found


def self_test():
    """The check must find each kind of violation in a made-up tree and accept a clean one."""
    with tempfile.TemporaryDirectory() as tmp:
        lib = os.path.join(tmp, "lib", "attnlab")

        def write(rel, text):
            path = os.path.join(lib, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)

        write("core/a.hpp", "#include <vector>\n#include <Eigen/Dense>\n")
        write("attention/b.cpp", '#include "attnlab/core/a.hpp"\n#include "attnlab/qk/c.hpp"\n')
        assert violations(lib) == [], violations(lib)
        write("attention/bad.cpp", '#include "attnlab/io/npy.hpp"\n#include <fmt/format.h>\n')
        write("io/bad.hpp", '  #  include "attnlab/lab/verdict.hpp"\n#include "local.hpp"\n')
        write("extra/x.hpp", "\n")
        got = violations(lib)
        expect = ["attention/bad.cpp:1", "attention/bad.cpp:2", "io/bad.hpp:1", "io/bad.hpp:2", "folder 'extra'"]
        for e in expect:
            assert any(e in g for g in got), (e, got)
        assert len(got) == len(expect), got
    print("check_layers self-test: 5 planted violations found, the clean tree accepted")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print("usage: check_layers.py [LIB_DIR] | --self-test", file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lib = argv[1] if len(argv) == 2 else os.path.join(here, "lib", "attnlab")
    if not os.path.isdir(lib):
        print(f"check_layers.py: '{lib}' is not a directory", file=sys.stderr)
        return 2
    found = violations(lib)
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} include(s) break the layers (tools/check_layers.py's table)", file=sys.stderr)
        return 1
    print(f"layers: every include under {lib} is allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
