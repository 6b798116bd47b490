#!/usr/bin/env bash
# Submits a sharded run of every experiment to Slurm (issue 16) and prints the job ids:
#
#   slurm/submit.sh --shards N [--split EXP=K]... [--flags EXP=FLAGS]... [--partition P] [--quick] [--seed S]
#                   [--bin DIR] [--resources FILE] --out RUN
#   slurm/submit.sh --resume RUN
#
# One job array per experiment that can shard (`--help` offers --shard): --array=1-N (1-K for an
# experiment given with --split EXP=K), task I runs shard I of it (slurm/task.sbatch), with the
# experiment's own flags from --flags EXP=FLAGS (e.g. exp_vit_training='--epochs 50'), and with
# --cpus-per-task, --mem and --time from slurm/resources.tsv. In full mode the exp_trained_* arrays
# wait for the training arrays (exp_vit_training's and exp_recall_training's, --dependency=afterok), whose
# checkpoints they read. Then one merge-judge-report job (slurm/finish.sbatch) with
# --dependency=afterok on every array: the merged tables, claims.csv and REPORT.md land in RUN/merged.
# Only plain sbatch options are used: --array, --dependency, --kill-on-invalid-dep, --job-name,
# --output, --time, --mem, --cpus-per-task and --partition (when given). RUN and the build's binaries
# must be on a file system every node sees; RUN/logs holds every task's output.
#
# --resume RUN: after a task failed or was cancelled (the finish job is then cancelled too, as its
# dependency can never be satisfied), resubmits only the tasks whose shard has no stamp, with the same
# settings, and a new finish job after them. Refused while any job of RUN is still queued or running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
steps=$here/steps.sh

die() { echo "submit.sh: $*" >&2; exit 2; }
usage() { die "usage: slurm/submit.sh --shards N [--split EXP=K]... [--flags EXP=FLAGS]... [--partition P] [--quick] [--seed S] [--bin DIR] [--resources FILE] --out RUN | --resume RUN"; }

shards="" partition="" quick=() seed=20250311 bin=$here/../build/bin resources=$here/resources.tsv out="" resume="" split=()
while [ $# -gt 0 ]; do
  case $1 in
    --shards) shards=${2:-}; shift ;;
    --split|--flags) split+=("$1" "${2:-}"); shift ;;
    --partition) partition=${2:-}; shift ;;
    --quick) quick=(--quick) ;;
    --seed) seed=${2:-}; shift ;;
    --bin) bin=${2:-}; shift ;;
    --resources) resources=${2:-}; shift ;;
    --out) out=${2:-}; shift ;;
    --resume) resume=${2:-}; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "submit.sh: unknown option '$1'" >&2; usage ;;
  esac
  shift
done
command -v sbatch >/dev/null || die "sbatch not found: run this on a Slurm login node"

to_seconds() {  # [D-]HH:MM:SS or MM:SS or MM -> seconds
  local t=$1 d=0 h=0 m=0 s=0
  [[ $t == *-* ]] && { d=${t%%-*}; t=${t#*-}; }
  IFS=: read -r -a p <<<"$t"
  case ${#p[@]} in
    3) h=${p[0]}; m=${p[1]}; s=${p[2]} ;;
    2) m=${p[0]}; s=${p[1]} ;;
    1) m=${p[0]} ;;
    *) die "bad time '$1' in $resources" ;;
  esac
  echo $(( ((10#$d * 24 + 10#$h) * 60 + 10#$m) * 60 + 10#$s ))
}
to_hms() { printf '%02d:%02d:%02d' $(($1 / 3600)) $(($1 / 60 % 60)) $(($1 % 60)); }

# The resources of one experiment (or `finish`): "cpus mem time" for this run's mode.
resources_of() {
  local name=$1 row
  row=$(awk -v e="$name" '$1 == e' "$resources")
  [ -n "$row" ] || row=$(awk '$1 == "default"' "$resources")
  [ -n "$row" ] || die "$resources has no line for $name and no default line"
  set -- $row
  [ $# = 7 ] || die "$resources: the line for $1 has $# fields, not 7"
  if [ "$quick_mode" = 1 ]; then echo "$5 $6 $7"; else echo "$2 $3 $4"; fi
}

# "1,2,3,5" -> "1-3,5" (sbatch --array syntax).
ranges() {
  awk -F, '{ out = ""; i = 1
    while (i <= NF) { j = i; while (j < NF && $(j + 1) == $j + 1) j++
      out = out (out == "" ? "" : ",") (j > i ? $i "-" $j : $i); i = j + 1 }
    print out }' <<<"$1"
}

# Runs sbatch and prints the job id (sbatch --parsable prints "id" or "id;cluster").
submit() {
  local id
  id=$(sbatch --parsable "$@") || die "sbatch refused: sbatch $*"
  echo "${id%%;*}"
}

if [ -n "$resume" ]; then
  [ -z "$shards" ] && [ -z "$out" ] || die "--resume takes the run directory only (its settings are in RUN/run.conf)"
  run=$(cd "$resume" 2>/dev/null && pwd) || die "$resume: no such run directory"
  [ -f "$run/submit.conf" ] && [ -f "$run/jobs.tsv" ] || die "$run was not submitted by slurm/submit.sh (no submit.conf, jobs.tsv)"
  # shellcheck source=/dev/null
  . "$run/submit.conf"
  # Jobs of this run still queued or running (%F: an array task's array job id, a plain job's own id).
  live=$(squeue -h -o '%F' | sort -u | grep -Fx -f <(cut -f2 "$run/jobs.tsv") || true)
  [ -z "$live" ] || die "jobs of $run are still queued or running ($(echo $live)): wait for them or scancel them first"
else
  [ -n "$shards" ] && [ -n "$out" ] || usage
  "$steps" init "$out" "$bin" "$shards" "${quick[@]}" --seed "$seed" "${split[@]}"
  run=$(cd "$out" && pwd)
  [ -f "$run/jobs.tsv" ] && die "$run was submitted before (jobs.tsv): use --resume $run, or a new directory"
  printf 'partition=%q\nresources=%q\n' "$partition" "$(cd "$(dirname "$resources")" && pwd)/$(basename "$resources")" >"$run/submit.conf"
fi
# shellcheck source=/dev/null
. "$run/run.conf"
quick_mode=$quick
[ -f "$resources" ] || die "$resources: no such resource table"
part=()
[ -n "$partition" ] && part=(--partition "$partition")

# The tasks to submit: every shard on a first submission, those without a stamp on --resume.
declare -A todo=()
missing=$("$steps" missing "$run") || exit $?
while read -r exp i; do [ -n "$exp" ] && todo[$exp]+="${todo[$exp]:+,}$i"; done <<<"$missing"
for exp in "${!todo[@]}"; do todo[$exp]=$(ranges "${todo[$exp]}"); done

ids=(); train_ids=""; whole_seconds=0
touch "$run/jobs.tsv"
while IFS=$'\t' read -r exp mode _; do
  read -r cpus mem time < <(resources_of "$exp")
  if [ "$mode" = whole ]; then
    whole_seconds=$((whole_seconds + $(to_seconds "$time")))
    printf '%-28s runs whole in the finish job (no --shard yet)\n' "$exp"
    continue
  fi
  [ -n "${todo[$exp]:-}" ] || continue
  dep=()
  if [ "$quick" = 0 ] && [[ $exp == exp_trained_* ]] && [ -n "$train_ids" ]; then dep=(--dependency=afterok:$train_ids); fi
  id=$(submit --job-name="attnlab.$exp" --array="${todo[$exp]}" --cpus-per-task="$cpus" --mem="$mem" --time="$time" \
    "${part[@]}" "${dep[@]}" --output="$run/logs/$exp.%a.log" "$here/task.sbatch" "$steps" "$run" "$exp")
  case $exp in exp_vit_training|exp_recall_training) train_ids=${train_ids:+$train_ids:}$id ;; esac
  ids+=("$id")
  printf '%s\t%s\t%s\n' "$exp" "$id" "${todo[$exp]}" >>"$run/jobs.tsv"
  printf '%-28s job %-8s array %-10s cpus %s, mem %s, time %s%s\n' "$exp" "$id" "${todo[$exp]}" "$cpus" "$mem" "$time" \
    "${dep:+, after $train_ids}"
done <"$run/plan.tsv"

read -r cpus mem time < <(resources_of finish)
time=$(to_hms $(( $(to_seconds "$time") + whole_seconds )))
dep=()
[ ${#ids[@]} -gt 0 ] && dep=(--dependency="afterok:$(IFS=:; echo "${ids[*]}")" --kill-on-invalid-dep=yes)
id=$(submit --job-name=attnlab.finish --cpus-per-task="$cpus" --mem="$mem" --time="$time" "${part[@]}" "${dep[@]}" \
  --output="$run/logs/finish.log" "$here/finish.sbatch" "$steps" "$run")
printf 'finish\t%s\t-\n' "$id" >>"$run/jobs.tsv"
printf '%-28s job %-8s after every array above: merge, judge, report into %s/merged\n' "finish" "$id" "$run"
echo "$id" >"$run/finish.jobid"
