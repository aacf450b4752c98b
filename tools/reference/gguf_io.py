"""Minimal GGUF reader (v2/v3) for the reference: metadata plus tensors, dequantized exactly
as ggml does.

Tensor types: F32, F16, BF16 and the block-quantized types Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 (32 values
per block), Q2_K Q3_K Q4_K Q5_K Q6_K (256-value super-blocks), IQ4_NL (32) and IQ4_XS (256).
The dequantizers are vectorised numpy written from ggml's block layouts (ggml-common.h) and
the semantics of its dequantize_row_* functions; every product and sum is done in float32 in
the order ggml's C does it, so the values are bit-identical to llama.cpp's
(tools/reference/check_dequant.py proves it against the prebuilt library)."""
import mmap
import struct

import numpy as np
import torch

GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30
GGML_Q4_0, GGML_Q4_1, GGML_Q5_0, GGML_Q5_1 = 2, 3, 6, 7
GGML_Q2_K, GGML_Q3_K, GGML_Q4_K, GGML_Q5_K, GGML_Q6_K = 10, 11, 12, 13, 14
GGML_IQ4_NL, GGML_IQ4_XS = 20, 23
QK8_0 = 32
QK_K = 256

# The 16 non-linear levels of IQ4_NL / IQ4_XS (ggml's kvalues_iq4nl).
IQ4_LEVELS = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113],
                      dtype=np.float32)

F32 = np.float32


def _f16(blk, off):
    """The little-endian f16 at byte `off` of every block, as float32 [nb, 1] (exact)."""
    return blk[:, off:off + 2].copy().view("<f2").astype(F32)


def _nibbles(qs):
    """[nb, 16] bytes -> [nb, 32] values: low nibbles are elements 0..15, high 16..31."""
    return np.concatenate((qs & 0x0F, qs >> 4), axis=1)


def _q4_0(blk):  # d f16, qs[16]: x = (nibble - 8) * d
    q = _nibbles(blk[:, 2:18]).astype(F32) - F32(8)
    return q * _f16(blk, 0)


def _q4_1(blk):  # d f16, m f16, qs[16]: x = nibble * d + m
    return _nibbles(blk[:, 4:20]).astype(F32) * _f16(blk, 0) + _f16(blk, 2)


def _q5_high(qh_bytes):
    """qh[4] (little-endian uint32): bit i is the fifth bit of element i -> [nb, 32] of 0/16."""
    qh = qh_bytes.copy().view("<u4")  # [nb, 1]
    return ((qh >> np.arange(32, dtype=np.uint32)) & 1).astype(np.uint8) << 4


def _q5_0(blk):  # d f16, qh[4], qs[16]: x = (5-bit value - 16) * d
    q = (_nibbles(blk[:, 6:22]) | _q5_high(blk[:, 2:6])).astype(F32) - F32(16)
    return q * _f16(blk, 0)


def _q5_1(blk):  # d f16, m f16, qh[4], qs[16]: x = 5-bit value * d + m
    q = (_nibbles(blk[:, 8:24]) | _q5_high(blk[:, 4:8])).astype(F32)
    return q * _f16(blk, 0) + _f16(blk, 2)


def _q8_0(blk):  # d f16, qs[32] int8: x = q * d
    return blk[:, 2:34].copy().view(np.int8).astype(F32) * _f16(blk, 0)


def _two_bit_planes(qs):
    """Q2_K / Q3_K low bits. qs [nb, 64] -> [nb, 256] 2-bit values in element order: element
    128h + 32j + 16s + l comes from bits 2j..2j+1 of qs[32h + 16s + l]."""
    q = qs.reshape(-1, 2, 1, 2, 16)  # [nb, h, (j), s, l]
    shifts = (2 * np.arange(4, dtype=np.uint8)).reshape(1, 1, 4, 1, 1)
    return ((q >> shifts) & 3).reshape(-1, QK_K)


def _q2_k(blk):  # scales[16], qs[64], d f16, dmin f16: x = d*(sc&15)*q - dmin*(sc>>4)
    sc = blk[:, 0:16]
    dl = _f16(blk, 80) * (sc & 0x0F).astype(F32)  # [nb, 16], one per 16 elements
    ml = _f16(blk, 82) * (sc >> 4).astype(F32)
    q = _two_bit_planes(blk[:, 16:80]).astype(F32).reshape(-1, 16, 16)
    return (dl[:, :, None] * q - ml[:, :, None]).reshape(-1, QK_K)


def _q3_k_scales(raw):
    """The 16 6-bit scales packed in 12 bytes, as signed ints (minus 32). Scale k's low four
    bits are the low nibble of byte k (k < 8) or the high nibble of byte k-8; its top two bits
    are bits 2(k//4)..2(k//4)+1 of byte 8 + k%4."""
    k = np.arange(16)
    low = np.where(k < 8, raw[:, k % 8] & 0x0F, raw[:, k % 8] >> 4)
    high = (raw[:, 8 + k % 4] >> (2 * (k // 4)).astype(np.uint8)) & 3
    return (low | (high << 4)).astype(np.int32) - 32


def _q3_k(blk):  # hmask[32], qs[64], scales[12], d f16: x = d*(sc-32) * (q2 - (hbit ? 0 : 4))
    dl = _f16(blk, 108) * _q3_k_scales(blk[:, 96:108]).astype(F32)  # [nb, 16]
    q = _two_bit_planes(blk[:, 32:96]).astype(np.int32)
    # The high bit of element 128h + 32j + 16s + l is bit 4h + j of hmask[16s + l].
    hm = blk[:, 0:32].reshape(-1, 1, 1, 2, 16)
    bit = (np.arange(8, dtype=np.uint8)).reshape(1, 2, 4, 1, 1)
    hbit = ((hm >> bit) & 1).reshape(-1, QK_K)
    q = (q - np.where(hbit != 0, 0, 4)).astype(F32).reshape(-1, 16, 16)
    return (dl[:, :, None] * q).reshape(-1, QK_K)


def _k4_scales_mins(raw):
    """Q4_K / Q5_K: 8 pairs of 6-bit (scale, min) packed in 12 bytes (ggml's
    get_scale_min_k4). j < 4: bytes j and j+4, low six bits; j >= 4: the nibbles of byte
    j+4 plus the top two bits of bytes j-4 (scale) and j (min)."""
    j = np.arange(4)
    sc = np.concatenate((raw[:, j] & 63, (raw[:, j + 8] & 0x0F) | ((raw[:, j] >> 6) << 4)), 1)
    mn = np.concatenate((raw[:, j + 4] & 63, (raw[:, j + 8] >> 4) | ((raw[:, j + 4] >> 6) << 4)),
                        1)
    return sc.astype(F32), mn.astype(F32)


def _k4_nibbles(qs):
    """qs [nb, 128] -> [nb, 256]: 64-element chunk c holds the low nibbles of qs[32c:32c+32]
    then their high nibbles (sub-blocks 2c and 2c+1)."""
    q = qs.reshape(-1, 4, 1, 32)
    return ((q >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)) & 0x0F).reshape(-1, QK_K)


def _q4_k(blk):  # d, dmin f16, scales[12], qs[128]: x = d*sc*q - dmin*m per 32 elements
    sc, mn = _k4_scales_mins(blk[:, 4:16])
    d1 = _f16(blk, 0) * sc  # [nb, 8]
    m1 = _f16(blk, 2) * mn
    q = _k4_nibbles(blk[:, 16:144]).astype(F32).reshape(-1, 8, 32)
    return (d1[:, :, None] * q - m1[:, :, None]).reshape(-1, QK_K)


def _q5_k(blk):  # d, dmin f16, scales[12], qh[32], qs[128]; fifth bit of sub-block b, lane l
    sc, mn = _k4_scales_mins(blk[:, 4:16])  # is bit b of qh[l]
    d1 = _f16(blk, 0) * sc
    m1 = _f16(blk, 2) * mn
    low = _k4_nibbles(blk[:, 48:176]).reshape(-1, 8, 32)
    qh = blk[:, 16:48].reshape(-1, 1, 32)
    high = ((qh >> np.arange(8, dtype=np.uint8).reshape(1, 8, 1)) & 1) << 4
    q = (low | high).astype(F32)
    return (d1[:, :, None] * q - m1[:, :, None]).reshape(-1, QK_K)


def _q6_k(blk):  # ql[128], qh[64], scales[16] int8, d f16: x = d * sc * (6-bit value - 32)
    ql = blk[:, 0:128].reshape(-1, 2, 1, 2, 32)  # [nb, half, (nibble), which 32, l]
    qh = blk[:, 128:192].reshape(-1, 2, 1, 32)  # [nb, half, (quarter), l]
    # Element 128n + 32k + l: nibble k//2 of ql[64n + 32(k%2) + l], bits 2k..2k+1 of qh[32n + l].
    low = (ql >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1, 1)) & 0x0F
    low = low.reshape(-1, 2, 4, 32)
    high = (qh >> (2 * np.arange(4, dtype=np.uint8)).reshape(1, 1, 4, 1)) & 3
    q = ((low | (high << 4)).astype(F32) - F32(32)).reshape(-1, 16, 16)
    sc = blk[:, 192:208].copy().view(np.int8).astype(F32)
    ds = _f16(blk, 208) * sc  # ggml computes (d * sc) * q
    return (ds[:, :, None] * q).reshape(-1, QK_K)


def _iq4_nl(blk):  # d f16, qs[16]: x = d * level[nibble]
    return _f16(blk, 0) * IQ4_LEVELS[_nibbles(blk[:, 2:18])]


def _iq4_xs(blk):  # d f16, scales_h u16, scales_l[4], qs[128]: x = d*(ls-32) * level[nibble]
    ib = np.arange(8)
    sh = blk[:, 2:4].copy().view("<u2").astype(np.int32)  # [nb, 1]
    ls = ((blk[:, 4 + ib // 2] >> (4 * (ib % 2)).astype(np.uint8)) & 0x0F).astype(np.int32) | \
        (((sh >> (2 * ib)) & 3) << 4)
    dl = _f16(blk, 0) * (ls - 32).astype(F32)  # [nb, 8]
    qs = blk[:, 8:136].reshape(-1, 8, 16)
    lv = IQ4_LEVELS[np.concatenate((qs & 0x0F, qs >> 4), axis=2)]  # [nb, 8, 32]
    return (dl[:, :, None] * lv).reshape(-1, QK_K)


# ggml type id -> (name, values per block, bytes per block, dequantizer of [nb, bytes] uint8).
QUANT_TYPES = {
    GGML_Q4_0: ("Q4_0", 32, 18, _q4_0),
    GGML_Q4_1: ("Q4_1", 32, 20, _q4_1),
    GGML_Q5_0: ("Q5_0", 32, 22, _q5_0),
    GGML_Q5_1: ("Q5_1", 32, 24, _q5_1),
    GGML_Q8_0: ("Q8_0", 32, 34, _q8_0),
    GGML_Q2_K: ("Q2_K", QK_K, 84, _q2_k),
    GGML_Q3_K: ("Q3_K", QK_K, 110, _q3_k),
    GGML_Q4_K: ("Q4_K", QK_K, 144, _q4_k),
    GGML_Q5_K: ("Q5_K", QK_K, 176, _q5_k),
    GGML_Q6_K: ("Q6_K", QK_K, 210, _q6_k),
    GGML_IQ4_NL: ("IQ4_NL", 32, 18, _iq4_nl),
    GGML_IQ4_XS: ("IQ4_XS", QK_K, 136, _iq4_xs),
}
TYPE_NAMES = {GGML_F32: "F32", GGML_F16: "F16", GGML_BF16: "BF16",
              **{t: v[0] for t, v in QUANT_TYPES.items()}}


def quant_nbytes(ttype, n):
    """Bytes of n values of a block-quantized type (n a multiple of its block size)."""
    _, qk, size, _ = QUANT_TYPES[ttype]
    assert n % qk == 0, (TYPE_NAMES[ttype], n)
    return n // qk * size


def dequantize(ttype, buf, n, offset=0):
    """float32 numpy array of the n values of type `ttype` stored at buf[offset:]."""
    name, qk, size, fn = QUANT_TYPES[ttype]
    if n % qk:
        raise ValueError(f"{name}: {n} values is not a multiple of the block size {qk}")
    nb = n // qk
    blk = np.frombuffer(buf, dtype=np.uint8, count=nb * size, offset=offset).reshape(nb, size)
    out = fn(blk)
    assert out.dtype == F32 and out.shape == (nb, qk), (name, out.dtype, out.shape)
    return out.reshape(-1)

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


def read_header(buf, path="GGUF"):
    """(metadata dict, [(name, ne, ggml type, offset)], data start) of a GGUF buffer."""
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
    return meta, infos, (c.pos + align - 1) // align * align


def read_infos(path):
    """(metadata, [(name, ne, ggml type, offset)]) without reading the tensor data."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        view = memoryview(mm)
        try:
            meta, infos, _ = read_header(view, path)
        finally:
            view.release()
    return meta, infos


def tensor_shapes(path):
    """{name: shape in PyTorch order} without reading the tensor data."""
    return {name: list(reversed(ne)) for name, ne, _, _ in read_infos(path)[1]}


def read_gguf(path, load_tensors=True):
    """Return (metadata dict, tensors dict name -> float32 torch tensor, types dict).

    Tensor shapes are returned in PyTorch order (GGUF stores ne0 = innermost first)."""
    with open(path, "rb") as f:
        buf = memoryview(f.read())
    meta, infos, data_start = read_header(buf, path)
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
        elif ttype in QUANT_TYPES:
            if ne[0] % QUANT_TYPES[ttype][1]:
                raise ValueError(f"{path}: {name} has rows of {ne[0]} values, not a multiple of "
                                 f"{TYPE_NAMES[ttype]}'s block size")
            t = torch.from_numpy(dequantize(ttype, buf, n, start))
        else:
            raise ValueError(f"{path}: tensor {name} has unsupported ggml type {ttype}")
        tensors[name] = t.reshape(shape)
    return meta, tensors, types
