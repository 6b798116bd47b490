#!/usr/bin/env bash
# Every experiment's sweep cut into shards, run as J parallel processes on this machine, then merged,
# judged and reported: the mechanism of the Slurm job arrays (slurm/), with local processes in place of
# array tasks (issue 16). The steps themselves are slurm/steps.sh's, the same the Slurm jobs run.
# `make results` runs it (one process: --jobs 1; `make results JOBS=N`: --jobs N).
#
#   tools/run_sharded.sh --shards N --jobs J [--split EXP=K]... [--flags EXP=FLAGS]... [--quick] [--seed S]
#                        [--bin DIR] [--fresh] --out RUN [--publish DIR]
#
# RUN/shards/<exp>/<I>   task I of each experiment (its tables and <exp>.shard.json)
# RUN/merged             attnlab_merge of all shards, each experiment's --judge there (claims.csv), the
#                        report and the run record RUNS.md
# RUN/logs, RUN/times    each task's output; each task's wall seconds, peak memory (KiB), host, threads
# --split EXP=K          EXP in K tasks instead of N (the training sweep, hours long, in several)
# --flags EXP=FLAGS      EXP's own flags for every task of it, e.g. exp_vit_training='--epochs 50'
# --publish DIR          then RUN/merged replaces DIR as tools/run_experiments.sh would (make results)
# --fresh                remove RUN first (make results FRESH=1)
#
# Resuming. RUN keeps every task that finished (its stamp proves it), so the same command after an
# interruption (Ctrl-C, a failed task, a crash or a reboot) runs only the tasks without a valid stamp,
# and says so in one line: how many tasks it keeps and how many it runs. It refuses (exit 2) a RUN made
# with other settings or other binaries, and any stamp of another seed, mode, shard count or build
# (slurm/steps.sh missing): start afresh with --fresh. With --publish, a RUN whose run was published
# already is started afresh (there is nothing left to resume).
#
# Tasks start in tools/run_experiments.sh's order (experiment by experiment, shard 1 first). In full mode
# the exp_trained_* tasks start once every exp_vit_training task has finished (they read its
# checkpoints). Experiments whose --help offers no --shard run whole in the finish step. A task that
# fails stops the run (no new task starts; running ones finish). Ctrl-C (or SIGTERM) stops the running
# tasks, which leave no stamp, and exits 130.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
steps=$here/../slurm/steps.sh

usage() {
  echo "usage: tools/run_sharded.sh --shards N --jobs J [--split EXP=K]... [--flags EXP=FLAGS]... [--quick] [--seed S] [--bin DIR] [--fresh] --out RUN [--publish DIR]" >&2
  exit 2
}
shards="" jobs="" seed=20250311 quick=() bin=$here/../build/bin out="" publish="" fresh=0 split=()
while [ $# -gt 0 ]; do
  case $1 in
    --shards) shards=${2:-}; shift ;;
    --jobs) jobs=${2:-}; shift ;;
    --split|--flags) split+=("$1" "${2:-}"); shift ;;
    --seed) seed=${2:-}; shift ;;
    --quick) quick=(--quick) ;;
    --bin) bin=${2:-}; shift ;;
    --out) out=${2:-}; shift ;;
    --publish) publish=${2:-}; shift ;;
    --fresh) fresh=1 ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_sharded.sh: unknown option '$1'" >&2; usage ;;
  esac
  shift
done
[ -n "$shards" ] && [ -n "$jobs" ] && [ -n "$out" ] || usage
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run_sharded.sh: --jobs '$jobs' is not a whole number >= 1" >&2; exit 2; }

if [ -d "$out" ] && [ -n "$publish" ] && [ -f "$out/published" ]; then
  echo "run_sharded.sh: $out holds a run published already ($(cat "$out/published")): starting afresh"
  fresh=1
fi
if [ "$fresh" = 1 ] && [ -e "$out" ]; then
  [ -f "$out/run.conf" ] || [ -z "$(ls -A "$out")" ] ||
    { echo "run_sharded.sh: --fresh: $out is not a run directory (no run.conf); not removing it" >&2; exit 2; }
  rm -rf "$out"
fi
"$steps" init "$out" "$bin" "$shards" "${quick[@]}" --seed "$seed" "${split[@]}"
run=$(cd "$out" && pwd)
rm -f "$run/published"
# Each task gets an equal part of the machine's cores as its --threads (at least 1).
cores=$(nproc)
export ATTNLAB_THREADS=$(( cores / jobs > 0 ? cores / jobs : 1 ))

# The tasks still to run (no valid stamp yet), in plan order; full mode: exp_trained_* in a second phase.
todo=$("$steps" missing "$run") || exit $?
phase1=(); phase2=()
while read -r exp i; do
  [ -n "$exp" ] || continue
  if [ ${#quick[@]} = 0 ] && [[ $exp == exp_trained_* ]]; then phase2+=("$exp $i"); else phase1+=("$exp $i"); fi
done <<<"$todo"
total=$(awk -F'\t' '$2 == "sharded" {n += $3} END {print n + 0}' "$run/plan.tsv")
to_run=$(( ${#phase1[@]} + ${#phase2[@]} ))

start=$SECONDS
failed=""
declare -A running=()  # pid (= its process group: setsid) -> "exp i"

# The sessions of this run (one line each: start and end, seconds since the epoch; tasks run; jobs; threads),
# for the run record's wall time. An interrupted session gets its end from the trap; a crashed one has none.
session_start=$(date +%s)
printf '%s\t\t%s\t%s\t%s\n' "$session_start" "$to_run" "$jobs" "$ATTNLAB_THREADS" >>"$run/sessions.tsv"
end_session() {
  local tmp=$run/.sessions.tmp
  awk -F'\t' -v OFS='\t' -v s="$session_start" -v e="$(date +%s)" '$1 == s && $2 == "" {$2 = e} {print}' \
    "$run/sessions.tsv" >"$tmp" && mv "$tmp" "$run/sessions.tsv"
}

# Ctrl-C, SIGTERM, SIGHUP: every running task is stopped (its whole process group: the experiment too, which
# writes no stamp), the session closed; what finished stays for the next run.
interrupted() {
  trap - INT TERM HUP
  local pid
  for pid in "${!running[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${!running[@]}"; do wait "$pid" 2>/dev/null || true; done
  end_session
  echo "" >&2
  echo "run_sharded.sh: interrupted; $run keeps the tasks that finished: the same command resumes from them" >&2
  exit 130
}
trap interrupted INT TERM HUP

# Waits for one running task; records a failure.
reap() {
  local pid rc=0
  wait -n -p pid "${!running[@]}" || rc=$?
  local task=${running[$pid]}
  unset "running[$pid]"
  local exp=${task% *} i=${task#* }
  if [ "$rc" = 0 ]; then
    printf '  %-28s shard %s/%s  %4s s\n' "$exp" "$i" "$(cut -f3 "$run/times/$exp.$i")" "$(cut -f4 "$run/times/$exp.$i")"
  else
    echo "  $exp shard $i FAILED (exit $rc); its output: $run/logs/$exp.$i.log" >&2
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
    # Its own session and process group, so that an interruption can stop the task and its experiment
    # alike (a background job of a script ignores Ctrl-C, and its children would run on).
    setsid "$steps" task "$run" "$exp" "$i" >"$run/logs/$exp.$i.log" 2>&1 </dev/null &
    running[$!]=$task
  done
  while [ ${#running[@]} -gt 0 ]; do reap; done
}

if [ "$to_run" -lt "$total" ]; then
  echo "run_sharded.sh: resuming $run: $((total - to_run)) of $total tasks kept (stamped), $to_run to run, $jobs at a time ($ATTNLAB_THREADS threads each)"
else
  echo "run_sharded.sh: $to_run tasks to run, $jobs at a time ($ATTNLAB_THREADS threads each), into $run"
fi
run_phase "${phase1[@]}"
[ ${#phase2[@]} = 0 ] || [ -n "$failed" ] || run_phase "${phase2[@]}"
if [ -n "$failed" ]; then
  end_session
  echo "run_sharded.sh: failed:$failed; rerun the same command to run only the tasks without a stamp" >&2
  exit 1
fi
echo "run_sharded.sh: tasks done in $((SECONDS - start)) s; merge, judge, report:"
"$steps" finish "$run"
end_session
if [ -n "$publish" ]; then
  "$steps" publish "$run" "$publish"
  printf '%s\n' "$publish" >"$run/published"
  echo "run_sharded.sh: results in $publish"
fi
echo "run_sharded.sh: all done in $((SECONDS - start)) s"
