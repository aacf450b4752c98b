"""Minimal safetensors reader/writer (no python3-safetensors in Debian).

Format: u64 little-endian header length, a JSON header (padded with spaces to a
multiple of 8 bytes) mapping tensor name -> {dtype, shape, data_offsets}, then
the raw little-endian tensor bytes, packed without gaps in header order.
We write tensors sorted by name, as the reference implementation does.
"""
import json
import os
import struct

import numpy as np
import torch

# safetensors dtype name -> (bytes per element, torch dtype)
DTYPES = {
    "F32": (4, torch.float32),
    "F16": (2, torch.float16),
    "BF16": (2, torch.bfloat16),
    "F64": (8, torch.float64),
    "I64": (8, torch.int64),
    "I32": (4, torch.int32),
}
TORCH_TO_NAME = {v[1]: k for k, v in DTYPES.items()}


def tensor_bytes(t):
    """Little-endian bytes of a contiguous CPU tensor (bf16 goes through int16)."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors, metadata=None):
    """Write tensors to path.

    tensors: dict name -> (dtype_name, shape, producer) where producer() returns
    a torch tensor of that dtype and shape. Producers are called one at a time in
    file order so large checkpoints never hold more than one tensor in memory.
    """
    names = sorted(tensors)
    header = {"__metadata__": metadata or {"format": "pt"}}
    offset = 0
    for name in names:
        dtype, shape, _ = tensors[name]
        nbytes = DTYPES[dtype][0]
        for d in shape:
            nbytes *= d
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * ((8 - len(blob) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for name in names:
            dtype, shape, producer = tensors[name]
            t = producer()
            assert t.dtype == DTYPES[dtype][1], (name, t.dtype, dtype)
            assert list(t.shape) == list(shape), (name, t.shape, shape)
            f.write(tensor_bytes(t))
    os.replace(tmp, path)
    return offset


def read_safetensors(path):
    """Return dict name -> torch tensor (in the stored dtype)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        size, tdtype = DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        raw = np.frombuffer(data, dtype=np.uint8, count=end - begin, offset=begin)
        if tdtype == torch.bfloat16:
            t = torch.from_numpy(raw.view(np.int16).copy()).view(torch.bfloat16)
        else:
            npdt = {torch.float32: np.float32, torch.float16: np.float16,
                    torch.float64: np.float64, torch.int64: np.int64,
                    torch.int32: np.int32}[tdtype]
            t = torch.from_numpy(raw.view(npdt).copy())
        out[name] = t.reshape(info["shape"])
    return out


def read_model_dir(model_dir):
    """Read model.safetensors or a sharded checkpoint (model.safetensors.index.json)."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        out = {}
        for shard in sorted(set(weight_map.values())):
            part = read_safetensors(os.path.join(model_dir, shard))
            for k, v in part.items():
                assert weight_map.get(k) == shard, (k, shard)
                out[k] = v
        missing = set(weight_map) - set(out)
        assert not missing, f"index lists tensors not in shards: {sorted(missing)[:5]}"
        return out
    return read_safetensors(os.path.join(model_dir, "model.safetensors"))
