"""A memory-mapped cache of episode vectors, one per embedding space, kept in step incrementally.

Why: recall at 100,000 episodes cannot read 100,000 BLOBs out of SQLite per query (~0.5 s).
The cache is two flat files under `paths.vectors_dir()`:

- `<key>.<gen>.f32`: float32 rows, one per slot (dim columns), little-endian;
- `<key>.<gen>.seq`: int64 episode seq per slot; -1 marks a dead slot (deleted or replaced);
- `<key>.json`: the manifest {version, space, dim, gen, rows, dead, log_id}.

Readers trust only the first `rows` slots of the files the manifest names. Episodes change
through the `vector_changes` log (a migration's triggers append the seq of every inserted,
deleted or re-embedded episode). `sync()` reads the log past `log_id`: each changed seq's old
slot is marked dead, its current vector (if it is in this space) appended. Too many dead slots
or a pruned log -> a full rebuild into a new generation, swapped in by renaming the manifest.
Writers hold an flock on `<key>.lock`; appends happen before the manifest moves, so a reader
never sees a half-written row. Memory: the files are mapped, not read, so the OS shares and
evicts the pages; a warm process holds only the seq->slot index (16 bytes per episode).
"""

from __future__ import annotations

import json
import os
import threading
import time
from hashlib import sha1
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from remem import paths
from remem.engine.files import locked
from remem.engine.store import Store

VERSION = 1
# Rebuild when this share of the slots is dead, or when one sync would touch more rows.
DEAD_SHARE = 0.25
# Keep at most this many consumed entries in vector_changes before pruning them.
LOG_KEEP = 20_000
_BATCH = 4096


def _key(store: Store, space: str) -> str:
    # surrogateescape: a path's bytes that are not UTF-8 (a REMEM_HOME in another encoding)
    # come back as they were; any other path hashes exactly as before.
    text = f"{Path(store.path).resolve()}\x1f{space}"
    return "episodes-" + sha1(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _log_bounds(store: Store) -> tuple[int | None, int]:
    row = store.one("SELECT min(id) AS lo, max(id) AS hi FROM vector_changes")
    return (row["lo"] if row else None), int((row["hi"] if row else 0) or 0)


class VectorCache:
    """The episode vectors of one space for one store: `scores(q)` -> cosine per live slot."""

    def __init__(self, store: Store, space: str, dim: int, folder: Path | None = None) -> None:
        self.store = store  # the connection of the sync in progress (set by sync)
        self.space = space
        self.dim = int(dim)
        self.folder = Path(folder) if folder else paths.vectors_dir()
        self.key = _key(store, space)
        self.manifest_path = self.folder / f"{self.key}.json"
        self.lock_path = self.folder / f"{self.key}.lock"
        self.manifest: dict[str, Any] | None = None
        self.vectors: np.ndarray = np.zeros((0, self.dim), dtype=np.float32)
        self.seqs: np.ndarray = np.zeros(0, dtype=np.int64)
        self._index: dict[str, np.ndarray] = {}

    # -- files -------------------------------------------------------------------------
    def _files(self, gen: int) -> tuple[Path, Path]:
        return self.folder / f"{self.key}.{gen}.f32", self.folder / f"{self.key}.{gen}.seq"

    def _read_manifest(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.manifest_path.read_text())
        except (OSError, ValueError):
            return None
        if (data.get("version") != VERSION or data.get("space") != self.space
                or int(data.get("dim", -1)) != self.dim):
            return None
        vec, seq = self._files(int(data["gen"]))
        rows = int(data["rows"])
        try:
            if vec.stat().st_size < rows * self.dim * 4 or seq.stat().st_size < rows * 8:
                return None
        except OSError:
            return None
        return data

    def _write_manifest(self, data: dict[str, Any]) -> None:
        tmp = self.manifest_path.with_suffix(f".tmp{os.getpid()}")
        try:
            tmp.write_text(json.dumps(data))
            tmp.replace(self.manifest_path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise

    def _map(self, data: dict[str, Any]) -> None:
        """Map the first `rows` slots of the manifest's generation (copy-free)."""
        rows = int(data["rows"])
        vec, seq = self._files(int(data["gen"]))
        if rows:
            self.vectors = np.memmap(vec, dtype="<f4", mode="r", shape=(rows, self.dim))
            self.seqs = np.memmap(seq, dtype="<i8", mode="r", shape=(rows,))
        else:
            self.vectors = np.zeros((0, self.dim), dtype=np.float32)
            self.seqs = np.zeros(0, dtype=np.int64)
        self.manifest = data
        self._index = {}  # seq -> slot lookup for these arrays, built on first use

    # -- keeping in step ---------------------------------------------------------------
    def sync(self, store: Store | None = None) -> "VectorCache":
        """Bring the cache up to date with the store (cheap when nothing changed)."""
        if store is not None:
            self.store = store
        lo, hi = _log_bounds(self.store)
        if self.manifest is not None and int(self.manifest["log_id"]) == hi:
            return self
        disk = self._read_manifest()
        if disk is not None and int(disk["log_id"]) == hi:
            self._map(disk)
            return self
        try:
            with locked(self.lock_path):
                disk = self._read_manifest()  # another process may have synced meanwhile
                lo, hi = _log_bounds(self.store)
                # Rebuild when the log was pruned past this cache, or went backwards (the
                # database was replaced, e.g. restored from a backup).
                if disk is None or (lo is not None and int(disk["log_id"]) < lo) or int(disk["log_id"]) > hi:
                    self._rebuild(hi)
                elif int(disk["log_id"]) != hi:
                    self._apply(disk, hi)
                else:
                    self._map(disk)
                self._prune()
        except OSError as exc:
            # The cache is derived: a full disk, a read-only home or a quota must not stop a
            # recall. The vectors come from the store, into memory, this time.
            self._in_memory(hi, exc)
        return self

    def _in_memory(self, log_id: int, exc: OSError) -> None:
        """Every vector of this space read from the store into memory (the files could not be
        written); logged once per process."""
        global _told
        if not _told:
            _told = True
            try:
                from remem.log import log

                log("recall", f"the vector cache in {self.folder} cannot be written ({exc}); "
                              "recall reads the vectors from the store instead (slower)")
            except Exception:
                pass
        seqs: list[int] = []
        blobs: list[bytes] = []
        for got_seqs, got_blobs in self._all_vectors():
            seqs.extend(got_seqs)
            blobs.extend(got_blobs)
        self.vectors = (np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(seqs), self.dim)
                        if seqs else np.zeros((0, self.dim), dtype=np.float32))
        self.seqs = np.asarray(seqs, dtype=np.int64)
        # Not a file's manifest: only what tells a later sync that nothing changed since.
        self.manifest = {"version": VERSION, "space": self.space, "dim": self.dim, "gen": -1,
                         "rows": len(seqs), "dead": 0, "log_id": log_id, "in_memory": True}
        self._index = {}

    def _rebuild(self, log_id: int) -> None:
        """Write every vector of this space into a fresh generation, then swap it in."""
        self.folder.mkdir(parents=True, exist_ok=True)
        old = self._read_manifest()
        gen = (int(old["gen"]) + 1) if old else int(time.time() * 1000) % 1_000_000_000
        vec_path, seq_path = self._files(gen)
        rows = 0
        try:
            with open(vec_path, "wb") as vf, open(seq_path, "wb") as sf:
                for seqs, blobs in self._all_vectors():
                    if seqs:
                        vf.write(b"".join(blobs))
                        sf.write(np.asarray(seqs, dtype="<i8").tobytes())
                        rows += len(seqs)
            data = {"version": VERSION, "space": self.space, "dim": self.dim, "gen": gen,
                    "rows": rows, "dead": 0, "log_id": log_id}
            self._write_manifest(data)
        except OSError:
            for partial in (vec_path, seq_path):  # half-written: never left to fill the disk
                try:
                    partial.unlink(missing_ok=True)
                except OSError:
                    pass
            raise
        if old and int(old["gen"]) != gen:
            for stale in self._files(int(old["gen"])):
                stale.unlink(missing_ok=True)  # mapped readers keep their inode
        self._map(data)

    def _all_vectors(self) -> Iterator[tuple[list[int], list[bytes]]]:
        """Every valid vector of this space, in seq order, a batch at a time."""
        last = -1
        while True:
            batch = self.store.rows(
                "SELECT seq, embedding FROM episodes WHERE seq > ? AND space = ? "
                "AND embedding IS NOT NULL ORDER BY seq LIMIT ?",
                (last, self.space, _BATCH),
            )
            if not batch:
                return
            last = batch[-1]["seq"]
            yield self._valid(batch)

    def _valid(self, batch: list[dict[str, Any]]) -> tuple[list[int], list[bytes]]:
        width = self.dim * 4
        seqs, blobs = [], []
        for row in batch:
            blob = row["embedding"]
            if blob is not None and len(blob) == width:
                seqs.append(int(row["seq"]))
                blobs.append(bytes(blob))
        return seqs, blobs

    def _apply(self, disk: dict[str, Any], hi: int) -> None:
        """Apply the log entries past the manifest's log_id: kill old slots, append new rows."""
        changed = [r["seq"] for r in self.store.rows(
            "SELECT DISTINCT seq FROM vector_changes WHERE id > ? AND id <= ?",
            (int(disk["log_id"]), hi))]
        rows, dead = int(disk["rows"]), int(disk["dead"])
        if len(changed) + dead > DEAD_SHARE * max(rows, 1) and len(changed) + dead > 1000:
            self._rebuild(hi)
            return
        vec_path, seq_path = self._files(int(disk["gen"]))
        # Kill the current slots of every changed seq (in place; readers see -1 at worst early).
        if rows and changed:
            seq_map = np.memmap(seq_path, dtype="<i8", mode="r+", shape=(rows,))
            hit = np.nonzero(np.isin(seq_map, np.asarray(changed, dtype=np.int64)))[0]
            if hit.size:
                seq_map[hit] = -1
                seq_map.flush()
                dead += int(hit.size)
            del seq_map
        added = 0
        with open(vec_path, "r+b") as vf, open(seq_path, "r+b") as sf:
            vf.seek(rows * self.dim * 4)
            sf.seek(rows * 8)
            for i in range(0, len(changed), 500):
                chunk = changed[i:i + 500]
                batch = self.store.rows(
                    f"SELECT seq, embedding FROM episodes WHERE seq IN ({','.join('?' * len(chunk))}) "
                    "AND space = ? AND embedding IS NOT NULL ORDER BY seq",
                    (*chunk, self.space),
                )
                seqs, blobs = self._valid(batch)
                if seqs:
                    vf.write(b"".join(blobs))
                    sf.write(np.asarray(seqs, dtype="<i8").tobytes())
                    added += len(seqs)
            vf.truncate()
            sf.truncate()
        data = dict(disk, rows=rows + added, dead=dead, log_id=hi)
        self._write_manifest(data)
        self._map(data)

    def _prune(self) -> None:
        """Drop consumed log entries, keeping the last one (its id tells later readers where
        the log starts, so a cache older than that rebuilds instead of missing changes)."""
        if self.manifest is None:
            return
        upto = int(self.manifest["log_id"])
        lo, _ = _log_bounds(self.store)
        if lo is None or upto - lo < LOG_KEEP:
            return
        with self.store.write() as conn:
            conn.execute("DELETE FROM vector_changes WHERE id < ?", (upto,))

    def snapshot(self) -> "Snapshot":
        return Snapshot(self)


class Snapshot:
    """The cache's arrays as they were when taken: one query reads one consistent view even
    if another thread syncs (remaps) the cache meanwhile."""

    def __init__(self, cache: VectorCache) -> None:
        self.vectors, self.seqs, self._index = cache.vectors, cache.seqs, cache._index
        self.manifest, self.manifest_path = cache.manifest, cache.manifest_path
        self.folder, self.key, self.space, self.dim = cache.folder, cache.key, cache.space, cache.dim

    def __len__(self) -> int:
        return int(self.seqs.shape[0])

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine of `query` (normalised) with every slot; dead slots get -2."""
        if not len(self):
            return np.zeros(0, dtype=np.float32)
        # BLAS's matrix-vector product: 6.7 ms at 100,000 x 256 on one thread, where einsum
        # takes 10.4. remem's processes keep BLAS to one thread (entry.py): recall runs this
        # on a worker thread beside SQLite, and more BLAS threads only contend with it.
        out = self.vectors @ np.asarray(query, dtype=np.float32)
        out[np.asarray(self.seqs) < 0] = -2.0
        return out

    def scores_later(self, query: np.ndarray) -> "PendingScores":
        """`scores` started on a worker thread: the product is memory-bound and releases the
        GIL, so the caller's keyword query in SQLite (which releases it too) runs meanwhile.
        A small cache is scored at once; a thread would cost more than it saves."""
        return PendingScores(self, query, background=len(self) >= BACKGROUND_ROWS)

    def slots_of(self, seqs: np.ndarray | list[int]) -> np.ndarray:
        """The live slot of each seq, -1 where a seq has no vector in this space."""
        index = self._index
        if "order" not in index:
            all_seqs = np.asarray(self.seqs)
            live = np.nonzero(all_seqs >= 0)[0]
            order = live[np.argsort(all_seqs[live], kind="stable")]
            index["sorted"], index["order"] = all_seqs[order], order
        order, ordered = index["order"], index["sorted"]
        want = np.asarray(seqs, dtype=np.int64)
        if not want.size or not ordered.size:
            return np.full(want.shape, -1, dtype=np.int64)
        pos = np.clip(np.searchsorted(ordered, want), 0, ordered.size - 1)
        return np.where(ordered[pos] == want, order[pos], -1)


BACKGROUND_ROWS = 20_000  # below this a product takes under 2 ms


class PendingScores:
    """The cosines of one query, being computed; `result()` waits for them."""

    def __init__(self, snapshot: Snapshot, query: np.ndarray, background: bool) -> None:
        self._out: np.ndarray | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._run, args=(snapshot, query), daemon=True)
            self._thread.start()
        else:
            self._run(snapshot, query)

    def _run(self, snapshot: Snapshot, query: np.ndarray) -> None:
        try:
            self._out = snapshot.scores(query)
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def result(self) -> np.ndarray:
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._out is not None
        return self._out


_caches: dict[tuple[str, str], VectorCache] = {}
_told = False  # the cache could not be written: logged once per process


_caches_lock = threading.Lock()


def cache_for(store: Store, space: str, dim: int) -> Snapshot:
    """A synced view of the cache for a store and space. One cache per process, reused by
    warm callers; syncs are serialised, each on the caller's own connection."""
    key = (str(store.path), space)
    with _caches_lock:
        cache = _caches.get(key)
        if cache is None or cache.dim != dim:
            cache = VectorCache(store, space, dim)
            _caches[key] = cache
        cache.sync(store)
        return cache.snapshot()


def drop_caches() -> None:
    """Forget in-process caches (tests; after a store is replaced wholesale)."""
    _caches.clear()
