#!/usr/bin/env python3
"""Checks that the user-facing documents (README.md and docs/*.md) hold no dead reference.

For every Markdown file it checks:
  - every relative link [text](path) and [text](path#anchor) names a file or directory that exists, and every
    anchor (#section, in the same or another Markdown file) names a heading of that file, slugged as GitHub
    does (lower case, punctuation dropped, spaces to hyphens, -1, -2 ... for repeated headings);
  - every `build/bin/NAME` quoted in the text or a code block is a program the build made (BIN_DIR/NAME exists
    and is executable);
  - every flag (--name) given to such a program on a command line inside a code block appears in that
    program's --help, so a renamed or removed flag cannot stay in the documents.
Links to web addresses (http:, https:, mailto:) are not followed.

With --run BUILD_DIR it runs the documents' commands instead, as a reader following them would: every ```sh block
(with bash -e) and every ```python block (with /usr/bin/python3), a document's blocks in order in one fresh directory
where build/, results/, tools/, verify/ and lib/ are the checkout's (the committed results are what the commands
read) and the example inputs the documents assume are ready (q.npy, k.npy, v.npy, wq.npy, wk.npy, a small GPT-2
checkpoint as model.safetensors and gpt2/model.safetensors, ~/fmnist the Fashion-MNIST files). A block that must not
run here (hours of training, the project's own make targets) says why in a comment right above it:
<!-- docs-test: not run: REASON -->. A code block without a language that holds a command is a problem (tag it).

usage: tools/check_docs.py [--root DIR] --bin BIN_DIR   (DIR: the repository, default this script's parent's)
       tools/check_docs.py [--root DIR] --run BUILD_DIR
       tools/check_docs.py --self-test                  (the check on made-up documents with planted defects)
Exit status 0 when everything resolves, 1 with one line per problem (file:line, what, why), 2 for bad usage.
"""
import os
import re
import stat
import subprocess
import sys
import tempfile

LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
PROGRAM = re.compile(r"(?<![\w./-])build/bin/([A-Za-z0-9_.-]+)")
FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][A-Za-z0-9-]*)")
NOT_RUN = re.compile(r"^<!--\s*docs-test:\s*not run:\s*(.+?)\s*-->\s*$")
COMMAND_START = re.compile(r"^\s*(?:build/bin/|\.\./bin/|make\b|cd\s|python3\b|/usr/bin/python3\b|mkdir\b)")
RUN_TIMEOUT = 900  # seconds a block may take
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # for the example inputs


def slug(heading):
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation but - and _ dropped, spaces to -."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text, flags=re.UNICODE)
    return text.replace(" ", "-")


def document_lines(path):
    """(line number, text, inside a code block) for each line of a Markdown file."""
    inside = False
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
                out.append((number, line.rstrip("\n"), True))
                continue
            out.append((number, line.rstrip("\n"), inside))
    return out


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        found = set()
        for _, line, code in document_lines(path):
            if code:
                continue
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
        cache[path] = found
    return cache[path]


def program_help(bin_dir, name, cache={}):
    key = (bin_dir, name)
    if key not in cache:
        try:
            r = subprocess.run([os.path.join(bin_dir, name), "--help"], capture_output=True, text=True, timeout=60)
            cache[key] = r.stdout + r.stderr
        except (OSError, subprocess.TimeoutExpired) as e:
            cache[key] = None
    return cache[key]


def command_flags(line):
    """For each build/bin program on a code line, the flags given to it (up to the next pipe, ;, && or program)."""
    out = []
    for m in PROGRAM.finditer(line):
        rest = line[m.end():]
        rest = re.split(r"\|\||&&|[|;]|\$\(|(?<![\w./-])(?:\.\./)?(?:build/)?bin/", rest)[0]
        out.append((m.group(1), FLAG.findall(rest)))
    return out


def check(root, bin_dir, files):
    problems = []
    for path in files:
        rel = os.path.relpath(path, root)
        for number, line, code in document_lines(path):
            where = f"{rel}:{number}"
            for name in PROGRAM.findall(line):
                exe = os.path.join(bin_dir, name)
                if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
                    problems.append(f"{where}: build/bin/{name} is not a program the build makes (no {exe})")
            if code:
                for name, flags in command_flags(line):
                    if not flags or not os.path.isfile(os.path.join(bin_dir, name)):
                        continue
                    text = program_help(bin_dir, name)
                    if text is None:
                        problems.append(f"{where}: build/bin/{name} --help did not run")
                        continue
                    for flag in flags:
                        if not re.search(re.escape(flag) + r"(?![\w-])", text):
                            problems.append(f"{where}: build/bin/{name} has no flag {flag} (not in its --help)")
                continue
            for m in list(LINK.finditer(line)) + list(IMAGE.finditer(line)):
                target = m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue
                file_part, _, anchor = target.partition("#")
                dest = path if not file_part else os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if file_part and not os.path.exists(dest):
                    problems.append(f"{where}: link '{target}': {os.path.relpath(dest, root)} does not exist")
                    continue
                if anchor:
                    if not dest.endswith(".md") or os.path.isdir(dest):
                        problems.append(f"{where}: link '{target}': an anchor into a file that is not Markdown")
                    elif anchor not in anchors(dest):
                        problems.append(f"{where}: link '{target}': no section '#{anchor}' in {os.path.relpath(dest, root)}")
    return problems


def code_blocks(path):
    """[(first line number, language, text, reason not to run or None)] of a Markdown file's fenced blocks."""
    blocks, inside, lang, start, body, reason, last_text = [], False, "", 0, [], None, ""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for number, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if m and not inside:
            inside, lang, start, body = True, line.strip()[3:].strip(), number, []
            note = NOT_RUN.match(last_text)
            reason = note.group(1) if note else None
            continue
        if m and inside:
            blocks.append((start, lang, "\n".join(body) + "\n", reason))
            inside, last_text = False, ""
            continue
        if inside:
            body.append(line)
        elif line.strip():
            last_text = line.strip()
    return blocks


def prepare_scratch(root, build, scratch):
    """The directory a document's commands run in: the checkout's build/, results/, tools/, verify/ and lib/, and the
    example inputs the documents assume."""
    for name, target in (("build", build), ("results", os.path.join(root, "results")), ("tools", os.path.join(root, "tools")),
                         ("verify", os.path.join(root, "verify")), ("lib", os.path.join(root, "lib"))):
        os.symlink(target, os.path.join(scratch, name))
    os.makedirs(os.path.join(scratch, "home"))
    os.symlink("/usr/share/datasets/fashion-mnist", os.path.join(scratch, "home", "fmnist"))
    script = f"""
import sys
import numpy as np
sys.path.insert(0, {os.path.join(REPO, "verify", "safetensors")!r})
import models, st_numpy
r = np.random.default_rng(0)
for name, shape in (("q", (256, 32)), ("k", (256, 32)), ("v", (256, 32)), ("wq", (64, 8)), ("wk", (64, 8))):
    np.save(name + ".npy", r.standard_normal(shape))
tensors, config, meta, *_ = models.build("gpt2", "F32", seed=1)
st_numpy.write_checkpoint("gpt2", tensors, config, 1, meta)
st_numpy.write_checkpoint(".", tensors, config, 1, meta)
"""
    subprocess.run(["/usr/bin/python3", "-c", script], cwd=scratch, check=True, capture_output=True, text=True)


def run_documents(root, build, files):
    """Runs every runnable block; returns (problems, ran, skipped [(where, reason)])."""
    problems, ran, skipped = [], 0, []
    for path in files:
        rel = os.path.relpath(path, root)
        blocks = code_blocks(path)
        todo = []
        for start, lang, text, reason in blocks:
            where = f"{rel}:{start}"
            commands = [ln for ln in text.splitlines() if COMMAND_START.match(ln)]
            if lang not in ("sh", "python"):
                if commands and lang == "":
                    problems.append(f"{where}: a code block without a language holds a command ({commands[0].strip()!r}): "
                                    "tag it ```sh (run by this check) or ```text (output)")
                continue
            if reason:
                skipped.append((where, reason))
                continue
            todo.append((where, lang, text))
        if not todo:
            continue
        with tempfile.TemporaryDirectory(prefix="attnlab-docs-") as scratch:
            prepare_scratch(root, build, scratch)
            env = dict(os.environ, HOME=os.path.join(scratch, "home"))
            for where, lang, text in todo:
                cmd = ["bash", "-e", "-o", "pipefail", "-c", text] if lang == "sh" else ["/usr/bin/python3", "-c", text]
                try:
                    r = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True, errors="replace",
                                       timeout=RUN_TIMEOUT)
                except subprocess.TimeoutExpired:
                    problems.append(f"{where}: the {lang} block took more than {RUN_TIMEOUT} s")
                    continue
                ran += 1
                if r.returncode != 0:
                    tail = [ln for ln in (r.stderr or r.stdout).strip().splitlines() if ln.strip()][-1:] or ["(no output)"]
                    problems.append(f"{where}: the {lang} block failed (exit {r.returncode}): {tail[0]}")
    return problems, ran, skipped


def documents(root):
    files = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return [f for f in files if os.path.isfile(f)]


def self_test():
    """Plants one defect of each kind in made-up documents and checks each is found, and nothing else."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        bin_dir = os.path.join(root, "bin")
        os.makedirs(bin_dir)
        tool = os.path.join(bin_dir, "tool")
        with open(tool, "w") as f:
            f.write("#!/bin/sh\necho 'usage: tool [--out DIR] [--seed N] [--quick]'\n")
        os.chmod(tool, os.stat(tool).st_mode | stat.S_IXUSR)
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("# Title\n\n## Reading `claims.csv`\n\n## Reading `claims.csv`\n\n"
                    "Good: [a](docs/page.md), [b](docs/page.md#the-flags-and-exit-statuses), [c](#reading-claimscsv-1),"
                    " [web](https://example.org/x#y).\n"
                    "Bad: [d](docs/missing.md), [e](docs/page.md#nowhere), [f](#reading-claimscsv-2).\n"
                    "Quoted: `build/bin/tool` and `build/bin/ghost`.\n\n"
                    "```sh\nbuild/bin/tool --out x --seed 3 | head\nbuild/bin/tool --quick --color\n"
                    "# [not a link](nowhere.md)\n```\n")
        with open(os.path.join(root, "docs", "page.md"), "w") as f:
            f.write("# Page\n\n## The flags and exit statuses\n\nBack to the [README](../README.md#title).\n")
        found = check(root, bin_dir, documents(root))
        expected = ["docs/missing.md does not exist", "no section '#nowhere'", "no section '#reading-claimscsv-2'",
                    "build/bin/ghost is not a program", "has no flag --color"]
        missing = [e for e in expected if not any(e in p for p in found)]
        if missing or len(found) != len(expected):
            print("check_docs self-test FAILED", file=sys.stderr)
            for e in missing:
                print(f"  not found: {e}", file=sys.stderr)
            for p in found:
                print(f"  reported: {p}", file=sys.stderr)
            return 1
    # --run: a failing block and an untagged command are found; a block that runs, a python block, a block marked
    # not run, and output in an untagged block are not problems.
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        build = os.path.join(root, "build")
        os.makedirs(os.path.join(build, "bin"))
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("# T\n\n```sh\necho made > made.txt\ntest -s q.npy\n```\n\n```python\nprint(open('made.txt').read())\n```\n\n"
                    "<!-- docs-test: not run: takes a day -->\n```sh\nfalse\n```\n\n```\noutput: done\n```\n\n"
                    "```sh\ncat absent.txt\n```\n\n```\nmake results\n```\n")
        found, ran, skipped = run_documents(root, build, documents(root))
        expected_run = ["README.md:21: the sh block failed", "README.md:25: a code block without a language holds a command"]
        missing = [e for e in expected_run if not any(p.startswith(e) for p in found)]
        if missing or len(found) != len(expected_run) or ran != 3 or [r for _, r in skipped] != ["takes a day"]:
            print("check_docs self-test (--run) FAILED", file=sys.stderr)
            for e in missing:
                print(f"  not found: {e}", file=sys.stderr)
            for p in found:
                print(f"  reported: {p}", file=sys.stderr)
            print(f"  ran {ran} (want 3), skipped {skipped}", file=sys.stderr)
            return 1
    print(f"check_docs self-test: the {len(expected)} planted defects found, nothing else; --run found its {len(expected_run)}")
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    bin_dir = build_dir = None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--root" and args:
            root = args.pop(0)
        elif a == "--bin" and args:
            bin_dir = args.pop(0)
        elif a == "--run" and args:
            build_dir = os.path.abspath(args.pop(0))
        else:
            print(f"check_docs.py: unexpected argument '{a}'\n{__doc__.splitlines()[-3]}", file=sys.stderr)
            return 2
    if build_dir is not None:
        if not os.path.isdir(os.path.join(build_dir, "bin")):
            print(f"check_docs.py: --run names no build directory with bin/ ('{build_dir}')", file=sys.stderr)
            return 2
        files = documents(os.path.abspath(root))
        problems, ran, skipped = run_documents(os.path.abspath(root), build_dir, files)
        for where, reason in skipped:
            print(f"{where}: not run: {reason}")
        for p in problems:
            print(p)
        if problems:
            print(f"check_docs.py --run: {len(problems)} problem(s); {ran} block(s) ran", file=sys.stderr)
            return 1
        print(f"check_docs.py --run: {ran} block(s) of {len(files)} document(s) ran as written; {len(skipped)} not run (reasons above)")
        return 0
    if bin_dir is None or not os.path.isdir(bin_dir):
        print(f"check_docs.py: --bin names no directory ('{bin_dir}')", file=sys.stderr)
        return 2
    files = documents(root)
    problems = check(root, bin_dir, files)
    for p in problems:
        print(p)
    if problems:
        print(f"check_docs.py: {len(problems)} problem(s) in {len(files)} document(s)", file=sys.stderr)
        return 1
    print(f"check_docs.py: {len(files)} document(s), every link, anchor, program and flag resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
