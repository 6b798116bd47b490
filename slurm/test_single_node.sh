#!/usr/bin/env bash
# make test-slurm (issue 16): the quick sweep through a real Slurm on this machine, against an unsharded
# quick run of the same binaries.
#
#   slurm/test_single_node.sh [BIN_DIR]        (default build/bin; as root)
#
# 1. Installs slurm-wlm and munge if missing (slurm/local_cluster.sh install).
# 2. Starts a single-node cluster in a scratch directory (munged, slurmctld, slurmd; slurm/local_cluster.sh).
# 3. Submits the quick sweep with slurm/submit.sh --shards $SHARDS (default 4): one array of SHARDS tasks
#    per experiment that can shard, and the finish job after them. Meanwhile runs the unsharded quick
#    run (tools/run_experiments.sh) into the scratch directory.
# 4. Cancels one array task while it runs (scancel; $KILL_EXP shard $KILL_SHARD, default
#    exp_vit_training 1), checks it left no stamp, that attnlab_merge refuses its shards (exit 2, one
#    line naming the missing shard, nothing written) and that the finish job was cancelled with it; then
#    `slurm/submit.sh --resume` reruns that task alone and a new finish job, which must complete.
# 5. slurm/compare_runs.py: the merged tables and claims.csv equal the unsharded run's (timing tables
#    and the timing claims' measured fields aside).
# Always (trap): the daemons it started are stopped by pid, their state and the scratch directory removed
# (KEEP=1 keeps the run directories and prints where).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
bin=$(cd "${1:-$root/build/bin}" && pwd)
shards=${SHARDS:-4}
kill_exp=${KILL_EXP:-exp_vit_training}
kill_shard=${KILL_SHARD:-1}
t_start=$SECONDS

say() { printf '[test-slurm %3d s] %s\n' "$((SECONDS - t_start))" "$*"; }
fail() { say "FAILED: $*"; exit 1; }

[ "$(id -u)" = 0 ] || { echo "test_single_node.sh: needs root (it installs packages and runs slurmd)" >&2; exit 2; }
"$here/local_cluster.sh" install
scratch=$(mktemp -d /tmp/attnlab-test-slurm.XXXXXX)
cluster=$scratch/cluster
local_pid=""
cleanup() {
  local rc=$?
  set +e
  # The unsharded run is its own process group (setsid below): stop it and the experiment it runs.
  [ -n "$local_pid" ] && kill -TERM -- "-$local_pid" 2>/dev/null && wait "$local_pid" 2>/dev/null
  "$here/local_cluster.sh" stop "$cluster"
  if [ "${KEEP:-0}" = 1 ]; then say "kept $scratch"; else rm -rf "$scratch"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting a single-node cluster in $cluster"
eval "$("$here/local_cluster.sh" start "$cluster")"
sinfo

run=$scratch/run
say "submitting the quick sweep, $shards shards per experiment"
"$here/submit.sh" --shards "$shards" --quick --partition attnlab --bin "$bin" --out "$run"
finish_id=$(cat "$run/finish.jobid")
kill_job=$(awk -F'\t' -v e="$kill_exp" '$1 == e {print $2}' "$run/jobs.tsv")
[ -n "$kill_job" ] || fail "$kill_exp has no job array in this run (not sharded yet?); set KILL_EXP to one that has"
ntasks=$(awk -F'\t' '$2 == "sharded" {n += $3} END {print n + 0}' "$run/plan.tsv")
say "$ntasks array tasks in $(($(wc -l <"$run/jobs.tsv") - 1)) arrays, finish job $finish_id"
[ "$ntasks" -ge 4 ] || fail "only $ntasks array tasks (want at least 4)"

say "the unsharded quick run, meanwhile, into $scratch/whole"
setsid "$root/tools/run_experiments.sh" "$bin" "$scratch/whole" --quick >"$scratch/whole.log" 2>&1 &
local_pid=$!

state_of() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }

# 4. Cancel the chosen task while it runs.
victim=${kill_job}_${kill_shard}
say "waiting for task $victim ($kill_exp shard $kill_shard) to run"
while :; do
  st=$(state_of "$victim")
  [ "$st" = RUNNING ] && break
  case $st in PENDING|CONFIGURING|"") sleep 0.2 ;; *) fail "task $victim is $st before it could be cancelled" ;; esac
done
sleep 2
[ "$(state_of "$victim")" = RUNNING ] || fail "task $victim finished within 2 s: choose a longer KILL_EXP"
say "scancel $victim (running for 2 s)"
scancel "$victim"
while st=$(state_of "$victim"); [ "$st" = RUNNING ] || [ "$st" = COMPLETING ]; do sleep 0.2; done
[ "$st" = CANCELLED ] || fail "task $victim ended $st, not CANCELLED"
stamp=$run/shards/$kill_exp/$kill_shard/$kill_exp.shard.json
[ ! -e "$stamp" ] || fail "the cancelled task left a stamp $stamp"
say "task $victim CANCELLED; no stamp $stamp; what it left: $(cd "$run/shards/$kill_exp/$kill_shard" && ls -A | tr '\n' ' ')"

say "waiting for every other task"
while [ -n "$(squeue -h -o '%i %j' | awk '$2 != "attnlab.finish"')" ]; do sleep 0.5; done
st=$(state_of "$finish_id")
case $st in CANCELLED) say "finish job $finish_id CANCELLED (its afterok dependency can never be met)" ;;
  *) fail "finish job $finish_id is $st, expected CANCELLED" ;; esac

refused=$scratch/refused
set +e
msg=$("$bin/attnlab_merge" --out "$refused" "$run/shards/$kill_exp"/*/ 2>&1 >/dev/null); rc=$?
set -e
say "attnlab_merge on $kill_exp's shards: exit $rc: $msg"
[ "$rc" = 2 ] || fail "attnlab_merge exited $rc, expected 2"
[ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || fail "attnlab_merge's message is not one line"
printf '%s' "$msg" | grep -q "$kill_exp" || fail "attnlab_merge's message does not name $kill_exp"
printf '%s' "$msg" | grep -Eq "shard $kill_shard\b|$kill_shard/$shards|/$kill_shard\b" || fail "attnlab_merge's message does not name shard $kill_shard"
[ ! -e "$refused" ] || fail "attnlab_merge refused but wrote $refused"
missing=$("$here/steps.sh" missing "$run")
[ "$missing" = "$kill_exp $kill_shard" ] || fail "tasks without a stamp: '$missing', expected only '$kill_exp $kill_shard'"

say "resubmitting what has no stamp (submit.sh --resume)"
"$here/submit.sh" --resume "$run"
finish_id=$(cat "$run/finish.jobid")
while st=$(state_of "$finish_id"); case $st in PENDING|RUNNING|CONFIGURING|COMPLETING|"") true ;; *) false ;; esac; do sleep 0.5; done
[ "$st" = COMPLETED ] || { sed 's/^/    /' "$run/logs/finish.log" >&2; fail "finish job $finish_id ended $st"; }
[ -e "$stamp" ] || fail "the rerun task left no stamp $stamp"
say "finish job $finish_id COMPLETED; the rerun task's stamp is there"
sed 's/^/    /' "$run/logs/finish.log"

say "waiting for the unsharded run"
wait "$local_pid" || { local_pid=""; sed 's/^/    /' "$scratch/whole.log" >&2; fail "the unsharded quick run failed"; }
local_pid=""
"$here/compare_runs.py" "$scratch/whole" "$run/merged" || fail "the merged run differs from the unsharded run"

say "task times (s; peak memory MiB):"
sort -k1,1 -k2,2n "$run"/times/* | awk -F'\t' '{printf "    %-26s %s/%s %7s s %6.0f MiB\n", $1, $2, $3, $4, $5 / 1024}'
say "PASSED"
