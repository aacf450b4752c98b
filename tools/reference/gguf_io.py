"""Minimal GGUF reader (v2/v3) for the reference: metadata plus F32/F16/BF16/Q8_0
tensors, dequantized exactly as ggml does (Q8_0: x = f16 scale * int8)."""
import struct

import numpy as np
import torch

GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30
TYPE_NAMES = {GGML_F32: "F32", GGML_F16: "F16", GGML_Q8_0: "Q8_0", GGML_BF16: "BF16"}
QK8_0 = 32

_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}


class _Cursor:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def unpack(self, fmt):
        v = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.unpack("<Q")
        s = bytes(self.buf[self.pos:self.pos + n]).decode("utf-8", errors="replace")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            item_type = self.unpack("<I")
            n = self.unpack("<Q")
            if item_type in _SCALAR and item_type != 7:
                fmt = _SCALAR[item_type]
                arr = np.frombuffer(self.buf, dtype=np.dtype(fmt), count=n, offset=self.pos)
                self.pos += n * struct.calcsize(fmt)
                return arr.tolist()
            return [self.value(item_type) for _ in range(n)]
        return self.unpack(_SCALAR[vtype])


def read_gguf(path, load_tensors=True):
    """Return (metadata dict, tensors dict name -> float32 torch tensor, types dict).

    Tensor shapes are returned in PyTorch order (GGUF stores ne0 = innermost first)."""
    with open(path, "rb") as f:
        buf = memoryview(f.read())
    c = _Cursor(buf)
    magic = bytes(buf[:4])
    if magic != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file (magic {magic!r})")
    c.pos = 4
    version = c.unpack("<I")
    if version not in (2, 3):
        raise ValueError(f"{path}: GGUF version {version} not supported")
    n_tensors = c.unpack("<Q")
    n_kv = c.unpack("<Q")
    meta = {}
    for _ in range(n_kv):
        key = c.string()
        meta[key] = c.value(c.unpack("<I"))
    infos = []
    for _ in range(n_tensors):
        name = c.string()
        n_dims = c.unpack("<I")
        ne = [c.unpack("<Q") for _ in range(n_dims)]
        ttype = c.unpack("<I")
        offset = c.unpack("<Q")
        infos.append((name, ne, ttype, offset))
    align = int(meta.get("general.alignment", 32))
    data_start = (c.pos + align - 1) // align * align
    tensors, types = {}, {}
    for name, ne, ttype, offset in infos:
        types[name] = TYPE_NAMES.get(ttype, str(ttype))
        if not load_tensors:
            continue
        n = int(np.prod(ne))
        shape = list(reversed(ne))
        start = data_start + offset
        if ttype == GGML_F32:
            arr = np.frombuffer(buf, dtype="<f4", count=n, offset=start).astype(np.float32)
            t = torch.from_numpy(arr)
        elif ttype == GGML_F16:
            arr = np.frombuffer(buf, dtype="<f2", count=n, offset=start).astype(np.float32)
            t = torch.from_numpy(arr)
        elif ttype == GGML_BF16:
            raw = np.frombuffer(buf, dtype="<u2", count=n, offset=start).astype(np.uint32)
            t = torch.from_numpy((raw << 16).view(np.float32).copy())
        elif ttype == GGML_Q8_0:
            assert ne[0] % QK8_0 == 0, (name, ne)
            nb = n // QK8_0
            blk = np.frombuffer(buf, dtype=np.uint8, count=nb * 34, offset=start).reshape(nb, 34)
            d = blk[:, :2].copy().view("<f2").astype(np.float32)  # [nb, 1]
            q = blk[:, 2:].copy().view(np.int8).astype(np.float32)  # [nb, 32]
            t = torch.from_numpy((d * q).reshape(-1))
        else:
            raise ValueError(f"{path}: tensor {name} has unsupported ggml type {ttype}")
        tensors[name] = t.reshape(shape)
    return meta, tensors, types
