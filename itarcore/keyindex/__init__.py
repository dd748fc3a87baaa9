"""Key index: the rows of a TARIDX index by (keyhash, crashid), for stem lookups in microseconds.

API::

    from itarcore.keyindex import KeyIndex, build_key_index

    ki = KeyIndex.open_cached(ds.index)          # cached and fresh for this index file, else None (~50 us)
    ki = build_key_index(ds.index, progress=..., cancel=...)   # a job: chunked, bounded memory, atomic
    rows = ki.lookup(keyhash, crashid)           # int64 rows, ascending: the same answer as a scan
    ki.kind                                      # "sorted" (built) or "in_order" (the index itself is searched)

    # through a Dataset (what the CLI and the GUI use):
    ds.key_index_state      # "none" (lookups scan), "building" (they scan until it is ready), "ready"
    ds.open_key_index()     # attach the cached key index if there is one; returns it or None
    ds.build_key_index(progress=, cancel=)       # build, cache and attach (run it in a worker)
    ds.lookup_stem(stem)    # through the key index when attached, else a scan
    ds.rows_of_sample(row)  # every row of the sample holding ``row`` (same routes)

The cache lives in ``cache_root()/keys`` (``cache_dir=`` argument, else ``$ITARCORE_CACHE_DIR``,
else the user's cache folder ``.../itar-browser``), one file per index path. A key file
records the identity of the index it was built from (real path, size, mtime_ns, inode and
a fingerprint of header, tables and first/last rows); when the index has changed, the
key file is stale and never used (the next build replaces it). Files are written
atomically, versioned, and safe to delete at any time.

An index whose rows are already in key order (``itarcore index --contiguous`` writes them
so) gets a tiny "in order" file once the build has checked that: lookups then
binary-search the index's own keyhash column, with nothing sorted or stored.
"""
from __future__ import annotations

from .build import SORT_CHUNK_ROWS, build_key_index, stable_argsort_u64
from .store import CACHE_ENV, IndexIdentity, KeyIndex, cache_root, key_file_path

__all__ = ["CACHE_ENV", "SORT_CHUNK_ROWS", "IndexIdentity", "KeyIndex", "build_key_index", "cache_root",
           "key_file_path", "stable_argsort_u64"]
