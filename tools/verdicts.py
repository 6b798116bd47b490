"""The verdict vocabulary, read from its one definition, lib/attnlab/io/verdicts.tsv (the C++ ledger's enum is
generated from the same file by CMake)."""
import os

VERDICTS_TSV = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib", "attnlab", "io",
                            "verdicts.tsv")


def read_verdicts(path=VERDICTS_TSV):
    """[(verdict, meaning)] in the report's order; comment lines (#) and blank lines skipped."""
    verdicts = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            name, tab, meaning = line.partition("\t")
            if not tab or not name.isalpha() or not name.islower() or not meaning.strip():
                raise ValueError(f"{path}:{number}: not 'verdict<TAB>meaning': {line!r}")
            verdicts.append((name, meaning.strip()))
    if not verdicts:
        raise ValueError(f"{path}: no verdicts")
    return verdicts


def contradict(a, b):
    """Whether two runs' verdicts of one claim contradict each other: they differ and neither is inconclusive. A
    verdict drawn from timings may be decided in one run and inconclusive in another (its interval widened or
    narrowed with the machine's load), never decided two different ways (holds against conditional included)."""
    return a != b and "inconclusive" not in (a, b)
