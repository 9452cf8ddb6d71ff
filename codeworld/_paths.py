"""Where codeworld finds its shipped data and keeps what it generates.

Shipped data (the committed CWMB buffers, descriptions and the paper's buffers) lives inside the
package, under ``codeworld/data/``, and is found through `importlib.resources`: the same from a
source checkout, an editable install and an installed wheel. Nothing is read from beside the
package. Anything codeworld generates at run time (collected buffers, cached planner results,
LLM completions, the joined model files) goes to the user cache directory instead, since an
installed package's folder need not be writable.
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path


def data_dir(*parts: str) -> Path:
    """A folder (or file) of the package's shipped data, e.g. ``data_dir("buffers")``."""
    root = resources.files("codeworld").joinpath("data", *parts)
    # codeworld is always installed as files on disk (never zipped), so this is a real path.
    return Path(str(root))


def cache_root() -> Path:
    """The user cache directory of codeworld: ``$CODEWORLD_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/codeworld``, else ``~/.cache/codeworld``."""
    explicit = os.environ.get("CODEWORLD_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "codeworld"


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file, read in blocks (the model files are over 1 GB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()
