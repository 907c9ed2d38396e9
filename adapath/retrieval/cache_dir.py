"""Where a graph's derived caches live (BM25 indexes, node embeddings).

A cache is written to the first writable place of: an explicit directory (``--cache-dir``)
or ``ADAPATH_CACHE_DIR``; the graph's own ``cache/`` folder (the default); the user's cache
(``$XDG_CACHE_HOME/adapath``, else ``~/.cache/adapath``). A cache is read from the first of
those places that has it, so a shared graph made read-only after ``adapath kg embed`` still
serves its store. Outside the graph folder each graph gets its own sub-folder, named after
the graph folder and its checksum, so one cache directory can serve many graphs.

A folder whose permission bits deny writing counts as read-only even to root: whoever made
it so meant it to stay untouched.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from adapath.errors import InputError

ENV = "ADAPATH_CACHE_DIR"
_announced: set[Path] = set()


def user_cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "adapath"


def can_write(directory: Path) -> bool:
    """Whether files can be created in ``directory`` (or, if it does not exist yet, in the
    nearest existing folder above it)."""
    path = Path(directory).absolute()
    while not path.exists():
        if path.parent == path:
            return False
        path = path.parent
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return path.is_dir() and bool(mode & 0o222) and os.access(path, os.W_OK | os.X_OK)


class GraphCache:
    """The cache places of one graph, in search order."""

    def __init__(self, graph_dir: str | Path | None, checksum: str, cache_dir: str | Path | None = None):
        self.graph_dir = Path(graph_dir) if graph_dir is not None else None
        explicit = cache_dir if cache_dir is not None else os.environ.get(ENV) or None
        label = f"{self.graph_dir.name if self.graph_dir else 'graph'}-{checksum[:12]}"
        self.explicit = Path(explicit) / label if explicit is not None else None
        self.places = [p for p in (self.explicit,
                                   self.graph_dir / "cache" if self.graph_dir else None,
                                   user_cache_root() / label if self.graph_dir else None) if p is not None]

    def find(self, name: str, marker: str) -> Path | None:
        """The first ``place/name`` holding ``marker`` (a file written last), or None."""
        for place in self.places:
            if (place / name / marker).is_file():
                return place / name
        return None

    def writable(self, name: str) -> Path | None:
        """Where to create ``name``: the first writable place, or None (keep it in memory).
        An explicit cache directory that cannot be written is a user error."""
        if self.explicit is not None and not can_write(self.explicit):
            raise InputError(f"cache directory {self.explicit.parent} is not writable "
                             f"(--cache-dir / {ENV})")
        for place in self.places:
            if can_write(place):
                if place != self.places[0] and self.graph_dir is not None and place not in _announced:
                    _announced.add(place)
                    print(f"note: {self.graph_dir} is read-only; caching in {place} "
                          f"(set --cache-dir or {ENV} to choose)", file=sys.stderr, flush=True)
                return place / name
        return None
