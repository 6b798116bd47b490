#!/usr/bin/env python3
"""ctest run_tools: the run's bookkeeping on synthetic run directories (no experiment runs): slurm/stamps.py (which
tasks a resumed run keeps, and which stamps it refuses), tools/run_record.py (RUNS.md) and slurm/compare_runs.py's
two cases (the same vector ISA: byte for byte; different ISAs: the same verdicts). Each check is made to fail
first where that is possible (a changed table, a foreign stamp, a changed verdict), so none passes vacuously.

usage: slurm/test_run_tools.py
"""
import json
import os
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def stamp(run, exp, i, count, table_text, seed="7", quick=True, build="abc avx512"):
    """A shard directory RUN/shards/EXP/I with one table and its stamp (the fields slurm/stamps.py reads)."""
    d = os.path.join(run, "shards", exp, str(i))
    write(os.path.join(d, "t.csv"), table_text)
    data = table_text.encode()
    s = {"format": "attnlab-shard-2", "experiment": exp, "shard": i, "shards": count, "seed": seed, "quick": quick,
         "build": build, "options": "", "sweeps": [3], "hosts": [{"shard": i, "host": "h1", "cpu": "Test CPU"}],
         "tables": [{"file": "t.csv", "bytes": len(data), "crc32": zlib.crc32(data) & 0xFFFFFFFF}], "artifacts": []}
    write(os.path.join(d, exp + ".shard.json"), json.dumps(s))
    return os.path.join(d, exp + ".shard.json")


def stamps_py(run, tasks, build="abc avx512"):
    r = subprocess.run([sys.executable, os.path.join(HERE, "stamps.py"), run, "7", "1", build],
                       input="".join(f"{e} {i}\n" for e, i in tasks), capture_output=True, text=True)
    return r.returncode, r.stdout.split("\n")[:-1], r.stderr


def test_stamps(tmp):
    run = os.path.join(tmp, "run")
    tasks = [("exp_a", 1), ("exp_a", 2), ("exp_b", 1)]
    rc, todo, err = stamps_py(run, tasks)
    check(rc == 0 and todo == ["exp_a 1", "exp_a 2", "exp_b 1"], f"no stamps: every task to run ({rc}, {todo}, {err})")
    stamp(run, "exp_a", 1, 2, "x\n1\n")
    stamp(run, "exp_b", 1, 1, "y\n2\n")
    rc, todo, err = stamps_py(run, tasks)
    check(rc == 0 and todo == ["exp_a 2"], f"two valid stamps kept, the third task to run ({rc}, {todo}, {err})")
    # A table changed after its stamp: the task runs again, with a line saying why.
    write(os.path.join(run, "shards", "exp_b", "1", "t.csv"), "y\n3\n")
    rc, todo, err = stamps_py(run, tasks)
    check(rc == 0 and todo == ["exp_a 2", "exp_b 1"] and "differs from its stamp" in err,
          f"a changed table makes its task run again ({rc}, {todo}, {err})")
    stamp(run, "exp_b", 1, 1, "y\n2\n")
    # Stamps of another run are refused, naming the stamp: seed, mode, shard count, build.
    for kwargs, what in (({"seed": "8"}, "seed"), ({"quick": False}, "mode"), ({"build": "abc avx2"}, "build")):
        path = stamp(run, "exp_a", 1, 2, "x\n1\n", **kwargs)
        rc, todo, err = stamps_py(run, tasks)
        check(rc == 2 and what in err and path in err and todo == [], f"a stamp of another {what} is refused ({rc}, {err})")
    path = stamp(run, "exp_a", 1, 3, "x\n1\n")
    rc, _, err = stamps_py(run, tasks)
    check(rc == 2 and "shard count" in err, f"a stamp of another shard count is refused ({rc}, {err})")
    # Without the run's own build (no attnlab_build_info), the stamps must agree among themselves.
    stamp(run, "exp_a", 1, 2, "x\n1\n", build="old avx512")
    rc, _, err = stamps_py(run, tasks, build="")
    check(rc == 2 and "build" in err, f"stamps of two builds in one run are refused ({rc}, {err})")
    stamp(run, "exp_a", 1, 2, "x\n1\n")
    rc, todo, _ = stamps_py(run, tasks, build="")
    check(rc == 0 and todo == ["exp_a 2"], "stamps of one build pass without the run's build")


def results_dir(path, isa, verdict="holds", table="a,b\n1,2\n", timing="s\n0.1\n", timed_verdict="holds"):
    """A results directory: Q1, a claim of exact tables, and U15, a timing claim (slurm/timing_claims.txt)."""
    write(os.path.join(path, "t.csv"), table)
    write(os.path.join(path, "t_timing.csv"), timing)
    write(os.path.join(path, "claims.csv"), f"id,verdict,observed,evidence,note\nQ1,{verdict},0.5,{path}/t.csv,n\n"
                                            f"U15,{timed_verdict},0,{path}/t_timing.csv,t\n")
    write(os.path.join(path, "REPORT.md"), "# report\n")
    if isa:
        write(os.path.join(path, "RUNS.md"), f"# How long the run took\n\n| | |\n|---|---|\n| vector ISA | `{isa}` (Eigen) |\n")


def compare(a, b):
    r = subprocess.run([sys.executable, os.path.join(HERE, "compare_runs.py"), a, b], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def test_compare(tmp):
    d = lambda name: os.path.join(tmp, name)  # noqa: E731
    results_dir(d("a"), "avx512")
    results_dir(d("b"), "avx512", timing="s\n0.2\n")
    rc, out = compare(d("a"), d("b"))
    check(rc == 0 and "the same vector ISA on both sides (avx512)" in out, f"same ISA, same tables: equal ({rc}, {out})")
    results_dir(d("c"), "avx512", table="a,b\n1,2.0000001\n")
    rc, out = compare(d("a"), d("c"))
    check(rc == 1 and "t.csv: differs" in out, f"same ISA: a digit differs, a failure ({rc}, {out})")
    results_dir(d("e"), "avx2", table="a,b\n1,2.0000001\n")
    rc, out = compare(d("a"), d("e"))
    check(rc == 0 and "different vector ISAs (avx512" in out and "expected between ISAs" in out,
          f"different ISAs: a digit differs, listed, the same verdicts pass ({rc}, {out})")
    results_dir(d("f"), "avx2", verdict="fails")
    rc, out = compare(d("a"), d("f"))
    check(rc == 1 and "verdict holds" in out, f"different ISAs: another verdict is a failure ({rc}, {out})")
    results_dir(d("g"), None, table="a,b\n1,2.0000001\n")
    rc, out = compare(d("a"), d("g"))
    check(rc == 1 and "not recorded" in out, f"an unrecorded ISA is compared byte for byte, and says so ({rc}, {out})")
    # A timing claim may be decided in one run and inconclusive in the other, never decided two ways.
    for isa, name in (("avx512", "h"), ("avx2", "i")):
        results_dir(d(name + "1"), isa, timed_verdict="inconclusive")
        rc, out = compare(d("a"), d(name + "1"))
        check(rc == 0, f"{isa}: a timing claim holds in one run and is inconclusive in the other: equal ({rc}, {out})")
        for other in ("conditional", "fails"):
            results_dir(d(name + other), isa, timed_verdict=other)
            rc, out = compare(d("a"), d(name + other))
            check(rc == 1 and f"U15: verdict holds in {d('a')}, {other} in" in out,
                  f"{isa}: a timing claim holds in one run and is {other} in the other: a flip ({rc}, {out})")


def test_run_record(tmp):
    run = os.path.join(tmp, "rec")
    os.makedirs(os.path.join(run, "times"))
    write(os.path.join(run, "run.conf"), "bin=/nonexistent\nbinaries_md5=x\nbuild=\nshards=1\nseed=7\nquick=1\n")
    write(os.path.join(run, "plan.tsv"), "exp_a\tsharded\t2\t\nexp_b\tsharded\t1\t")
    for exp, i, n, sec, end in (("exp_a", 1, 2, "10.00", 1010), ("exp_a", 2, 2, "20.00", 1030), ("exp_b", 1, 1, "5.00", 2005)):
        write(os.path.join(run, "times", f"{exp}.{i}"), f"{exp}\t{i}\t{n}\t{sec}\t2048\th1\t2\t{end}\n")
        stamp(run, exp, i, n, "x\n")
    # Two sessions: the first cut short by a crash (no end: counted to its last task, at 1030), the second ended.
    write(os.path.join(run, "sessions.tsv"), "1000\t\t3\t1\t2\n2000\t2010\t1\t1\t2\n")
    out = os.path.join(tmp, "RUNS.md")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "run_record.py"), "sharded", run,
                        "--finish-seconds", "3", "--out", out], capture_output=True, text=True)
    check(r.returncode == 0, f"run_record.py sharded: {r.stderr}")
    text = open(out, encoding="utf-8").read() if os.path.exists(out) else ""
    check("| wall time | 40 s over 2 sessions" in text, f"the wall time is the sessions' (30 s + 10 s): {text}")
    check("session 1 ended without a record" in text, "a crashed session is named")
    check("| `exp_a` | 2 | 30.0 | 20.0 | 2 | 2 |" in text, f"exp_a's row: 2 tasks, 30 s, longest 20 s, 2 MiB: {text}")
    check("| host | h1: Test CPU |" in text, "the host and the CPU from the stamps")
    check("| vector ISA | `unknown`" in text, "no attnlab_build_info: the ISA is unknown, not guessed")
    check("| `exp_a` | 2/2 | 20.0 |" in text, "each task has a row")


def main():
    with tempfile.TemporaryDirectory(prefix="attnlab-run-tools.") as tmp:
        test_stamps(tmp)
        test_compare(tmp)
        test_run_record(tmp)
    if FAILURES:
        print(f"run_tools: {len(FAILURES)} failure(s)")
        return 1
    print("run_tools: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
