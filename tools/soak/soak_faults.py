"""FaultInjector: the thread that damages chunk files under the fs tier's root
(flipped bytes, truncation, deletion, removed shard directories) and fills
the quota to ENOSPC now and then. It never touches a path outside the root."""
import os
import random
import shutil
import threading
import time
import traceback

from soak_state import MIB

CHUNK_HEADER_BYTES = 96  # offload/tiers/common/chunk_format.h


class FaultInjector(threading.Thread):
    """Damages chunk files under the fs tier root; fills the quota now and then."""

    KINDS = ("flip_payload", "flip_header", "truncate", "delete", "delete_shard_dir")
    WEIGHTS = (30, 20, 20, 25, 5)

    def __init__(self, soak):
        super().__init__(name="fault-injector", daemon=True)
        self.soak, self.ws, self.stats = soak, soak.ws, soak.stats
        self.rng = random.Random(soak.cfg.seed * 31337)
        self.filler = os.path.join(self.ws.fs_root, ".soak-filler")
        self.fill_bytes_max = 0

    def run(self):
        cfg = self.soak.cfg
        next_fill = time.time() + min(cfg.fill_every, max(5.0, cfg.duration / 4))
        try:
            while not self.soak.stop.wait(self.rng.uniform(*cfg.fault_interval)):
                self.damage_one()
                if time.time() >= next_fill:
                    self.fill_quota()
                    next_fill = time.time() + cfg.fill_every
        except Exception:
            self.stats.fail("fault_injector", "driver_exception", traceback.format_exc())
        finally:
            self._remove_filler()

    def chunk_files(self):
        out = []
        for d, _, files in os.walk(self.ws.fs_root):
            out.extend(os.path.join(d, f) for f in files if f.endswith(".kv"))
        return out

    def damage_one(self):
        files = self.chunk_files()
        if not files:
            return self.stats.fault("skipped_no_chunk_file")
        kind = self.rng.choices(self.KINDS, self.WEIGHTS)[0]
        path = self.rng.choice(files)
        if not self.ws.is_inside_root(path):  # never touch anything else
            raise RuntimeError(f"refusing to damage {path}: outside {self.ws.fs_root}")
        try:
            getattr(self, kind)(path)
            self.stats.fault(kind)
        except FileNotFoundError:
            self.stats.fault("raced_file_gone")

    def _xor_bytes(self, path, lo, hi, n):
        with open(path, "r+b") as f:
            for _ in range(n):
                off = self.rng.randrange(lo, hi)
                f.seek(off)
                b = f.read(1)
                f.seek(off)
                f.write(bytes([b[0] ^ self.rng.randint(1, 255)]))

    def flip_payload(self, path):
        size = os.path.getsize(path)
        if size <= CHUNK_HEADER_BYTES:
            return self.truncate(path)
        self._xor_bytes(path, CHUNK_HEADER_BYTES, size, self.rng.randint(1, 8))

    def flip_header(self, path):
        self._xor_bytes(path, 0, min(CHUNK_HEADER_BYTES, os.path.getsize(path) or 1), 1)

    def truncate(self, path):
        size = os.path.getsize(path)
        os.truncate(path, self.rng.randrange(0, max(size, 1)))

    def delete(self, path):
        os.unlink(path)

    def delete_shard_dir(self, path):
        shard = os.path.dirname(os.path.dirname(path))  # <ns>/<abc>
        if not self.ws.is_inside_root(shard) or os.path.dirname(shard) == self.ws.fs_root:
            return self.delete(path)
        shutil.rmtree(shard)

    def fill_quota(self):
        """Writes a filler file until ENOSPC, holds it, removes it (tmpfs quota only)."""
        if not self.ws.mounted:
            return self.stats.fault("quota_fill_skipped_no_tmpfs")
        written, hit_enospc = 0, False
        block = b"\0" * MIB
        try:
            with open(self.filler, "wb") as f:
                while written < (self.soak.cfg.quota_mib + 1) * MIB:
                    f.write(block)
                    f.flush()
                    written += len(block)
        except OSError as e:
            if e.errno != 28:  # ENOSPC
                raise
            hit_enospc = True
        self.stats.fault("quota_fill_to_enospc" if hit_enospc else "quota_fill_no_enospc")
        self.fill_bytes_max = max(self.fill_bytes_max, written)
        self.soak.stop.wait(self.soak.cfg.fill_hold)
        self._remove_filler()

    def _remove_filler(self):
        try:
            os.unlink(self.filler)
        except FileNotFoundError:
            pass
