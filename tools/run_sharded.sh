#!/usr/bin/env bash
# Every experiment's sweep cut into N shards, run as J parallel processes on this machine, then merged,
# judged and reported: the mechanism of the Slurm job arrays (slurm/), with local processes in place of
# array tasks (issue 16). The steps themselves are slurm/steps.sh's, the same the Slurm jobs run.
#
#   tools/run_sharded.sh --shards N --jobs J [--quick] [--seed S] [--bin DIR] --out RUN [--publish DIR]
#
# RUN/shards/<exp>/<I>   shard I of each experiment (its tables and <exp>.shard.json)
# RUN/merged             attnlab_merge of all shards, each experiment's --judge there (claims.csv), the report
# RUN/logs, RUN/times    each task's output; each task's wall seconds and peak memory (KiB)
# --publish DIR          then RUN/merged replaces DIR as tools/run_experiments.sh would (make results JOBS=N)
#
# Tasks start in tools/run_experiments.sh's order (experiment by experiment, shard 1 first). In full mode
# the exp_trained_* tasks start once every exp_vit_training task has finished (they read its
# checkpoints). Experiments whose --help offers no --shard run whole in the finish step. A task that
# fails stops the run (no new task starts; running ones finish); RUN keeps what completed, and running
# the same command again reruns only the tasks without a stamp.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
steps=$here/../slurm/steps.sh

usage() { echo "usage: tools/run_sharded.sh --shards N --jobs J [--quick] [--seed S] [--bin DIR] --out RUN [--publish DIR]" >&2; exit 2; }
shards="" jobs="" seed=20250311 quick=() bin=$here/../build/bin out="" publish=""
while [ $# -gt 0 ]; do
  case $1 in
    --shards) shards=${2:-}; shift ;;
    --jobs) jobs=${2:-}; shift ;;
    --seed) seed=${2:-}; shift ;;
    --quick) quick=(--quick) ;;
    --bin) bin=${2:-}; shift ;;
    --out) out=${2:-}; shift ;;
    --publish) publish=${2:-}; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_sharded.sh: unknown option '$1'" >&2; usage ;;
  esac
  shift
done
[ -n "$shards" ] && [ -n "$jobs" ] && [ -n "$out" ] || usage
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run_sharded.sh: --jobs '$jobs' is not a whole number >= 1" >&2; exit 2; }

"$steps" init "$out" "$bin" "$shards" "${quick[@]}" --seed "$seed"
run=$(cd "$out" && pwd)
# Each task gets an equal part of the machine's cores as its --threads (at least 1).
cores=$(nproc)
export ATTNLAB_THREADS=$(( cores / jobs > 0 ? cores / jobs : 1 ))

# The tasks still to run (no stamp yet), in plan order; full mode: exp_trained_* in a second phase.
phase1=(); phase2=()
while read -r exp i; do
  if [ ${#quick[@]} = 0 ] && [[ $exp == exp_trained_* ]]; then phase2+=("$exp $i"); else phase1+=("$exp $i"); fi
done < <("$steps" missing "$run")

start=$SECONDS
failed=""
declare -A running=()  # pid -> "exp i"

# Waits for one running task; records a failure.
reap() {
  local pid rc=0
  wait -n -p pid "${!running[@]}" || rc=$?
  local task=${running[$pid]}
  unset "running[$pid]"
  local exp=${task% *} i=${task#* }
  if [ "$rc" = 0 ]; then
    printf '  %-28s shard %s/%s  %4s s\n' "$exp" "$i" "$shards" "$(cut -f4 "$run/times/$exp.$i")"
  else
    echo "  $exp shard $i/$shards FAILED (exit $rc); its output: $run/logs/$exp.$i.log" >&2
    sed 's/^/    /' "$run/logs/$exp.$i.log" | tail -n 20 >&2
    failed="$failed $exp/$i"
  fi
}

run_phase() {
  local task
  for task in "$@"; do
    [ -z "$failed" ] || break
    while [ ${#running[@]} -ge "$jobs" ]; do reap; done
    [ -z "$failed" ] || break
    local exp=${task% *} i=${task#* }
    "$steps" task "$run" "$exp" "$i" >"$run/logs/$exp.$i.log" 2>&1 &
    running[$!]=$task
  done
  while [ ${#running[@]} -gt 0 ]; do reap; done
}

echo "run_sharded.sh: $(( ${#phase1[@]} + ${#phase2[@]} )) tasks to run, $jobs at a time ($ATTNLAB_THREADS threads each), into $run"
run_phase "${phase1[@]}"
[ ${#phase2[@]} = 0 ] || [ -n "$failed" ] || run_phase "${phase2[@]}"
if [ -n "$failed" ]; then
  echo "run_sharded.sh: failed:$failed; rerun the same command to run only the tasks without a stamp" >&2
  exit 1
fi
echo "run_sharded.sh: tasks done in $((SECONDS - start)) s; merge, judge, report:"
"$steps" finish "$run"
if [ -n "$publish" ]; then
  "$steps" publish "$run" "$publish"
  echo "run_sharded.sh: results in $publish"
fi
echo "run_sharded.sh: all done in $((SECONDS - start)) s"
