#!/usr/bin/env python3
"""The tasks of a sharded run that are still to run, with every stamp checked against the run (slurm/steps.sh
missing calls it; a resumed `make results` relies on it).

usage: slurm/stamps.py RUN SEED QUICK BUILD < tasks     (each line "EXP I"; QUICK 0 or 1; BUILD may be empty)

For each task, RUN/shards/EXP/I/EXP.shard.json (lib/attnlab/lab/shard_stamp.hpp):
- no stamp: the task is printed (it has not finished);
- a stamp of another experiment, shard, shard count, seed or mode than the run's, or of another build than
  the run's binaries (BUILD: "<commit> <vector ISA>", as the stamps name it; when BUILD is empty, another
  build than the run's other stamps): refused, exit 2, one line naming the stamp. Such a stamp cannot be
  mixed into this run's tables, and nothing is rerun over it silently;
- a stamp whose tables or artifacts are missing or differ from it (size, CRC-32): the task is printed, and
  a line on stderr says why (a rerun of the task removes the stamp first and writes everything again).
Prints the tasks to run, one "EXP I" line each, in the order given.
"""
import json
import os
import sys
import zlib


class Refused(Exception):
    pass


def crc32_of(path):
    crc = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            crc = zlib.crc32(block, crc)
    return crc & 0xFFFFFFFF


def changed_file(directory, stamp):
    """The first stamped table or artifact that is missing or differs from the stamp, with why; None if all agree."""
    for entry in stamp.get("tables", []) + stamp.get("artifacts", []):
        path = os.path.join(directory, entry["file"])
        if not os.path.isfile(path):
            return f"{path} is missing"
        size = os.path.getsize(path)
        if size != entry["bytes"] or crc32_of(path) != entry["crc32"]:
            return f"{path} differs from its stamp (size or CRC-32)"
    return None


def check(stamp_path, stamp, exp, i, count, seed, quick, build):
    """Raises Refused when the stamp belongs to another run than this one."""
    def refuse(what, theirs, ours):
        raise Refused(f"{stamp_path}: a stamp of {what} {theirs}, not this run's {ours}: it cannot be mixed into this "
                      "run (start afresh: make results FRESH=1, or a new run directory)")
    if stamp.get("experiment") != exp or stamp.get("shard") != i:
        refuse("experiment and shard", f"{stamp.get('experiment')} {stamp.get('shard')}", f"{exp} {i}")
    if stamp.get("shards") != count:
        refuse("shard count", stamp.get("shards"), count)
    if stamp.get("seed") != seed:
        refuse("seed", stamp.get("seed"), seed)
    if stamp.get("quick") != quick:
        refuse("mode", "quick" if stamp.get("quick") else "full", "quick" if quick else "full")
    if stamp.get("build") != build:
        refuse("build", repr(stamp.get("build")), repr(build))


def main(argv):
    if len(argv) != 5 or argv[3] not in ("0", "1"):
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    run, seed, quick, build = argv[1], argv[2], argv[3] == "1", argv[4]
    tasks = [line.split() for line in sys.stdin if line.strip()]
    count = {}
    for exp, i in tasks:
        count[exp] = max(count.get(exp, 0), int(i))
    todo = []
    try:
        for exp, i in tasks:
            directory = os.path.join(run, "shards", exp, i)
            stamp_path = os.path.join(directory, exp + ".shard.json")
            if not os.path.exists(stamp_path):
                todo.append((exp, i))
                continue
            try:
                with open(stamp_path, encoding="utf-8") as f:
                    stamp = json.load(f)
                if not isinstance(stamp, dict):
                    raise ValueError("not a JSON object")
            except (OSError, ValueError) as e:
                print(f"stamps.py: {stamp_path}: unreadable ({e}); its task runs again", file=sys.stderr)
                todo.append((exp, i))
                continue
            # Without a build of its own (no bin/attnlab_build_info), the run's first stamp sets it.
            build = build or stamp.get("build") or ""
            check(stamp_path, stamp, exp, int(i), count[exp], seed, quick, build)
            why = changed_file(directory, stamp)
            if why:
                print(f"stamps.py: {why}; its task runs again", file=sys.stderr)
                todo.append((exp, i))
    except Refused as e:
        print(f"stamps.py: {e}", file=sys.stderr)
        return 2
    for exp, i in todo:
        print(exp, i)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
