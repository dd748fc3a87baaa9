"""Process limits a fold can outgrow: open files.

A fold's shard tables and shards are mapped while it is indexed or browsed, and every
mapping keeps a file descriptor: a fold of 1,000+ shards passes the soft limit most
desktops set (1,024) long before the hard one. The CLI and the browser lift the soft
limit to the hard one at start, as build tools and databases do.
"""
from __future__ import annotations

MACOS_OPEN_MAX = 10_240  # macOS refuses a soft limit above OPEN_MAX even when the hard one is unlimited


def raise_open_file_limit() -> int | None:
    """Lift the soft limit on open files as far as the hard limit allows; the new soft limit, or None off POSIX."""
    try:
        import resource
    except ImportError:  # Windows: no such per-process soft limit
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or (hard != resource.RLIM_INFINITY and soft >= hard):
        return soft
    for target in (hard, MACOS_OPEN_MAX):
        if target != resource.RLIM_INFINITY and target <= soft:
            continue
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            return target
        except (ValueError, OSError):
            continue
    return soft
