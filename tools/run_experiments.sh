#!/usr/bin/env bash
# Runs every experiment (bin/exp_*) into a staging directory, then replaces the target
# directory with it only if all succeeded: a failed run leaves the previous results whole.
# usage: tools/run_experiments.sh BIN_DIR OUT_DIR [flags passed to every experiment]
set -euo pipefail
bin=$1; out=$2; shift 2
parent=$(dirname "$out"); mkdir -p "$parent"
stage=$(mktemp -d "$parent/.$(basename "$out").staging.XXXXXX")
trap 'rm -rf "$stage"' EXIT
shopt -s nullglob
exps=("$bin"/exp_*)
[ ${#exps[@]} -gt 0 ] || { echo "no experiments found in $bin" >&2; exit 1; }
i=0; start=$(date +%s)
for exe in "${exps[@]}"; do
  i=$((i+1)); name=$(basename "$exe"); t0=$(date +%s)
  printf '[%d/%d] %-28s ' "$i" "${#exps[@]}" "$name"
  if ! "$exe" --out "$stage" "$@" 2>"$stage/.stderr"; then
    echo "FAILED"; sed 's/^/    /' "$stage/.stderr" >&2
    echo "experiment $name failed; $out left as it was" >&2
    exit 1
  fi
  echo "done in $(( $(date +%s) - t0 )) s"
done
rm -f "$stage/.stderr"
rm -rf "$out.old"; [ -d "$out" ] && mv "$out" "$out.old"
mv "$stage" "$out"; rm -rf "$out.old"; trap - EXIT
chmod 755 "$out"
echo "all ${#exps[@]} experiments done in $(( $(date +%s) - start )) s; results in $out"
