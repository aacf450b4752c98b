#!/usr/bin/python3
"""Self-test of the reference's GGUF dequantization (gguf_io.dequantize) against llama.cpp.

For every block-quantized type the reference reads, `llama_run dequant` (tools/llamacpp)
quantizes a deterministic test matrix with ggml_quantize_chunk and writes the quantized
bytes plus llama.cpp's own dequantization of them (ggml's to_float). This script
dequantizes the same bytes with numpy and requires the values to be bit-identical (compared
as uint32 bit patterns, so -0.0 vs 0.0 and NaN payloads would also count).

Exactness is expected, not approximate, so there is no ulp allowance. Every value is
(f16 scale widened to f32) x (small integers) [+/- (f16 min) x (small integer)]. The
products are exact in float32: the f16 significand has 11 bits and the integer factor
has at most 12 significant bits in every type (Q6_K |scale * q| <= 128 * 32 = 2^12,
IQ4_XS 32 * 127, Q5_K 63 * 31, Q4_K 63 * 15, Q3_K 32 * 4, Q2_K 15 * 3, the 32-value types
<= 127), so a product has at most 23 of float32's 24. The only rounding is the final addition of the min (Q4_1, Q5_1, Q2_K,
Q4_K, Q5_K), one correctly rounded float32 operation whether or not a compiler fuses it
into an FMA (the product being exact). Any order of evaluation therefore gives the same
bits, and a mismatch means a layout error, not arithmetic.

  check_dequant.py [--work DIR] [--types q4_0,q6_K,...]
Exit status 0 when every type matches. Runs in about a second.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_io  # noqa: E402

LLAMA_RUN = os.path.join(os.path.dirname(HERE), "llamacpp", "llama_run.sh")
# ggml type names (as `llama_run dequant` takes them) -> ggml type ids.
TYPES = {"q4_0": gguf_io.GGML_Q4_0, "q4_1": gguf_io.GGML_Q4_1, "q5_0": gguf_io.GGML_Q5_0,
         "q5_1": gguf_io.GGML_Q5_1, "q8_0": gguf_io.GGML_Q8_0, "q2_K": gguf_io.GGML_Q2_K,
         "q3_K": gguf_io.GGML_Q3_K, "q4_K": gguf_io.GGML_Q4_K, "q5_K": gguf_io.GGML_Q5_K,
         "q6_K": gguf_io.GGML_Q6_K, "iq4_nl": gguf_io.GGML_IQ4_NL,
         "iq4_xs": gguf_io.GGML_IQ4_XS}
# (rows, cols, seed): 24 rows cover every special row of the generator (zero, tiny,
# all-positive, outliers every 7th); 96 columns give 32-value types a row of 3 blocks.
SHAPES = [(24, 512, 1), (9, 768, 2)]
SHAPES_32 = [(11, 96, 3)]


def read_sqdq(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"SQDQ":
        raise ValueError(f"{path}: magic {data[:4]!r}, expected b'SQDQ'")
    ttype, rows, cols, nbytes = struct.unpack_from("<IQQQ", data, 4)
    head = 4 + 4 + 8 * 3
    want = head + nbytes + 4 * rows * cols
    if len(data) != want:
        raise ValueError(f"{path}: {len(data)} bytes, header implies {want}")
    q = np.frombuffer(data, dtype=np.uint8, count=nbytes, offset=head)
    ref = np.frombuffer(data, dtype="<f4", count=rows * cols, offset=head + nbytes)
    return ttype, rows, cols, q, ref.reshape(rows, cols)


def check(name, ttype, rows, cols, seed, work):
    path = os.path.join(work, f"{name}-{rows}x{cols}-{seed}.bin")
    subprocess.run([LLAMA_RUN, "dequant", name, str(rows), str(cols), str(seed), path],
                   check=True)
    got_type, r, c, q, ref = read_sqdq(path)
    problems = []
    if (got_type, r, c) != (ttype, rows, cols):
        problems.append(f"header says type {got_type} {r}x{c}, asked {ttype} {rows}x{cols}")
        return problems
    if q.size != rows * gguf_io.quant_nbytes(ttype, cols):
        problems.append(f"{q.size} quantized bytes, reference layout needs "
                        f"{rows * gguf_io.quant_nbytes(ttype, cols)}")
        return problems
    mine = gguf_io.dequantize(ttype, q.tobytes(), rows * cols).reshape(rows, cols)
    diff = mine.view(np.uint32) != ref.view(np.uint32)
    if diff.any():
        rr, cc = np.argwhere(diff)[0]
        problems.append(f"{int(diff.sum())} of {diff.size} values differ; first at row {rr} col "
                        f"{cc}: numpy {mine[rr, cc]!r} llama.cpp {ref[rr, cc]!r} (rows with "
                        f"differences: {sorted(set(np.nonzero(diff)[0].tolist()))[:10]})")
    if not np.isfinite(ref).all() or not (ref[0] == 0).all():
        problems.append("llama.cpp's values are not finite, or the zero row is not zero")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", help="directory for the llama_run files (default: a temp dir)")
    ap.add_argument("--types", default=",".join(TYPES))
    a = ap.parse_args()
    names = [t for t in a.types.split(",") if t]
    unknown = [t for t in names if t not in TYPES]
    if unknown:
        ap.error(f"unknown types {unknown}; known: {', '.join(TYPES)}")
    ok = True
    with tempfile.TemporaryDirectory(dir=a.work) as work:
        for name in names:
            ttype = TYPES[name]
            shapes = SHAPES + (SHAPES_32 if gguf_io.QUANT_TYPES[ttype][1] == 32 else [])
            problems = []
            for rows, cols, seed in shapes:
                problems += [f"{rows}x{cols} seed {seed}: {p}"
                             for p in check(name, ttype, rows, cols, seed, work)]
            print(f"{name:7s} {'bit-identical' if not problems else 'MISMATCH'} "
                  f"({', '.join(f'{r}x{c}' for r, c, _ in shapes)})")
            for p in problems:
                print("  " + p)
            ok &= not problems
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
