"""attnlab.inspect against bin/attnlab_inspect on the same checkpoints (the same tables, value for value, the same
claims and summary lines), the layout found by "auto", hostile files refused with the program's line; and
attnlab.inspect_heads on arrays in memory against the program's custom layout on a file of the same arrays."""
import csv
import os
import sys

import numpy as np
import pytest

import attnlab
from support import ROOT, cli_line, rng, run

sys.path.insert(0, os.path.join(ROOT, "verify", "safetensors"))
import models  # noqa: E402  (small checkpoints of every layout, as inspect_check.py makes them)
import st_format  # noqa: E402
import st_numpy  # noqa: E402

TABLES = {"heads": "inspect_heads.csv", "layers": "inspect_layers.csv", "costs": "inspect_costs.csv",
          "param_counts": "inspect_param_counts.csv"}


def program(args, out):
    r = run("attnlab_inspect", list(args) + ["--out", out, "--no-figure"])
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def assert_same_tables(ours, out_dir, model=None):
    """Every row and column of the program's CSV files (but its `inputs` column) equals the module's arrays: integers
    and texts as written, reals as the doubles the shortest round-trip text stands for; the claims' notes name the
    model (`model`: (the module's name, the program's) where they differ)."""
    for name, file in TABLES.items():
        rows, table = read_csv(os.path.join(out_dir, file)), getattr(ours, name)
        assert len(rows) == len(table), name
        for row, mine in zip(rows, table):
            for column in table.dtype.names:
                value = mine[column]
                if table.dtype[column].kind == "f":
                    assert float(row[column]) == value or (np.isnan(value) and row[column] == "nan"), (name, column)
                elif table.dtype[column].kind == "i":
                    assert int(row[column]) == value, (name, column)
                else:
                    assert row[column] == value, (name, column)
    claims = read_csv(os.path.join(out_dir, "claims.csv"))
    assert [c["id"] for c in claims] == list(ours.claims["id"])
    for c, mine in zip(claims, ours.claims):
        for column in ("id", "source", "verdict", "metric", "note", "experiment"):
            value = str(mine[column]).replace(model[0], model[1], 1) if model and column == "note" else mine[column]
            assert c[column] == value, column
        for column in ("observed", "threshold"):
            assert float(c[column]) == mine[column], column
        assert os.path.basename(c["evidence"]) == mine["evidence"]


@pytest.mark.parametrize("layout,dtype", [("bert", "F32"), ("roberta", "F16"), ("vit", "F32"), ("gpt2", "BF16"),
                                          ("llama", "F32"), ("attnlab", "F64")])
def test_same_as_the_program(tmp_path, layout, dtype):
    tensors, config, meta, *_ = models.build(layout, dtype, seed=11)
    path = st_numpy.write_checkpoint(str(tmp_path / "model"), tensors, config, shards=2 if layout == "gpt2" else 1, metadata=meta)
    lines = program(["--layout", layout, path], str(tmp_path / "out"))
    ours = attnlab.inspect(path, layout)
    assert lines[0] == "attnlab_inspect: " + ours.title
    assert lines[1:1 + len(ours.summary)] == ours.summary
    assert_same_tables(ours, str(tmp_path / "out"))
    auto = attnlab.inspect(path)  # layout="auto": the one layout whose names the checkpoint has
    assert auto.title == ours.title and np.array_equal(auto.heads, ours.heads)
    print(repr(ours))


def test_threads_same_tables(tmp_path):
    tensors, config, meta, *_ = models.build("llama", "F32", seed=12)
    path = st_numpy.write_checkpoint(str(tmp_path / "m"), tensors, config)
    one, two = attnlab.inspect(path, threads=1), attnlab.inspect(path, threads=2)
    for name in TABLES:
        assert np.array_equal(getattr(one, name), getattr(two, name))
    assert one.verdicts() == two.verdicts() and set(one.verdicts()) == {"R2", "R5", "R6", "S1", "S2", "G1"}


def test_hostile_files_are_the_programs_line(tmp_path):
    """Each malformed file of st_format.py (and a FIFO, a layout that fits nothing, options of another layout): a
    ValueError whose message is attnlab_inspect's line for it, less "attnlab_inspect: "."""
    cases = []
    for name, data, _ in st_format.malformed_cases():
        path = str(tmp_path / (name + ".safetensors"))
        with open(path, "wb") as f:
            f.write(data)
        cases.append((name, ["--layout", "bert", path, "--heads", "1"], dict(path=path, layout="bert", heads=1)))
    fifo = str(tmp_path / "fifo.safetensors")
    os.mkfifo(fifo)
    cases.append(("fifo", ["--layout", "bert", fifo, "--heads", "1"], dict(path=fifo, layout="bert", heads=1)))
    gpt2 = st_numpy.write_checkpoint(str(tmp_path / "gpt2"), models.build("gpt2", "F32", 1)[0], None, 1)
    cases += [("wrong layout", ["--layout", "llama", gpt2, "--heads", "4"], dict(path=gpt2, layout="llama", heads=4)),
              ("auto finds nothing", ["--layout", "auto", fifo + "x"], dict(path=fifo + "x")),
              ("custom flag", ["--layout", "gpt2", gpt2, "--q-pattern", "x.{l}"], dict(path=gpt2, layout="gpt2", q_pattern="x.{l}")),
              ("unknown layout", ["--layout", "gpt3", gpt2], dict(path=gpt2, layout="gpt3")),
              ("heads range", ["--layout", "gpt2", gpt2, "--heads", "0"], dict(path=gpt2, layout="gpt2", heads=0)),
              ("heads disagree", ["--layout", "gpt2", gpt2, "--heads", "3"], dict(path=gpt2, layout="gpt2", heads=3)),
              ("precision", ["--layout", "gpt2", gpt2, "--precision", "half"], dict(path=gpt2, layout="gpt2", precision="half"))]
    nan = dict(models.build("bert", "F32", 13)[0])
    q0 = "bert.encoder.layer.0.attention.self.query.weight"
    nan[q0] = ("F32", nan[q0][1].copy())
    nan[q0][1][3, 1] = np.nan
    bad = st_numpy.write_checkpoint(str(tmp_path / "nan"), nan, None, 1)
    cases.append(("non-finite weight", ["--layout", "bert", bad, "--heads", "4"], dict(path=bad, layout="bert", heads=4)))
    f64 = st_numpy.write_checkpoint(str(tmp_path / "f64"), models.build("bert", "F64", 14)[0], None, 1)
    cases.append(("float with F64", ["--layout", "bert", f64, "--heads", "4", "--precision", "float"],
                  dict(path=f64, layout="bert", heads=4, precision="float")))
    for what, args, call in cases:
        r = run("attnlab_inspect", args + ["--out", str(tmp_path / "never"), "--no-figure"])
        assert r.returncode == 2, f"{what}: exit {r.returncode}: {r.stderr}"
        with pytest.raises(ValueError) as raised:
            attnlab.inspect(**call)
        assert str(raised.value) == cli_line(r.stderr, "attnlab_inspect"), what
        assert not os.path.exists(tmp_path / "never")


def stack(tensors, pattern, layers=models.LAYERS):
    return np.stack([tensors[pattern.format(l)][1] for l in range(layers)])


def test_inspect_heads_same_as_a_checkpoint(tmp_path):
    """Weights in memory as nn.Linear stores them (a stack of layers, with biases) give the tables of the checkpoint
    they came from; the x W storage (transpose=True) the same; one layer alone the checkpoint's layer 0."""
    tensors, config, meta, heads, *_ = models.build("bert", "F32", seed=15)
    path = st_numpy.write_checkpoint(str(tmp_path / "m"), tensors, config)
    whole = attnlab.inspect(path, "bert")
    base = "bert.encoder.layer.{}.attention.self."
    wq, wk = stack(tensors, base + "query.weight").astype(np.float32), stack(tensors, base + "key.weight").astype(np.float32)
    bq, bk = stack(tensors, base + "query.bias").astype(np.float32), stack(tensors, base + "key.bias").astype(np.float32)
    ours = attnlab.inspect_heads(wq, wk, heads, bq=bq, bk=bk)
    for name in TABLES:
        assert np.array_equal(getattr(ours, name), getattr(whole, name)), name
    assert ours.verdicts() == whole.verdicts()
    xw = attnlab.inspect_heads(wq.swapaxes(1, 2), wk.swapaxes(1, 2), heads, bq=bq, bk=bk, transpose=True)
    assert np.array_equal(xw.heads, whole.heads)
    one = attnlab.inspect_heads(wq[0], wk[0], heads, bq=bq[0], bk=bk[0])
    assert np.array_equal(one.heads, whole.heads[whole.heads["layer"] == 0])


def custom_checkpoint(tmp_path, arrays, dtype="F32"):
    """arrays {name: array} as one safetensors file, each layer l's tensor named "<name>.l"."""
    t = {}
    for name, a in arrays.items():
        for l in range(a.shape[0]):
            t[f"{name}.{l}"] = (dtype, np.asarray(a[l], np.float64))
    return st_numpy.write_checkpoint(str(tmp_path / "custom"), t, None, 1)


def test_inspect_heads_same_as_the_programs_custom_layout(tmp_path):
    """Grouped-query arrays (8 query heads, 2 key heads) and float16 ones: the tables and lines of attnlab_inspect
    --layout custom on a file of the same arrays."""
    r = rng(30)
    for dtype, st in [(np.float32, "F32"), (np.float16, "F16")]:
        wq = r.normal(0, 0.3, (2, 8 * 4, 24)).astype(dtype)
        wk = r.normal(0, 0.3, (2, 2 * 4, 24)).astype(dtype)
        path = custom_checkpoint(tmp_path, {"Wq": wq, "Wk": wk}, st)
        out = str(tmp_path / f"out-{st}")
        lines = program(["--layout", "custom", path, "--q-pattern", "Wq.{l}", "--k-pattern", "Wk.{l}", "--heads", "8"], out)
        ours = attnlab.inspect_heads(wq, wk, 8, kv_heads=2)
        assert lines[1:1 + len(ours.summary)] == ours.summary
        assert_same_tables(ours, out, ("arrays (", path + " ("))
        assert set(ours.heads["kv_head"]) == {0, 1}


def test_inspect_heads_refusals(tmp_path):
    """A shape that fits the storage asked for in no way is refused, never transposed to fit; heads that do not
    divide the outputs, key heads said wrongly, a non-finite weight (the program's words, without a file name)."""
    r = rng(31)
    wq, wk = r.normal(size=(32, 24)), r.normal(size=(8, 24))  # nn.Linear: 8 query heads of 4, 2 key heads
    ok = attnlab.inspect_heads(wq, wk, 8)
    assert ok.title.startswith("arrays (custom layout: 1 layers x 8 heads sharing 2 key heads, d 24, d_k 4")
    for call, message in [
            (dict(Wq=wq, Wk=wk.T), '"Wk" has shape [24, 8] but "Wq" has [32, 24]: the input widths differ'),
            (dict(Wq=wq.T, Wk=wk.T), '"Wk" has shape [24, 8] but "Wq" has [24, 32]: the input widths differ'),
            (dict(Wq=wq, Wk=wk, transpose=True), '"Wk" has shape [8, 24] but "Wq" has [32, 24]: the input widths differ'),
            (dict(Wq=wq, Wk=wk, heads=5), '"Wq"\'s 32 query outputs do not split into 5 heads (--heads)'),
            (dict(Wq=wq, Wk=wk, kv_heads=4), '4 key heads said (--kv-heads), but "Wk" holds 2 of width 4'),
            (dict(Wq=wq[0], Wk=wk), '"Wq" has shape [24]: a weight is 2-D, or 3-D with the layers first'),
            (dict(Wq=wq[None], Wk=wk), '"Wk" has shape [8, 24] but "Wq" has [1, 32, 24]: both 2-D, or both 3-D with the layers first'),
            (dict(Wq=wq, Wk=wk, bq=np.ones(5)), '"bq" has shape [5], its weight needs [32]'),
            (dict(Wq=wq, Wk=wk, heads=0), "--heads: 0 is not in [1, 1048576]"),
            (dict(Wq=wq.astype(np.int32), Wk=wk), "Wq: unsupported dtype '<i4': only float16 ('<f2'), float32 ('<f4') and float64 ('<f8')"),
            (dict(Wq=wq, Wk=wk, precision="float"), "--precision float: arrays holds F64 weights, which float cannot hold exactly")]:
        args = {"heads": 8, **call}
        with pytest.raises(ValueError) as raised:
            attnlab.inspect_heads(**args)
        assert str(raised.value) == message
    # A non-finite weight: the reader's words, as the program's custom layout on the same array says them.
    bad = wq[None].copy()
    bad[0, 9, 5] = np.inf
    path = custom_checkpoint(tmp_path, {"Wq": bad, "Wk": wk[None]}, "F64")
    r = run("attnlab_inspect", ["--layout", "custom", path, "--q-pattern", "Wq.{l}", "--k-pattern", "Wk.{l}", "--heads", "8",
                                "--out", str(tmp_path / "never"), "--no-figure"])
    with pytest.raises(ValueError) as raised:
        attnlab.inspect_heads(bad, wk[None], 8)
    assert str(raised.value) == 'tensor "Wq[0]" holds a non-finite value (inf) at element 221 (C order)'
    assert cli_line(r.stderr, "attnlab_inspect").endswith('tensor "Wq.0" holds a non-finite value (inf) at element 221 (C order)')


def test_inspect_heads_reads_in_place():
    """Weights are read where they lie, whatever their strides: a sliced or Fortran-ordered array is not copied."""
    r = rng(32)
    wq = r.normal(size=(64, 48))[:, :24]
    wk = np.asfortranarray(r.normal(size=(32, 24)))
    assert attnlab._attnlab._read_in_place(wq) and attnlab._attnlab._read_in_place(wk)
    a = attnlab.inspect_heads(wq, wk, 8)
    b = attnlab.inspect_heads(np.ascontiguousarray(wq), np.ascontiguousarray(wk), 8)
    assert np.array_equal(a.heads, b.heads)
