#!/usr/bin/env bash
# ctest run_sharded: tools/run_sharded.sh (what `make results` runs) against tools/run_experiments.sh on a few
# fast experiments in --quick mode (the Slurm jobs run the same slurm/steps.sh; make test-slurm runs them all).
#
#   slurm/test_run_sharded.sh BIN_DIR
#
# 1. Interrupted twice and resumed: the sharded run (one experiment given more tasks with --split, one task
#    at a time, as `make results` runs) is stopped by SIGINT to its process group, as Ctrl-C does, while its
#    first task (exp_linformer_cost's timing sweep, about 2 s) runs: exit 130, no process of the run left, no
#    stamp, every task listed by `steps.sh missing`. Then started again and killed with SIGKILL, with every
#    task it runs, as a crash or a reboot would, once two tasks have finished. The third start says in one
#    line how many tasks it keeps and how many it runs, and completes; its merged and published results
#    equal the uninterrupted unsharded run's (slurm/compare_runs.py: byte for byte, timings aside), and its
#    RUNS.md counts the three sessions.
# 2. Stamps that cannot be mixed in: one of another seed stops `steps.sh missing` (exit 2, naming it); a shard
#    without its stamp is listed, attnlab_merge refuses its experiment (exit 2, naming it, nothing written).
# 3. A published run is not resumed: the same command starts afresh and runs every task again.
# 4. The same directory with another shard count, and bad arguments, are refused with exit 2.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
src=$(cd "${1:?usage: test_run_sharded.sh BIN_DIR}" && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/attnlab-run-sharded.XXXXXX")
pid=""
cleanup() {
  local rc=$?
  # A run still going when a check failed: its process group (setsid below), then its tasks' (their own).
  if [ -n "$pid" ]; then kill -KILL -- "-$pid" 2>/dev/null || true; fi
  local p
  for p in $(pgrep -f "steps.sh task $scratch/" || true); do kill -KILL -- "-$p" 2>/dev/null || true; done
  rm -rf "$scratch"
  exit "$rc"
}
trap cleanup EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

# Experiments cheap in quick mode (exp_linformer_cost's first shard, its timing sweep, a few seconds, to be
# interrupted while it runs); each of them must shard.
bin=$scratch/bin; mkdir "$bin"
for t in attnlab_merge attnlab_build_info; do ln -s "$src/$t" "$bin/"; done
for e in exp_linformer_cost exp_qk_identities exp_param_growth exp_qk_merge; do
  "$src/$e" --help | grep -q -- --shard || fail "$e does not offer --shard"
  ln -s "$src/$e" "$bin/"
done
split=exp_qk_identities

"$root/tools/run_experiments.sh" "$bin" "$scratch/whole" --quick >"$scratch/whole.log"
run=$scratch/run
cmd=("$root/tools/run_sharded.sh" --shards 2 --jobs 1 --split "$split=4" --quick --bin "$bin" --out "$run"
     --publish "$scratch/published")
total=10  # 4 + 3 x 2
stamps() { find "$run/shards" -name '*.shard.json' 2>/dev/null | wc -l; }
# Waits (at most 60 s) until at least $1 stamps exist while the run started as $pid goes on.
wait_for_stamps() {
  local t0=$SECONDS
  while [ "$(stamps)" -lt "$1" ]; do
    kill -0 "$pid" 2>/dev/null || fail "the run ended before $1 tasks had finished: $(cat "$2")"
    [ $((SECONDS - t0)) -lt 60 ] || fail "no $1 stamps after 60 s"
    sleep 0.02
  done
}
# The processes of the run still alive, if any: its tasks (steps.sh task) and the experiments they run.
run_left() { pgrep -f -- "steps.sh task $run |--out $run/shards/" || true; }

# The run in a process group of its own, with SIGINT at its default: a background job of a script starts with
# SIGINT ignored, and a shell cannot trap a signal ignored on entry (a terminal's Ctrl-C reaches a foreground
# `make results` with SIGINT at its default).
start_run() { setsid env --default-signal=INT "${cmd[@]}" >"$1" 2>&1 & pid=$!; }

# 1a. Ctrl-C: SIGINT to the run's process group, half a second into its first task.
start_run "$scratch/run1.log"
t0=$SECONDS
until [ -s "$run/logs/exp_linformer_cost.1.log" ]; do
  kill -0 "$pid" 2>/dev/null || fail "the run ended before its first task started: $(cat "$scratch/run1.log")"
  [ $((SECONDS - t0)) -lt 60 ] || fail "the first task did not start within 60 s"
  sleep 0.02
done
sleep 0.5
kill -INT -- "-$pid"
rc=0; wait "$pid" || rc=$?; pid=""
[ "$rc" = 130 ] || fail "the interrupted run exited $rc, not 130: $(cat "$scratch/run1.log")"
grep -q "interrupted" "$scratch/run1.log" || fail "the interrupted run did not say so: $(cat "$scratch/run1.log")"
sleep 0.2
[ -z "$(run_left)" ] || fail "processes of the interrupted run are still running: $(run_left)"
k1=$(stamps)
[ ! -e "$run/shards/exp_linformer_cost/1/exp_linformer_cost.shard.json" ] || fail "the interrupted task left a stamp"
[ "$k1" -lt "$total" ] || fail "the run completed before it was interrupted: choose slower experiments"
[ "$("$here/steps.sh" missing "$run" | wc -l)" = $((total - k1)) ] || fail "steps.sh missing does not list the $((total - k1)) unfinished tasks"
[ ! -e "$scratch/published" ] || fail "an interrupted run published its results"

# 1b. A crash or a reboot: the run and every task it runs killed at once, once two more tasks have finished.
start_run "$scratch/run2.log"
wait_for_stamps $((k1 + 2)) "$scratch/run2.log"
kill -KILL -- "-$pid"
for p in $(pgrep -f "steps.sh task $run " || true); do kill -KILL -- "-$p" 2>/dev/null || true; done
rc=0; wait "$pid" || rc=$?; pid=""
sleep 0.2
[ -z "$(run_left)" ] || fail "processes of the killed run are still running: $(run_left)"
k2=$(stamps)
[ "$k2" -lt "$total" ] || fail "the run completed before it was killed: choose slower experiments"

# 1c. Resumed: one line with what it keeps and what it runs, then complete and equal to the unsharded run.
"${cmd[@]}" >"$scratch/run3.log" 2>&1 || { cat "$scratch/run3.log"; fail "the resumed run failed"; }
expect="run_sharded.sh: resuming $run: $k2 of $total tasks kept (stamped), $((total - k2)) to run"
grep -qF "$expect" "$scratch/run3.log" || fail "the resumed run did not say '$expect': $(head -n 3 "$scratch/run3.log")"
[ "$(grep -c '^  exp_' "$scratch/run3.log")" = $((total - k2)) ] || fail "the resumed run did not run exactly $((total - k2)) tasks"
"$here/compare_runs.py" "$scratch/whole" "$run/merged" >"$scratch/cmp1" || { cat "$scratch/cmp1"; fail "the resumed run's merged directory differs from the unsharded run"; }
"$here/compare_runs.py" "$scratch/whole" "$scratch/published" >"$scratch/cmp2" || { cat "$scratch/cmp2"; fail "the published directory differs from the unsharded run"; }
grep -q "the same vector ISA on both sides" "$scratch/cmp1" || fail "compare_runs.py did not find the ISA in both RUNS.md: $(cat "$scratch/cmp1")"
for i in 1 2 3 4; do [ -f "$run/shards/$split/$i/$split.shard.json" ] || fail "no stamp for $split task $i of 4"; done
grep -q "$scratch/published/" "$scratch/published/claims.csv" || fail "the published ledger does not name the published directory"
! grep -q "$run/merged" "$scratch/published/claims.csv" || fail "the published ledger still names $run/merged"
! grep -q "staging" "$scratch/published/REPORT.md" "$run/merged/REPORT.md" ||
  fail "a report quotes a staging directory's paths: $(grep -o '.\{40\}staging.\{20\}' "$scratch/published/REPORT.md" "$run/merged/REPORT.md" | head -n 1)"
grep -q "over 3 sessions (an interrupted run, resumed)" "$scratch/published/RUNS.md" ||
  fail "RUNS.md does not count the three sessions: $(grep 'wall time' "$scratch/published/RUNS.md")"

# 2. A stamp of another seed is refused by name; a shard without its stamp is listed and refused by the merge.
stamp=$run/shards/exp_param_growth/2/exp_param_growth.shard.json
cp "$stamp" "$scratch/stamp.json"
sed -i 's/"seed": "[0-9]*"/"seed": "12345"/' "$stamp"
set +e
msg=$("$here/steps.sh" missing "$run" 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && echo "$msg" | grep -q "exp_param_growth.shard.json: a stamp of seed 12345" ||
  fail "a stamp of another seed: exit $rc: $msg"
cp "$scratch/stamp.json" "$stamp"
rm "$run/shards/$split/2/$split.shard.json"
[ "$("$here/steps.sh" missing "$run")" = "$split 2" ] || fail "steps.sh missing does not list exactly '$split 2'"
set +e
msg=$("$bin/attnlab_merge" --out "$scratch/refused" "$run/shards/$split"/*/ 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] || fail "attnlab_merge exited $rc on a missing shard, not 2"
echo "$msg" | grep -q "$split" || fail "attnlab_merge's message does not name $split: $msg"
[ ! -e "$scratch/refused" ] || fail "attnlab_merge refused but wrote $scratch/refused"

# 3. The run was published: the same command starts afresh.
"${cmd[@]}" >"$scratch/run4.log" 2>&1 || { cat "$scratch/run4.log"; fail "the run after a published one failed"; }
grep -q "published already.*starting afresh" "$scratch/run4.log" && grep -q "^run_sharded.sh: $total tasks to run" "$scratch/run4.log" ||
  fail "a published run was not started afresh: $(head -n 2 "$scratch/run4.log")"

# 4. Refusals.
set +e
out=$("$root/tools/run_sharded.sh" --shards 3 --jobs 2 --quick --bin "$bin" --out "$run" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q 'other settings' || fail "another shard count in the same directory: exit $rc: $out"
out=$("$root/tools/run_sharded.sh" --shards 0 --jobs 2 --quick --bin "$bin" --out "$scratch/r0" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "shard count '0'" || fail "--shards 0: exit $rc: $out"
out=$("$root/tools/run_sharded.sh" --shards 2 --jobs x --quick --bin "$bin" --out "$scratch/r1" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "jobs 'x'" || fail "--jobs x: exit $rc: $out"
out=$("$root/tools/run_sharded.sh" --shards 2 --jobs 1 --split exp_nope=2 --quick --bin "$bin" --out "$scratch/r2" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "no experiment exp_nope" || fail "--split of an unknown experiment: exit $rc: $out"
out=$("$root/tools/run_sharded.sh" --shards 2 --jobs 1 --flags "exp_qk_merge=--seed 3" --quick --bin "$bin" --out "$scratch/r3" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "is set by the run itself" || fail "--flags with --seed: exit $rc: $out"
mkdir "$scratch/notarun"; touch "$scratch/notarun/keep"
out=$("$root/tools/run_sharded.sh" --shards 2 --jobs 1 --fresh --quick --bin "$bin" --out "$scratch/notarun" 2>&1); rc=$?
[ "$rc" = 2 ] && [ -e "$scratch/notarun/keep" ] || fail "--fresh on a directory that is not a run: exit $rc: $out"
set -e
echo "run_sharded: passed (interrupted with $k1, then $k2 of $total tasks stamped; resumed and equal to the unsharded run)"
