"""attnlab.methods(): the registry as attend knows it, every parameter with attend's flag, default and range, each range
enforced by attend's own check."""
import re

import numpy as np
import pytest

import attnlab
from support import METHODS, FAST, qkv, rng, run


def test_the_registry_in_its_order():
    m = attnlab.methods()
    assert list(m) == METHODS
    for name, entry in m.items():
        assert entry["summary"] and entry["fast_kernel"] == (name in FAST)
        assert entry["random"] == (name in ("linformer", "random-fourier", "favor"))
    assert m["exact"]["gradients"] == ["reference", "fast"]
    assert m["streaming"]["gradients"] == ["fast"]
    assert m["favor"]["gradients"] == ["reference"]
    assert set(m["nystrom"]["parameters"]) == {"landmarks", "pinv", "pinv_iterations", "pinv_init", "rcond", "impl", "threads"}
    assert set(m["linformer"]["parameters"]) == {"proj", "projection", "share_kv", "impl", "threads", "seed"}


def test_parameters_are_attends_flags():
    """Each parameter's flag is in attend --help with its help text; defaults and ranges as the flag has them."""
    help_text = run("attend", ["--help"]).stdout
    for entry in attnlab.methods().values():
        for key, p in entry["parameters"].items():
            assert p["flag"] == "--" + key.replace("_", "-") and p["flag"] in help_text
            assert p["help"] in " ".join(help_text.split())
    nystrom = attnlab.methods()["nystrom"]["parameters"]
    assert nystrom["landmarks"] == {**nystrom["landmarks"], "type": "int", "default": None, "min": 1, "max": 2**30}
    assert nystrom["pinv"]["default"] == "iterative" and nystrom["pinv"]["choices"] == ["iterative", "svd"]
    assert nystrom["pinv_iterations"]["default"] == 6 and (nystrom["pinv_iterations"]["min"], nystrom["pinv_iterations"]["max"]) == (0, 1000)
    assert nystrom["rcond"]["default"] == -1.0 and nystrom["rcond"]["range"] == "finite"
    fourier = attnlab.methods()["random-fourier"]["parameters"]
    assert fourier["temperature"]["range"] == "> 0, finite" and fourier["seed"]["default"] == 20250311
    assert attnlab.methods()["favor"]["parameters"]["iid"] == {**attnlab.methods()["favor"]["parameters"]["iid"], "type": "bool", "default": False}


def test_each_range_is_enforced():
    """Just past every integer range, and outside every list of choices: refused, naming the flag."""
    q, k, v = qkv(rng(40), (70, 4), np.float64)
    for method, entry in attnlab.methods().items():
        for key, p in entry["parameters"].items():
            bad = []
            if p["min"] is not None:
                bad.append(p["min"] - 1)
            if p["max"] is not None and p["max"] < 2**40:
                bad.append(p["max"] + 1)
            if p["choices"]:
                bad.append("none-of-them")
            for value in bad:
                with pytest.raises(ValueError, match="^" + re.escape(p["flag"] + ": ")):
                    attnlab.attend(q, k, v, method, **{key: value})
