#!/usr/bin/env bash
# ctest run_sharded (issue 16): tools/run_sharded.sh against tools/run_experiments.sh on a few fast
# experiments in --quick mode (the Slurm jobs run the same slurm/steps.sh; make test-slurm runs them all).
#
#   slurm/test_run_sharded.sh BIN_DIR
#
# 1. The unsharded quick run and a 3-shard, 2-process run of the same experiments (published into a
#    third directory as make results JOBS=N does) agree: slurm/compare_runs.py on both.
# 2. A shard whose stamp is gone (a task killed midway leaves none) is listed by `steps.sh missing`,
#    attnlab_merge refuses its experiment (exit 2, naming it) and writes nothing, and rerunning the same
#    command runs that one task only and completes the run.
# 3. The same directory with another shard count, and bad arguments, are refused with exit 2.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
src=$(cd "${1:?usage: test_run_sharded.sh BIN_DIR}" && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/attnlab-run-sharded.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

# Experiments cheap in quick mode; at least one of them must shard.
bin=$scratch/bin; mkdir "$bin"
ln -s "$src/attnlab_merge" "$bin/"
for e in exp_qk_identities exp_param_growth exp_qk_merge; do ln -s "$src/$e" "$bin/"; done
sharded=""
for e in "$bin"/exp_*; do "$e" --help | grep -q -- --shard && sharded=$(basename "$e") && break; done
[ -n "$sharded" ] || fail "none of $(cd "$bin" && echo exp_*) offers --shard"

"$root/tools/run_experiments.sh" "$bin" "$scratch/whole" --quick >"$scratch/whole.log"
run=$scratch/run
cmd=("$root/tools/run_sharded.sh" --shards 3 --jobs 2 --quick --bin "$bin" --out "$run" --publish "$scratch/published")
"${cmd[@]}" >"$scratch/sharded.log" || { cat "$scratch/sharded.log"; fail "run_sharded.sh failed"; }
"$here/compare_runs.py" "$scratch/whole" "$run/merged" || fail "RUN/merged differs from the unsharded run"
"$here/compare_runs.py" "$scratch/whole" "$scratch/published" || fail "the published directory differs from the unsharded run"
for i in 1 2 3; do [ -f "$run/shards/$sharded/$i/$sharded.shard.json" ] || fail "no stamp for $sharded shard $i"; done
grep -q "$scratch/published/" "$scratch/published/claims.csv" || fail "the published ledger does not name the published directory"
! grep -q "$run/merged" "$scratch/published/claims.csv" || fail "the published ledger still names $run/merged"

# 2. A shard without its stamp.
rm "$run/shards/$sharded/2/$sharded.shard.json"
[ "$("$here/steps.sh" missing "$run")" = "$sharded 2" ] || fail "steps.sh missing does not list exactly '$sharded 2'"
set +e
msg=$("$bin/attnlab_merge" --out "$scratch/refused" "$run/shards/$sharded"/*/ 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] || fail "attnlab_merge exited $rc on a missing shard, not 2"
echo "$msg" | grep -q "$sharded" || fail "attnlab_merge's message does not name $sharded: $msg"
[ ! -e "$scratch/refused" ] || fail "attnlab_merge refused but wrote $scratch/refused"
"${cmd[@]}" >"$scratch/rerun.log" || { cat "$scratch/rerun.log"; fail "the rerun failed"; }
grep -q '^run_sharded.sh: 1 tasks to run' "$scratch/rerun.log" || fail "the rerun did not run exactly one task: $(head -n 1 "$scratch/rerun.log")"
"$here/compare_runs.py" "$scratch/whole" "$run/merged" >"$scratch/rerun.cmp" || { cat "$scratch/rerun.cmp"; fail "the rerun's merged directory differs"; }

# 3. Refusals.
set +e
out=$("$root/tools/run_sharded.sh" --shards 2 --jobs 2 --quick --bin "$bin" --out "$run" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q 'other settings' || fail "another shard count in the same directory: exit $rc: $out"
out=$("$root/tools/run_sharded.sh" --shards 0 --jobs 2 --quick --bin "$bin" --out "$scratch/r0" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "shard count '0'" || fail "--shards 0: exit $rc: $out"
out=$("$root/tools/run_sharded.sh" --shards 2 --jobs x --quick --bin "$bin" --out "$scratch/r1" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "jobs 'x'" || fail "--jobs x: exit $rc: $out"
set -e
echo "run_sharded: passed ($sharded sharded in 3, $(grep -c sharded "$run/plan.tsv") of $(wc -l <"$run/plan.tsv") experiments sharded)"
