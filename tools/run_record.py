#!/usr/bin/python3
"""Writes RUNS.md, the record of the run that made a results directory: its wall time in all, each experiment's
and each task's, the threads, the host and its CPU, the build and its vector ISA. Written by the run itself
(slurm/steps.sh finish for a sharded run, tools/run_experiments.sh for the one-process one), so that nothing
about how long `make results` takes is typed by hand; slurm/compare_runs.py reads the ISA back.

usage: tools/run_record.py sharded RUN [--finish-seconds S] --out FILE
       tools/run_record.py whole TIMES --bin DIR --seed S [--quick] [--threads T] [--total-seconds S] --out FILE

sharded: RUN is a tools/run_sharded.sh or slurm/submit.sh run directory (run.conf, plan.tsv, times/, sessions.tsv,
the shards' stamps). whole: TIMES holds one line per experiment, "experiment<TAB>seconds<TAB>host", in run order.
"""
import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import tempfile

ISA_ROW = "vector ISA"  # slurm/compare_runs.py reads the row of this name


def build_info(bin_dir):
    """{'build', 'isa', 'eigen_simd'} from bin/attnlab_build_info; the values 'unknown' without it."""
    info = {"build": "unknown", "isa": "unknown", "eigen_simd": "unknown"}
    exe = os.path.join(bin_dir, "attnlab_build_info")
    if os.access(exe, os.X_OK):
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            key, _, value = line.partition("\t")
            if key in info:
                info[key] = value
    return info


def this_cpu():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def seconds_text(s):
    """'8,905 s (2 h 28 min)' (the parenthesis from a minute on)."""
    s = float(s)
    text = f"{s:,.0f} s"
    if s >= 60:
        h, m = divmod(int(round(s / 60)), 60)
        text += f" ({h} h {m} min)" if h else f" ({m} min)"
    return text


def write_atomically(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".run_record.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def read_conf(run):
    """run.conf's shell assignments (printf %q values) as a dict."""
    conf = {}
    with open(os.path.join(run, "run.conf"), encoding="utf-8") as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            words = shlex.split(value) if value else []
            conf[key] = words[0] if words else ""
    return conf


def read_tasks(run):
    """Each finished task of the plan, in plan order: dicts of experiment, shard, shards, seconds, kib, host,
    threads, end (steps.sh task's RUN/times/EXP.I) and cpu (from its stamp)."""
    tasks = []
    with open(os.path.join(run, "plan.tsv"), encoding="utf-8") as f:
        plan = [line.rstrip("\n").split("\t")[:3] for line in f if line.strip()]
    for exp, mode, count in plan:
        if mode != "sharded":
            continue
        for i in range(1, int(count) + 1):
            path = os.path.join(run, "times", f"{exp}.{i}")
            if not os.path.exists(path):
                continue
            with open(path, encoding="utf-8") as f:
                fields = f.read().rstrip("\n").split("\t")
            fields += [""] * (8 - len(fields))
            cpu = "unknown CPU"
            try:
                with open(os.path.join(run, "shards", exp, str(i), exp + ".shard.json"), encoding="utf-8") as f:
                    cpu = json.load(f)["hosts"][0]["cpu"]
            except (OSError, ValueError, KeyError, IndexError):
                pass
            tasks.append({"experiment": exp, "shard": i, "shards": int(count), "seconds": float(fields[3]),
                          "kib": fields[4], "host": fields[5], "threads": fields[6], "end": fields[7], "cpu": cpu})
    return plan, tasks


def session_seconds(run, tasks, now):
    """(seconds, sessions, notes) from RUN/sessions.tsv (tools/run_sharded.sh), or None without it (Slurm). A session
    without an end is the running one when it is the last (ends now), else one cut short by a crash (counted to
    the last task that finished in it)."""
    path = os.path.join(run, "sessions.tsv")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    total, notes = 0.0, []
    ends = [int(t["end"]) for t in tasks if t["end"].isdigit()]
    for k, row in enumerate(rows):
        start = int(row[0])
        end = int(row[1]) if len(row) > 1 and row[1] else None
        if end is None:
            if k == len(rows) - 1:
                end = now
            else:
                nxt = int(rows[k + 1][0])
                inside = [e for e in ends if start <= e < nxt]
                end = max(inside) if inside else start
                notes.append(f"session {k + 1} ended without a record (a crash or a reboot): counted to its last "
                             "finished task")
        total += max(0, end - start)
    return total, len(rows), notes


def experiment_rows(order, tasks):
    """One table row per experiment: tasks, the sum and the longest of their wall times, peak memory, threads."""
    rows = []
    for exp in order:
        mine = [t for t in tasks if t["experiment"] == exp]
        if not mine:
            continue
        kib = [int(t["kib"]) for t in mine if t["kib"].isdigit()]
        threads = sorted({t["threads"] for t in mine})
        rows.append(f"| `{exp}` | {len(mine)} | {sum(t['seconds'] for t in mine):,.1f} | "
                    f"{max(t['seconds'] for t in mine):,.1f} | {max(kib) / 1024:,.0f} | {', '.join(threads)} |"
                    if kib else
                    f"| `{exp}` | {len(mine)} | {sum(t['seconds'] for t in mine):,.1f} | "
                    f"{max(t['seconds'] for t in mine):,.1f} | - | {', '.join(threads)} |")
    return rows


def header(mode_text, how, wall, build, hosts):
    lines = ["# How long the run took", "",
             "Generated by `tools/run_record.py` from the run that wrote these results; do not edit by hand.", "",
             "| | |", "|---|---|",
             f"| mode | {mode_text} |", f"| how | {how} |", f"| wall time | {wall} |",
             f"| build | `{build['build']}` |",
             f"| {ISA_ROW} | `{build['isa']}` (Eigen vectorizes with {build['eigen_simd']}) |"]
    for host, cpu in hosts:
        lines.append(f"| host | {host}: {cpu} |")
    return lines


def sharded(args):
    run = args.run
    conf = read_conf(run)
    plan, tasks = read_tasks(run)
    build = build_info(conf.get("bin", ""))
    now = int(datetime.datetime.now().timestamp())
    task_sum = sum(t["seconds"] for t in tasks)
    sessions = session_seconds(run, tasks, now)
    finish = f"; merge, judge and report {args.finish_seconds:,.0f} s" if args.finish_seconds is not None else ""
    if sessions is None:
        wall = (f"not recorded end to end (the tasks ran as Slurm jobs); the tasks' wall times add up to "
                f"{seconds_text(task_sum)}{finish}")
    else:
        seconds, count, notes = sessions
        wall = (f"{seconds_text(seconds)}" + (f" over {count} sessions (an interrupted run, resumed)" if count > 1 else "")
                + f"; the tasks' wall times add up to {seconds_text(task_sum)}{finish}"
                + ("; " + "; ".join(notes) if notes else ""))
    counts = {exp: int(count) for exp, mode, count in plan if mode == "sharded"}
    whole = [exp for exp, mode, _ in plan if mode != "sharded"]
    try:
        with open(os.path.join(run, "sessions.tsv"), encoding="utf-8") as f:
            last = [line.rstrip("\n").split("\t") for line in f if line.strip()][-1]
        how = f"tools/run_sharded.sh, {last[3]} task(s) at a time with {last[4]} thread(s) each"
    except (OSError, IndexError):
        how = ("slurm/submit.sh: Slurm job arrays" if os.path.exists(os.path.join(run, "submit.conf"))
               else "slurm/steps.sh")
    how += f": {sum(counts.values())} tasks of {len(counts)} experiments"
    if whole:
        how += f"; run whole in the finish step: {', '.join(whole)}"
    hosts = sorted({(t["host"], t["cpu"]) for t in tasks})
    mode_text = f"{'quick' if conf.get('quick') == '1' else 'full'} (seed {conf.get('seed', 'unknown')})"
    lines = header(mode_text, how, wall, build, hosts)
    lines += ["", "## Experiments", "",
              "| experiment | tasks | wall s, all tasks | wall s, longest task | peak memory MiB | threads |",
              "|---|---|---|---|---|---|"]
    lines += experiment_rows([exp for exp, _, _ in plan], tasks)
    if any(c > 1 for c in counts.values()):
        lines += ["", "## Tasks", "", "| experiment | task | wall s | peak memory MiB | host | threads |",
                  "|---|---|---|---|---|---|"]
        for t in tasks:
            mib = f"{int(t['kib']) / 1024:,.0f}" if t["kib"].isdigit() else "-"
            lines.append(f"| `{t['experiment']}` | {t['shard']}/{t['shards']} | {t['seconds']:,.1f} | {mib} | "
                         f"{t['host']} | {t['threads']} |")
    write_atomically(args.out, "\n".join(lines) + "\n")


def whole(args):
    with open(args.times, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    build = build_info(args.bin)
    threads = args.threads or f"the experiments' default ({os.cpu_count()} logical cores)"
    task_sum = sum(float(r[1]) for r in rows)
    wall = (f"{seconds_text(args.total_seconds)}; the experiments' wall times add up to {seconds_text(task_sum)}"
            if args.total_seconds is not None else f"the experiments' wall times add up to {seconds_text(task_sum)}")
    hosts = sorted({(r[2], this_cpu()) for r in rows})
    lines = header(f"{'quick' if args.quick else 'full'} (seed {args.seed})",
                   f"tools/run_experiments.sh: {len(rows)} experiments one after another in one process each, "
                   f"threads: {threads}", wall, build, hosts)
    lines += ["", "## Experiments", "", "| experiment | wall s |", "|---|---|"]
    lines += [f"| `{r[0]}` | {float(r[1]):,.1f} |" for r in rows]
    write_atomically(args.out, "\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="kind", required=True)
    s = sub.add_parser("sharded")
    s.add_argument("run")
    s.add_argument("--finish-seconds", type=float)
    s.add_argument("--out", required=True)
    w = sub.add_parser("whole")
    w.add_argument("times")
    w.add_argument("--bin", required=True)
    w.add_argument("--seed", required=True)
    w.add_argument("--quick", action="store_true")
    w.add_argument("--threads")
    w.add_argument("--total-seconds", type=float)
    w.add_argument("--out", required=True)
    args = ap.parse_args()
    try:
        (sharded if args.kind == "sharded" else whole)(args)
    except (OSError, ValueError, IndexError, subprocess.CalledProcessError) as e:
        print(f"run_record.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
