#!/usr/bin/env bash
# An install is the product as users meet it: `cmake --install BUILD --prefix P` into a fresh prefix, then, with
# the checkout and the build tree out of reach (an empty file system mounted over each, in a mount namespace of
# this test's own), an experiment and attnlab_inspect with its figure run from P/bin alone. Before the programs
# found their files beside themselves, they reached tools/ through the checkout's path compiled in, and failed
# after measuring once it was moved or unreadable.
#
# usage: tools/test_install.sh SOURCE_DIR BUILD_DIR
# Exit status 0 passed, 1 failed, 77 skipped (no mount namespace here: not root, or no unshare).
set -euo pipefail
src=$(cd "$1" && pwd); build=$(cd "$2" && pwd)
fail() { echo "test_install: FAIL: $*" >&2; exit 1; }

if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! unshare --mount true 2>/dev/null; then
  echo "test_install: no mount namespace here (needs root and unshare): skipped"; exit 77
fi
work=$(mktemp -d /tmp/attnlab-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; fail "cmake --install failed"; }
for f in bin/exp_qk_spectrum bin/attnlab_inspect bin/attend share/attnlab/tools/inspect_figure.py share/attnlab/tools/make_report.py \
         share/attnlab/tools/verdicts.py share/attnlab/lib/attnlab/io/verdicts.tsv; do
  [ -e "$prefix/$f" ] || fail "the installation lacks $f"
done
# A small GPT-2-shaped checkpoint for the inspector, made while the checkout's helpers are still in reach.
/usr/bin/python3 - "$src/verify/safetensors" "$work/model" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import models, st_numpy
tensors, config, meta, *_ = models.build("gpt2", "F32", seed=3)
st_numpy.write_checkpoint(sys.argv[2], tensors, config, 1, meta)
PY

# The programs, with the checkout and the build tree hidden. The prefix lies outside both.
cat >"$work/run.sh" <<'SH'
set -eu
prefix=$1 work=$2 src=$3 build=$4
mount -t tmpfs none "$src"
case "$build" in "$src"/*) ;; *) mount -t tmpfs none "$build" ;; esac
[ -z "$(ls -A "$src")" ] || { echo "the checkout is still visible"; exit 1; }
cd "$work"
"$prefix/bin/exp_qk_spectrum" --quick --threads 2 --out "$work/spectrum"
"$prefix/bin/attnlab_inspect" --layout gpt2 "$work/model" --out "$work/inspect"
SH
if ! unshare --mount --propagation private bash "$work/run.sh" "$prefix" "$work" "$src" "$build" >"$work/run.log" 2>&1; then
  cat "$work/run.log" >&2; fail "a program of the installation failed with the checkout and the build tree hidden"
fi
grep -q "^R5" "$work/run.log" || { cat "$work/run.log" >&2; fail "exp_qk_spectrum printed no verdicts"; }
[ -s "$work/spectrum/claims.csv" ] || fail "exp_qk_spectrum wrote no claims.csv"
/usr/bin/python3 - "$work/inspect/inspect_skew_share.svg" <<'PY' || fail "attnlab_inspect's figure is missing or incomplete"
import sys, xml.etree.ElementTree as ET
sys.exit(0 if ET.parse(sys.argv[1]).getroot().tag.endswith("svg") else 1)
PY
echo "test_install: the installation in $prefix ran an experiment and attnlab_inspect with its figure, checkout and build hidden"
