#!/usr/bin/env bash
# The steps of a sharded run (issue 16), shared by tools/run_sharded.sh (local processes) and the Slurm
# jobs (slurm/task.sbatch, slurm/finish.sbatch), so that both do exactly the same thing:
#
#   slurm/steps.sh init RUN BIN N [--quick] [--seed S] [--split EXP=K]... [--flags EXP=FLAGS]...
#       writes RUN/run.conf (binaries, N, flags, the build and its vector ISA) and RUN/plan.tsv: every
#       experiment in the order tools/run_experiments.sh runs them, each `sharded` (its --help offers
#       --shard) or `whole` (not converted yet: it runs unsharded in the finish step), its number of
#       tasks: N, or K for an experiment given with --split (the training sweep, hours long, in more
#       tasks than the others, so that a resumed run loses little), and the experiment's own flags given
#       with --flags (e.g. exp_vit_training='--epochs 50': words split at spaces, passed to every task of
#       it; the stamps record them). RUN must be new or hold a run with the same settings and the same
#       binaries (their md5 sums).
#   slurm/steps.sh task RUN EXP I
#       shard I of EXP into RUN/shards/EXP/I (the experiment removes an old stamp first and writes its
#       new one last, so a killed task leaves no stamp); writes RUN/times/EXP.I: experiment, shard, shards,
#       wall seconds, peak resident memory (KiB, when /usr/bin/time exists), host, threads, end time
#       (seconds since the epoch).
#   slurm/steps.sh finish RUN
#       attnlab_merge of every shard (full mode: the training experiments' checkpoints with it), then in plan
#       order `EXP --judge` (sharded) or a whole run (the others), then tools/make_report.py and the run
#       record RUNS.md (tools/run_record.py); all in a staging directory renamed to RUN/merged at the end
#       (a failed finish leaves no RUN/merged).
#   slurm/steps.sh missing RUN
#       the tasks (EXP I) whose shard has no valid stamp: what is left to run. Every stamp is checked
#       first: one of another seed, mode, shard count or build (another vector ISA included) than the
#       run's is refused (exit 2, naming it: such a stamp cannot be mixed in); a stamp whose tables or
#       artifacts changed since it was written (size or CRC-32) only makes its task count as missing.
#   slurm/steps.sh publish RUN DIR
#       RUN/merged's tables, ledger, report, run record and checkpoints replace DIR (make results), bench_*
#       files in DIR kept; evidence paths rewritten from RUN/merged to DIR; stamps stay in RUN/merged.
#
# Threads for a task: $SLURM_CPUS_PER_TASK, else $ATTNLAB_THREADS, else the experiment's default.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

die() { echo "steps.sh: $*" >&2; exit 2; }

# The experiments that train the models exp_trained_* analyse: their checkpoints are linked into (task) or copied
# into (finish) the directories the trained experiments read.
training_experiments="exp_vit_training exp_recall_training"

# A path as the experiments write it into the ledger: relative to the repository root when inside it,
# absolute otherwise (ExperimentCli::evidence_path).
ledger_path() { realpath -m --relative-base="$root" "$1"; }

# REPORT.md in directory $1 from its ledger and tables (tools/make_report.py, the run's seed, mode and threads per
# task), its output in log $2; on failure the log is shown and the step stops.
make_report() {
  local flags=(--seed "$seed" "${thread_flags[@]}")
  [ "$quick" = 1 ] && flags+=(--quick)
  python3 "$root/tools/make_report.py" --results "$1" "${flags[@]}" >"$2" 2>&1 ||
    { sed 's/^/    /' "$2" >&2; die "tools/make_report.py failed"; }
}

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

# The build and vector ISA of the binaries in $1 as their stamps name it ("<commit> <isa>", lab/build_isa.hpp),
# from bin/attnlab_build_info; empty when the directory lacks it.
build_of() {
  [ -x "$1/attnlab_build_info" ] || return 0
  "$1/attnlab_build_info" | awk -F'\t' '$1 == "build" {b = $2} $1 == "isa" {i = $2} END {if (b != "") print b " " i}'
}

cmd_init() {
  [ $# -ge 3 ] || die "usage: steps.sh init RUN BIN N [--quick] [--seed S] [--split EXP=K]... [--flags EXP=FLAGS]..."
  local run_arg=$1 bin_arg=$2 n=$3; shift 3
  local q=0 s=20250311
  declare -A split=() extra=()
  while [ $# -gt 0 ]; do
    case $1 in
      --quick) q=1 ;;
      --seed) [ $# -ge 2 ] || die "--seed needs a value"; s=$2; shift ;;
      --split)
        [ $# -ge 2 ] || die "--split needs EXP=K"
        [[ $2 =~ ^(exp_[A-Za-z0-9_]+)=([1-9][0-9]*)$ ]] || die "--split '$2' is not EXP=K (an experiment, a whole number >= 1)"
        split[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}; shift ;;
      --flags)
        [ $# -ge 2 ] || die "--flags needs EXP=FLAGS"
        [[ $2 =~ ^(exp_[A-Za-z0-9_]+)=(.*)$ ]] && [[ $2 != *[$'\t\n']* ]] ||
          die "--flags '$2' is not EXP=FLAGS (an experiment, its flags on one line)"
        local e_name=${BASH_REMATCH[1]} e_flags=${BASH_REMATCH[2]} words word
        read -r -a words <<<"$e_flags"
        for word in "${words[@]}"; do
          case $word in --shard*|--judge*|--out*|--seed*|--quick|--threads*)
            die "--flags $e_name: $word is set by the run itself, not per experiment" ;;
          esac
        done
        extra[$e_name]=$e_flags; shift ;;
      *) die "unknown option $1" ;;
    esac
    shift
  done
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "shard count '$n' is not a whole number >= 1"
  [[ $s =~ ^[0-9]+$ ]] || die "seed '$s' is not a whole number"
  local bin_dir; bin_dir=$(cd "$bin_arg" 2>/dev/null && pwd) || die "$bin_arg: no such directory"
  [ -x "$bin_dir/attnlab_merge" ] || die "$bin_dir/attnlab_merge not found (build it: cmake --build build --target attnlab_merge)"
  local e
  for e in "${!split[@]}" "${!extra[@]}"; do [ -x "$bin_dir/$e" ] || die "--split/--flags $e: no experiment $e in $bin_dir"; done
  mkdir -p "$run_arg"
  local r; r=$(cd "$run_arg" && pwd)
  local conf
  # The binaries' digest: a rebuilt experiment makes old shards stale, so a run directory is for one build.
  local digest
  digest=$(cd "$bin_dir" && md5sum attnlab_merge exp_* | md5sum | cut -d' ' -f1)
  conf=$(printf 'bin=%q\nbinaries_md5=%q\nbuild=%q\nshards=%q\nseed=%q\nquick=%q\n' "$bin_dir" "$digest" \
    "$(build_of "$bin_dir")" "$n" "$s" "$q")
  # The plan: run_experiments.sh's order (alphabetical, exp_trained_* last), each with its task count and flags.
  local plan="" late="" exe name mode training_whole=0 training_found=0
  shopt -s nullglob
  for exe in "$bin_dir"/exp_*; do
    name=$(basename "$exe")
    mode=whole
    "$exe" --help 2>/dev/null | grep -q -- '--shard' && mode=sharded
    case $name in
      exp_trained_*) late+="$name	$mode	${split[$name]:-$n}	${extra[$name]:-}"$'\n' ;;
      *) plan+="$name	$mode	${split[$name]:-$n}	${extra[$name]:-}"$'\n'
         case " $training_experiments " in *" $name "*) training_found=1; [ "$mode" = sharded ] || training_whole=1 ;; esac ;;
    esac
  done
  # In full mode exp_trained_* read the checkpoints the training experiments wrote: if a training experiment runs
  # whole (in the finish step), or none is there, they must run after it there, so whole as well.
  if [ "$q" = 0 ] && { [ "$training_whole" = 1 ] || [ "$training_found" = 0 ]; }; then late=${late//	sharded	/	whole	}; fi
  plan+="$late"
  [ -n "$plan" ] || die "no experiments (exp_*) in $bin_dir"
  if [ -f "$r/run.conf" ]; then
    [ "$(cat "$r/run.conf")" = "$conf" ] && [ "$(cat "$r/plan.tsv")" = "${plan%$'\n'}" ] ||
      die "$r holds a run with other settings or of other binaries (a rebuild; see $r/run.conf): use a new directory, or remove it (make results FRESH=1) to start afresh"
  else
    printf '%s\n' "$conf" >"$r/run.conf"
    printf '%s' "$plan" >"$r/plan.tsv"
  fi
  mkdir -p "$r/shards" "$r/logs" "$r/times"
}

# The number of tasks of experiment $1 in the loaded run's plan (empty if it is not a sharded one).
tasks_of() { awk -F'\t' -v e="$1" '$1 == e && $2 == "sharded" {print $3}' "$run/plan.tsv"; }
# The experiment's own flags (--flags at init) as words, into the array exp_flags.
exp_flags_of() { read -r -a exp_flags <<<"$(awk -F'\t' -v e="$1" '$1 == e {print $4}' "$run/plan.tsv")"; }

cmd_task() {
  [ $# = 3 ] || die "usage: steps.sh task RUN EXP I"
  load "$1"; local exp=$2 i=$3
  local count; count=$(tasks_of "$exp")
  [ -n "$count" ] || die "$exp is not a sharded experiment of $run (plan.tsv)"
  [[ $i =~ ^[1-9][0-9]*$ ]] && [ "$i" -le "$count" ] || die "shard '$i' is not in 1..$count"
  local out=$run/shards/$exp/$i
  mkdir -p "$out"
  if [ "$quick" = 0 ] && [[ $exp == exp_trained_* ]]; then
    # The training experiments' checkpoints (exp_vit_training's checkpoints/<method>/seed-<k>, exp_recall_training's
    # checkpoints/recall/<method>/seed-<k>), each from whichever of its shards trained that model: one link per
    # checkpoint directory (one holding a manifest.json), at its path under checkpoints/, so that the seeds of one
    # method trained by different shards all appear.
    mkdir -p "$out/checkpoints"
    local found=0 m rel trainer
    for trainer in $training_experiments; do
      local dirs=("$run"/shards/$trainer/*/checkpoints)
      # A trainer the run does not have leaves the pattern unexpanded (or, under nullglob, nothing: find would then
      # search the current directory).
      [ -d "${dirs[0]:-}" ] || continue
      while IFS= read -r -d '' m; do
        rel=${m#"$run"/shards/$trainer/*/checkpoints/}; rel=${rel%/manifest.json}
        mkdir -p "$(dirname "$out/checkpoints/$rel")"
        ln -sfn "${m%/manifest.json}" "$out/checkpoints/$rel"; found=1
      done < <(find "${dirs[@]}" -name manifest.json -print0 2>/dev/null)
    done
    [ "$found" = 1 ] || die "$exp: no checkpoints in $run/shards/{${training_experiments// /,}}/*/checkpoints (the training tasks must finish first)"
  fi
  local exp_flags; exp_flags_of "$exp"
  local start=$EPOCHREALTIME rc=0 stats=""
  echo "steps.sh: $exp shard $i/$count on $(hostname), threads ${threads:-default}"
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M' -o "$out.rss" "$bin/$exp" --shard "$i/$count" --out "$out" "${flags[@]}" "${exp_flags[@]}" "${thread_flags[@]}" || rc=$?
    stats=$(tail -n 1 "$out.rss" 2>/dev/null || true); rm -f "$out.rss"
  else
    "$bin/$exp" --shard "$i/$count" --out "$out" "${flags[@]}" "${exp_flags[@]}" "${thread_flags[@]}" || rc=$?
  fi
  [ "$rc" = 0 ] || { echo "steps.sh: $exp shard $i/$count failed (exit $rc)" >&2; exit "$rc"; }
  [ -f "$out/$exp.shard.json" ] || die "$exp shard $i/$count exited 0 but wrote no stamp $out/$exp.shard.json"
  local end=$EPOCHREALTIME seconds
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.2f", b - a}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$exp" "$i" "$count" "$seconds" "${stats:-}" \
    "$(hostname)" "${threads:-default}" "${end%.*}" >"$run/times/$exp.$i"
}

cmd_missing() {
  [ $# = 1 ] || die "usage: steps.sh missing RUN"
  load "$1"
  # Every task of the plan, then the stamps checked against the run (slurm/stamps.py): the tasks without a
  # valid stamp are printed; a stamp of another seed, mode, shard count or build stops the run (exit 2).
  local exp mode count i
  while IFS=$'\t' read -r exp mode count; do
    [ "$mode" = sharded ] || continue
    for ((i = 1; i <= count; i++)); do echo "$exp $i"; done
  done <"$run/plan.tsv" | python3 "$here/stamps.py" "$run" "$seed" "$quick" "${build:-}"
}

cmd_finish() {
  [ $# = 1 ] || die "usage: steps.sh finish RUN"
  load "$1"
  local stage; stage=$(mktemp -d "$run/.merged.staging.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  rmdir "$stage"  # attnlab_merge creates it
  local dirs=() exp mode start=$SECONDS
  shopt -s nullglob
  while IFS=$'\t' read -r exp mode _; do
    [ "$mode" = sharded ] && dirs+=("$run/shards/$exp"/*/)
  done <"$run/plan.tsv"
  if [ ${#dirs[@]} -gt 0 ]; then
    "$bin/attnlab_merge" --out "$stage" "${dirs[@]%/}" || exit $?
  fi
  mkdir -p "$stage"
  while IFS=$'\t' read -r exp mode _; do
    [ "$mode" = sharded ] || continue
    [ -f "$stage/$exp.merged.json" ] || die "$exp: no shard of it in $run/shards/$exp has a stamp (its tasks did not complete)"
  done <"$run/plan.tsv"
  if [ "$quick" = 0 ]; then
    # The training experiments' checkpoints, for the judges and whole runs of exp_trained_* here: attnlab_merge
    # carries those a shard's stamp lists; any other is copied from the shard that wrote it.
    local m rel trainer
    for trainer in $training_experiments; do
      local dirs=("$run"/shards/$trainer/*/checkpoints)
      [ -d "${dirs[0]:-}" ] || continue  # a trainer the run does not have (nullglob: find would search the current directory)
      while IFS= read -r -d '' m; do
        rel=${m#"$run"/shards/$trainer/*/checkpoints/}; rel=${rel%/manifest.json}
        [ -e "$stage/checkpoints/$rel" ] && continue
        mkdir -p "$(dirname "$stage/checkpoints/$rel")"
        cp -r "${m%/manifest.json}" "$stage/checkpoints/$rel"
      done < <(find "${dirs[@]}" -name manifest.json -print0 2>/dev/null)
    done
  fi
  while IFS=$'\t' read -r exp mode _; do
    local t0=$SECONDS
    if [ "$mode" = sharded ]; then
      "$bin/$exp" --judge "$stage" >"$run/logs/$exp.judge.log" 2>&1 ||
        { sed 's/^/    /' "$run/logs/$exp.judge.log" >&2; die "$exp --judge $stage failed"; }
    else
      local exp_flags; exp_flags_of "$exp"
      "$bin/$exp" --out "$stage" "${flags[@]}" "${exp_flags[@]}" "${thread_flags[@]}" >"$run/logs/$exp.whole.log" 2>&1 ||
        { sed 's/^/    /' "$run/logs/$exp.whole.log" >&2; die "$exp (whole run) failed"; }
    fi
    printf '%-28s %-8s %3d s\n' "$exp" "$([ "$mode" = sharded ] && echo judged || echo whole)" "$((SECONDS - t0))"
  done <"$run/plan.tsv"
  # The ledger names its evidence in RUN/merged (where the stage is renamed to) before the report quotes it.
  rewrite_dir "$stage/claims.csv" "$stage" "$run/merged"
  rewrite_dir "$stage/corrections.csv" "$stage" "$run/merged"
  make_report "$stage" "$run/logs/report.log"
  # The run record: every task's time, host and threads, the sessions' wall time, the build's vector ISA.
  python3 "$root/tools/run_record.py" sharded "$run" --finish-seconds "$((SECONDS - start))" --out "$stage/RUNS.md" \
    >"$run/logs/run_record.log" 2>&1 || { sed 's/^/    /' "$run/logs/run_record.log" >&2; die "tools/run_record.py failed"; }
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
  rewrite_dir "$stage/corrections.csv" "$run/merged" "$out"
  # The report quotes the ledger's notes, evidence paths included: made again from the rewritten ledger.
  make_report "$stage" "$run/logs/publish_report.log"
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
