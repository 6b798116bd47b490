"""docs/python.md's walk-through, run as a notebook would run it: every ```python block in order, in one namespace,
from the repository's root, and what each prints compared with the ```text block that follows it in the page. A block
whose first line is "# needs PyTorch" is skipped, with the rest of the page still run, where PyTorch does not import."""
import contextlib
import io
import os
import re

import pytest

from support import ROOT

PAGE = os.path.join(ROOT, "docs", "python.md")


def blocks(path):
    """[(line, code, expected output or None)] of the page's python blocks."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    fences = list(re.finditer(r"^```(\w*)\n(.*?)^```\s*$", text, flags=re.M | re.S))
    out = []
    for i, m in enumerate(fences):
        if m.group(1) != "python":
            continue
        expected = None
        if i + 1 < len(fences) and fences[i + 1].group(1) == "text" and text[m.end():fences[i + 1].start()].strip() == "":
            expected = fences[i + 1].group(2)
        out.append((text[:m.start()].count("\n") + 1, m.group(2), expected))
    return out


def test_walkthrough_prints_what_the_page_shows(tmp_path):
    page = blocks(PAGE)
    assert len(page) >= 8, "the walk-through lost its blocks"
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    namespace, skipped = {"__name__": "__walkthrough__"}, []
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for line, code, expected in page:
            if code.startswith("# needs PyTorch") and not have_torch:
                skipped.append(line)
                continue
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(code, f"{PAGE}:{line}", "exec"), namespace)
            if expected is not None:
                assert printed.getvalue() == expected, f"docs/python.md:{line} printed:\n{printed.getvalue()}"
    finally:
        os.chdir(cwd)
    if skipped:
        pytest.skip(f"PyTorch does not import: the blocks at lines {skipped} were not run (the others were)")
