"""Write entries into a registry's ``models.json`` (the catalogue's extension file) safely.

``set_model_entry(root, name, entry)`` reads the file (or starts an empty one), replaces one
entry, checks the whole document parses as the catalogue would read it, and writes it
temp-then-rename under an exclusive lock, so a server polling the file sees the old or the new
document, never half of one, and two writers never lose each other's entries.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tokend.core.counting.catalogue import FILE_NAME, FORMAT, parse_models
from tokend.core.errors import CorruptData


def read_models_file(root: Path) -> dict[str, Any]:
    """The registry's models document (an empty one if there is no file)."""
    path = Path(root) / FILE_NAME
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"format": FORMAT, "version": 1, "models": {}}
    except ValueError as exc:
        raise CorruptData(f"{path}: not JSON ({exc}); fix or remove it first") from None
    parse_models(doc, str(path), Path(root))  # refuse to build on a broken file
    return dict(doc)


def set_model_entry(root: Path, name: str, entry: Mapping[str, Any]) -> Path:
    """Replace (or add) the entry ``name`` in ``<root>/models.json``; the file's path."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    path = root / FILE_NAME
    with open(root / f".{FILE_NAME}.lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        doc = read_models_file(root)
        models = dict(doc.get("models") or {})
        models[name] = dict(entry)
        doc["models"] = models
        parse_models(doc, str(path), root)  # the new entry must be one the catalogue reads
        staged = root / f".{FILE_NAME}.{os.getpid()}.tmp"
        with staged.open("w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(staged, path)
    return path
