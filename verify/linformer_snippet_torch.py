# Runs the LinformerAttention snippet of seed 003_cab8b9be341236c2.txt (the Linformer explainer)
# under PyTorch and prints what happens, for verify/test_linformer_snippet_torch.cpp to compare with the C++ trace.
# The snippet is read from the seed file at run time, not copied here; its __main__ block is not run.
# usage: python3 linformer_snippet_torch.py PATH/TO/003_cab8b9be341236c2.txt
import re
import sys

import torch

text = open(sys.argv[1], encoding="utf-8").read()
code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
namespace = {"__name__": "seed_003_snippet"}
exec(code, namespace)
LinformerAttention = namespace["LinformerAttention"]

torch.manual_seed(0)
for label, seq_len in (("documented", 4096), ("seq_len=dim_head", 64)):
    module = LinformerAttention(dim=512, heads=8, k=256)  # the usage example's arguments
    x = torch.randn(4, seq_len, 512)
    try:
        with torch.no_grad():
            y = module(x)
        print(f"{label}: output ({', '.join(str(s) for s in y.shape)})")
    except RuntimeError as e:
        print(f"{label}: RuntimeError {e}")
