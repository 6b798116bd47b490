#!/usr/bin/env bash
# The steps of a sharded run (issue 16), shared by tools/run_sharded.sh (local processes) and the Slurm
# jobs (slurm/task.sbatch, slurm/finish.sbatch), so that both do exactly the same thing:
#
#   slurm/steps.sh init RUN BIN N [--quick] [--seed S]
#       writes RUN/run.conf (binaries, N, flags) and RUN/plan.tsv: every experiment in the order
#       tools/run_experiments.sh runs them, each `sharded` (its --help offers --shard) or `whole`
#       (not converted yet: it runs unsharded in the finish step). RUN must be new or hold a run
#       with the same settings and the same binaries (their md5 sums).
#   slurm/steps.sh task RUN EXP I
#       shard I of EXP into RUN/shards/EXP/I (the experiment removes an old stamp first and writes its
#       new one last, so a killed task leaves no stamp); writes RUN/times/EXP.I: experiment, shard, shards,
#       wall seconds, peak resident memory (KiB, when /usr/bin/time exists), host, threads.
#   slurm/steps.sh finish RUN
#       attnlab_merge of every shard (full mode: exp_vit_training's checkpoints with it), then in plan
#       order `EXP --judge` (sharded) or a whole run (the others), then tools/make_report.py; all in a
#       staging directory renamed to RUN/merged at the end (a failed finish leaves no RUN/merged).
#   slurm/steps.sh missing RUN
#       the tasks (EXP I) whose shard has no stamp: what is left to run.
#   slurm/steps.sh publish RUN DIR
#       RUN/merged's tables, ledger, report and checkpoints replace DIR (make results JOBS=N), bench_*
#       files in DIR kept; evidence paths rewritten from RUN/merged to DIR; stamps stay in RUN/merged.
#
# Threads for a task: $SLURM_CPUS_PER_TASK, else $ATTNLAB_THREADS, else the experiment's default.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

die() { echo "steps.sh: $*" >&2; exit 2; }

# A path as the experiments write it into the ledger: relative to the repository root when inside it,
# absolute otherwise (ExperimentCli::evidence_path).
ledger_path() { realpath -m --relative-base="$root" "$1"; }

# Rewrites every mention of directory $2 in file $1 (as the ledger names it) into directory $3.
rewrite_dir() {
  local file=$1 from to
  from=$(ledger_path "$2"); to=$(ledger_path "$3")
  [ -f "$file" ] || return 0
  FROM="$from/" TO="$to/" python3 - "$file" <<'EOF'
import os, sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
text = text.replace(os.environ["FROM"], os.environ["TO"])
tmp = path + ".tmp"
open(tmp, "w", encoding="utf-8").write(text)
os.replace(tmp, path)
EOF
}

load() {
  run=$(cd "$1" 2>/dev/null && pwd) || die "$1: no such run directory"
  [ -f "$run/run.conf" ] && [ -f "$run/plan.tsv" ] || die "$run: no run.conf/plan.tsv (not made by 'steps.sh init')"
  # shellcheck source=/dev/null
  . "$run/run.conf"
  flags=(--seed "$seed")
  [ "$quick" = 1 ] && flags+=(--quick)
  threads=${SLURM_CPUS_PER_TASK:-${ATTNLAB_THREADS:-}}
  thread_flags=()
  [ -n "$threads" ] && thread_flags=(--threads "$threads")
  return 0
}

cmd_init() {
  [ $# -ge 3 ] || die "usage: steps.sh init RUN BIN N [--quick] [--seed S]"
  local run_arg=$1 bin_arg=$2 n=$3; shift 3
  local q=0 s=20250311
  while [ $# -gt 0 ]; do
    case $1 in
      --quick) q=1 ;;
      --seed) [ $# -ge 2 ] || die "--seed needs a value"; s=$2; shift ;;
      *) die "unknown option $1" ;;
    esac
    shift
  done
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "shard count '$n' is not a whole number >= 1"
  [[ $s =~ ^[0-9]+$ ]] || die "seed '$s' is not a whole number"
  local bin_dir; bin_dir=$(cd "$bin_arg" 2>/dev/null && pwd) || die "$bin_arg: no such directory"
  [ -x "$bin_dir/attnlab_merge" ] || die "$bin_dir/attnlab_merge not found (build it: cmake --build build --target attnlab_merge)"
  mkdir -p "$run_arg"
  local r; r=$(cd "$run_arg" && pwd)
  local conf
  # The binaries' digest: a rebuilt experiment makes old shards stale, so a run directory is for one build.
  local digest
  digest=$(cd "$bin_dir" && md5sum attnlab_merge exp_* | md5sum | cut -d' ' -f1)
  conf=$(printf 'bin=%q\nbinaries_md5=%q\nshards=%q\nseed=%q\nquick=%q\n' "$bin_dir" "$digest" "$n" "$s" "$q")
  # The plan: run_experiments.sh's order (alphabetical, exp_trained_* last).
  local plan="" late="" exe name mode vit_mode=""
  shopt -s nullglob
  for exe in "$bin_dir"/exp_*; do
    name=$(basename "$exe")
    mode=whole
    "$exe" --help 2>/dev/null | grep -q -- '--shard' && mode=sharded
    case $name in
      exp_trained_*) late+="$name	$mode"$'\n' ;;
      *) plan+="$name	$mode"$'\n'; [ "$name" = exp_vit_training ] && vit_mode=$mode ;;
    esac
  done
  # In full mode exp_trained_* read the checkpoints exp_vit_training wrote: if training runs whole (in the
  # finish step), they must run after it there, so whole as well.
  if [ "$q" = 0 ] && [ "$vit_mode" != sharded ]; then late=${late//	sharded/	whole}; fi
  plan+="$late"
  [ -n "$plan" ] || die "no experiments (exp_*) in $bin_dir"
  if [ -f "$r/run.conf" ]; then
    [ "$(cat "$r/run.conf")" = "$conf" ] && [ "$(cat "$r/plan.tsv")" = "${plan%$'\n'}" ] ||
      die "$r holds a run with other settings or of other binaries (a rebuild; see $r/run.conf): use a new directory"
  else
    printf '%s\n' "$conf" >"$r/run.conf"
    printf '%s' "$plan" >"$r/plan.tsv"
  fi
  mkdir -p "$r/shards" "$r/logs" "$r/times"
}

cmd_task() {
  [ $# = 3 ] || die "usage: steps.sh task RUN EXP I"
  load "$1"; local exp=$2 i=$3
  local mode; mode=$(awk -F'\t' -v e="$exp" '$1 == e {print $2}' "$run/plan.tsv")
  [ "$mode" = sharded ] || die "$exp is not a sharded experiment of $run (plan.tsv)"
  [[ $i =~ ^[1-9][0-9]*$ ]] && [ "$i" -le "$shards" ] || die "shard '$i' is not in 1..$shards"
  local out=$run/shards/$exp/$i
  mkdir -p "$out"
  if [ "$quick" = 0 ] && [[ $exp == exp_trained_* ]]; then
    # exp_vit_training's checkpoints (checkpoints/<method>/seed-<k>/), from whichever of its shards trained each model.
    local found=0 d m
    for d in "$run"/shards/exp_vit_training/*/checkpoints/*/*/; do
      m=$(basename "$(dirname "$d")")
      mkdir -p "$out/checkpoints/$m"
      ln -sfn "${d%/}" "$out/checkpoints/$m/$(basename "$d")"; found=1
    done
    [ "$found" = 1 ] || die "$exp: no checkpoints in $run/shards/exp_vit_training/*/checkpoints (exp_vit_training's tasks must finish first)"
  fi
  local start=$EPOCHREALTIME rc=0 stats=""
  echo "steps.sh: $exp shard $i/$shards on $(hostname), threads ${threads:-default}"
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M' -o "$out.rss" "$bin/$exp" --shard "$i/$shards" --out "$out" "${flags[@]}" "${thread_flags[@]}" || rc=$?
    stats=$(tail -n 1 "$out.rss" 2>/dev/null || true); rm -f "$out.rss"
  else
    "$bin/$exp" --shard "$i/$shards" --out "$out" "${flags[@]}" "${thread_flags[@]}" || rc=$?
  fi
  [ "$rc" = 0 ] || { echo "steps.sh: $exp shard $i/$shards failed (exit $rc)" >&2; exit "$rc"; }
  [ -f "$out/$exp.shard.json" ] || die "$exp shard $i/$shards exited 0 but wrote no stamp $out/$exp.shard.json"
  local seconds; seconds=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$exp" "$i" "$shards" "$seconds" "${stats:-}" \
    "$(hostname)" "${threads:-default}" >"$run/times/$exp.$i"
}

cmd_missing() {
  [ $# = 1 ] || die "usage: steps.sh missing RUN"
  load "$1"
  local exp mode i
  while IFS=$'\t' read -r exp mode; do
    [ "$mode" = sharded ] || continue
    for ((i = 1; i <= shards; i++)); do
      [ -f "$run/shards/$exp/$i/$exp.shard.json" ] || echo "$exp $i"
    done
  done <"$run/plan.tsv"
}

cmd_finish() {
  [ $# = 1 ] || die "usage: steps.sh finish RUN"
  load "$1"
  local stage; stage=$(mktemp -d "$run/.merged.staging.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  rmdir "$stage"  # attnlab_merge creates it
  local dirs=() exp mode start=$SECONDS
  shopt -s nullglob
  while IFS=$'\t' read -r exp mode; do
    [ "$mode" = sharded ] && dirs+=("$run/shards/$exp"/*/)
  done <"$run/plan.tsv"
  if [ ${#dirs[@]} -gt 0 ]; then
    "$bin/attnlab_merge" --out "$stage" "${dirs[@]%/}" || exit $?
  fi
  mkdir -p "$stage"
  while IFS=$'\t' read -r exp mode; do
    [ "$mode" = sharded ] || continue
    [ -f "$stage/$exp.merged.json" ] || die "$exp: no shard of it in $run/shards/$exp has a stamp (its tasks did not complete)"
  done <"$run/plan.tsv"
  if [ "$quick" = 0 ]; then
    # exp_vit_training's checkpoints, for the judges and whole runs of exp_trained_* here: attnlab_merge
    # carries those a shard's stamp lists; any other is copied from the shard that wrote it.
    local d m
    for d in "$run"/shards/exp_vit_training/*/checkpoints/*/*/; do
      m=$(basename "$(dirname "$d")")
      mkdir -p "$stage/checkpoints/$m"
      [ -e "$stage/checkpoints/$m/$(basename "$d")" ] || cp -r "${d%/}" "$stage/checkpoints/$m/"
    done
  fi
  while IFS=$'\t' read -r exp mode; do
    local t0=$SECONDS
    if [ "$mode" = sharded ]; then
      "$bin/$exp" --judge "$stage" >"$run/logs/$exp.judge.log" 2>&1 ||
        { sed 's/^/    /' "$run/logs/$exp.judge.log" >&2; die "$exp --judge $stage failed"; }
    else
      "$bin/$exp" --out "$stage" "${flags[@]}" "${thread_flags[@]}" >"$run/logs/$exp.whole.log" 2>&1 ||
        { sed 's/^/    /' "$run/logs/$exp.whole.log" >&2; die "$exp (whole run) failed"; }
    fi
    printf '%-28s %-8s %3d s\n' "$exp" "$([ "$mode" = sharded ] && echo judged || echo whole)" "$((SECONDS - t0))"
  done <"$run/plan.tsv"
  local report_flags=(--seed "$seed")
  [ "$quick" = 1 ] && report_flags+=(--quick)
  python3 "$root/tools/make_report.py" --results "$stage" "${report_flags[@]}" >"$run/logs/report.log" 2>&1 ||
    { sed 's/^/    /' "$run/logs/report.log" >&2; die "tools/make_report.py failed"; }
  rewrite_dir "$stage/claims.csv" "$stage" "$run/merged"
  rm -rf "$run/merged"; mv "$stage" "$run/merged"; trap - EXIT
  chmod 755 "$run/merged"
  echo "steps.sh: merged, judged and reported into $run/merged in $((SECONDS - start)) s"
}

cmd_publish() {
  [ $# = 2 ] || die "usage: steps.sh publish RUN DIR"
  load "$1"; local out=$2
  [ -d "$run/merged" ] || die "$run/merged does not exist (run the finish step first)"
  local parent; parent=$(dirname "$out"); mkdir -p "$parent"
  local stage; stage=$(mktemp -d "$parent/.$(basename "$out").staging.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  cp -rp "$run/merged/." "$stage/"
  rm -f "$stage"/*.merged.json
  rewrite_dir "$stage/claims.csv" "$run/merged" "$out"
  shopt -s nullglob
  if [ -d "$out" ]; then
    local f; for f in "$out"/bench_*; do cp -p "$f" "$stage/"; done
  fi
  rm -rf "$out.old"; [ -d "$out" ] && mv "$out" "$out.old"
  mv "$stage" "$out"; rm -rf "$out.old"; trap - EXIT
  chmod 755 "$out"
}

[ $# -ge 1 ] || die "usage: steps.sh init|task|finish|missing|publish ..."
cmd=$1; shift
case $cmd in
  init) cmd_init "$@" ;;
  task) cmd_task "$@" ;;
  finish) cmd_finish "$@" ;;
  missing) cmd_missing "$@" ;;
  publish) cmd_publish "$@" ;;
  *) die "unknown step '$cmd' (init, task, finish, missing, publish)" ;;
esac
