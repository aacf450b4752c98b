#!/usr/bin/python3
"""Test double: `strata generate ...` answered by the reference (for run_golden --self-test).

Accepts `generate` and the strata CLI flags, forwards to tools/reference/reference.py, with
--inject-bug to produce deliberately wrong logits, and --model-override PATH to read another
model than the one named by --model (e.g. a quantized file's unquantized original)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "reference"))
import reference  # noqa: E402

args = sys.argv[1:]
if "generate" in args:
    args.remove("generate")
if "--model-override" in args:
    i = args.index("--model-override")
    override = args[i + 1]
    del args[i:i + 2]
    args[args.index("--model") + 1] = override
sys.argv = [reference.__file__] + args
reference.main()
