"""Any Hugging Face repo's tokenizer, when the operator has network: ``models install --hf REPO``.

``huggingface_hub`` (the ``hf`` extra) downloads the repo's ``tokenizer.json`` and, when the
repo has one, ``tokenizer_config.json`` (its chat template and special tokens). The tokenizer
is published as a registry tokenizer kept byte for byte, and a ``models.json`` entry makes the
repo id (and the name) a model that counts chats with that template. Offline, or without the
package, the command says so and what to do instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tokend.core.counting.registry_models import set_model_entry
from tokend.core.counting.version_template import chat_metadata
from tokend.core.errors import FailedPrecondition, InvalidInput, Unavailable
from tokend.core.install.installer import Installed
from tokend.core.registry import Registry

REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*\Z")


def hub_name(repo_id: str) -> str:
    """A registry name for a repo id: ``Qwen/Qwen3-8B`` -> ``qwen3-8b``."""
    return re.sub(r"[^a-z0-9._-]", "-", repo_id.rsplit("/", 1)[-1].lower())[:64]


def install_from_hub(registry: Registry, root: Path | None, repo_id: str, *,
                     name: str | None = None, revision: str | None = None) -> Installed:
    """Download ``repo_id``'s tokenizer files and publish them (module docstring)."""
    if not REPO_RE.match(repo_id):
        raise InvalidInput(f"{repo_id[:100]!r} is not a Hugging Face repo id (OWNER/NAME)")
    try:
        from huggingface_hub import hf_hub_download  # noqa: PLC0415 - the optional extra
    except ImportError:
        raise FailedPrecondition("installing from the Hugging Face Hub needs huggingface_hub: "
                                 "pip install 'tokend[hf]'") from None
    files: dict[str, bytes] = {}
    for file_name, required in (("tokenizer.json", True), ("tokenizer_config.json", False)):
        try:
            path = hf_hub_download(repo_id, file_name, revision=revision)
        except Exception as exc:  # the hub raises many kinds; all mean "not here"
            if not required and type(exc).__name__ == "EntryNotFoundError":
                continue
            raise Unavailable(
                f"cannot fetch {file_name} of {repo_id} from the Hugging Face Hub "
                f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); with no network, "
                "install a bundle (`tokend models install --all` with --wheels DIR) or copy the "
                "files and use `tokend registry import`"
            ) from None
        files[file_name] = Path(path).read_bytes()
    chat = None
    if "tokenizer_config.json" in files:
        config: Any = json.loads(files["tokenizer_config.json"])
        if isinstance(config, dict) and config.get("chat_template"):
            chat = chat_metadata(config, source=f"{repo_id}:tokenizer_config.json",
                                 where=f"{repo_id}/tokenizer_config.json")
    target = name or hub_name(repo_id)
    source = {"hub": repo_id, "revision": revision}
    info = registry.publish_file(target, fmt="hf-json", data=files["tokenizer.json"],
                                 training={"imported_from": source}, chat=chat)
    if root is not None:
        set_model_entry(root, target, {"tokenizer": target, "vendor": "huggingface",
                                       "aliases": [repo_id.lower()]})
    return Installed(target, info.ref, True, source)
