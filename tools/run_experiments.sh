#!/usr/bin/env bash
# Runs every experiment (bin/exp_*) into a staging directory, then replaces the target
# directory with it only if all succeeded: a failed run leaves the previous results whole.
# usage: [REPORT=1] tools/run_experiments.sh BIN_DIR OUT_DIR [flags passed to every experiment]
set -euo pipefail
bin=$1; out=$2; shift 2
parent=$(dirname "$out"); mkdir -p "$parent"
stage=$(mktemp -d "$parent/.$(basename "$out").staging.XXXXXX")
trap 'rm -rf "$stage"' EXIT
shopt -s nullglob
# Alphabetical, except that exp_trained_* run last: they analyse the checkpoints exp_vit_training writes
# into the staging directory, so the verdicts judge the models trained in this same run. Among themselves they run
# alphabetically: exp_trained_attention, then the others (exp_trained_regression reads only the exact checkpoint).
exps=(); late=()
for exe in "$bin"/exp_*; do
  case $(basename "$exe") in exp_trained_*) late+=("$exe") ;; *) exps+=("$exe") ;; esac
done
exps+=("${late[@]}")
[ ${#exps[@]} -gt 0 ] || { echo "no experiments found in $bin" >&2; exit 1; }
i=0; start=$(date +%s)
for exe in "${exps[@]}"; do
  i=$((i+1)); name=$(basename "$exe"); t0=$(date +%s)
  printf '[%d/%d] %-28s ' "$i" "${#exps[@]}" "$name"
  t0_exact=$EPOCHREALTIME
  if ! "$exe" --out "$stage" "$@" 2>"$stage/.stderr"; then
    echo "FAILED"; sed 's/^/    /' "$stage/.stderr" >&2
    echo "experiment $name failed; $out left as it was" >&2
    exit 1
  fi
  echo "done in $(( $(date +%s) - t0 )) s"
  # For the run record (RUNS.md): experiment, wall seconds, host.
  printf '%s\t%s\t%s\n' "$name" "$(awk -v a="$t0_exact" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}')" \
    "$(hostname)" >>"$stage/.times"
done
rm -f "$stage/.stderr"
# The experiments recorded their evidence paths inside the staging directory; after the swap those files live
# under OUT_DIR, which sits beside it, so the ledger names OUT_DIR instead (relative and absolute paths alike).
stage_name=$(basename "$stage")
for ledger in claims.csv corrections.csv; do
  [ -f "$stage/$ledger" ] && sed -i "s#${stage_name//./\\.}/#$(basename "$out")/#g" "$stage/$ledger"
done
# With REPORT=1 the report (REPORT.md, figures/) is written into the staging directory too, before the swap,
# so a failed report also leaves the previous results whole. It gets the run's seed, threads and --quick.
if [ "${REPORT:-0}" = 1 ]; then
  args=("$@"); report_args=()
  for ((k = 0; k < ${#args[@]}; k++)); do
    case ${args[k]} in
      --seed|--threads) report_args+=("${args[k]}" "${args[k+1]:-}") ;;
      --seed=*|--threads=*|--quick) report_args+=("${args[k]}") ;;
    esac
  done
  t0=$(date +%s)
  printf '[report] %-30s ' "make_report.py"
  if ! python3 "$(dirname "$0")/make_report.py" --results "$stage" "${report_args[@]}" >"$stage/.stderr" 2>&1; then
    echo "FAILED"; sed 's/^/    /' "$stage/.stderr" >&2
    echo "report generation failed; $out left as it was" >&2
    exit 1
  fi
  rm -f "$stage/.stderr"
  echo "done in $(( $(date +%s) - t0 )) s"
fi
# The run record RUNS.md (tools/run_record.py): each experiment's wall time, the threads, host, build and
# vector ISA, with the seed, threads and mode the experiments were given.
record_args=(--seed 20250311)
args=("$@")
for ((k = 0; k < ${#args[@]}; k++)); do
  case ${args[k]} in
    --seed|--threads) record_args+=("${args[k]}" "${args[k+1]:-}") ;;
    --seed=*|--threads=*) record_args+=("${args[k]%%=*}" "${args[k]#*=}") ;;
    --quick) record_args+=(--quick) ;;
  esac
done
if ! python3 "$(dirname "$0")/run_record.py" whole "$stage/.times" --bin "$bin" --total-seconds "$(( $(date +%s) - start ))" \
    "${record_args[@]}" --out "$stage/RUNS.md" >"$stage/.stderr" 2>&1; then
  sed 's/^/    /' "$stage/.stderr" >&2
  echo "the run record (tools/run_record.py) failed; $out left as it was" >&2
  exit 1
fi
rm -f "$stage/.stderr" "$stage/.times"
# The benchmark's files (make bench, issue 6) are not experiments: they are carried over unchanged.
if [ -d "$out" ]; then
  for f in "$out"/bench_*; do cp -p "$f" "$stage/"; done
fi
rm -rf "$out.old"; [ -d "$out" ] && mv "$out" "$out.old"
mv "$stage" "$out"; rm -rf "$out.old"; trap - EXIT
chmod 755 "$out"
echo "all ${#exps[@]} experiments done in $(( $(date +%s) - start )) s; results in $out"
