"""Provider spellings of a model name, reduced to the names the catalogue lists.

The same model reaches tokend under many names: a Hugging Face repo id
(``meta-llama/Llama-3.1-8B-Instruct``), a router's ``provider/model``
(``anthropic/claude-sonnet-4-5``, ``models/gemini-2.5-pro``), Bedrock's
``us.anthropic.claude-sonnet-4-5-20250929-v1:0``, Vertex AI's ``claude-sonnet-4-5@20250929``,
Ollama's ``qwen3:32b``. :func:`candidates` lists the spellings to look up, most specific first;
the catalogue tries each against its names and aliases (case-insensitively), then by prefix.

>>> candidates("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'claude-sonnet-4-5-20250929']
>>> candidates("meta-llama/Llama-3.1-8B-Instruct")
['meta-llama/llama-3.1-8b-instruct', 'llama-3.1-8b-instruct']
"""

from __future__ import annotations

import re

# Bedrock: an optional cross-region prefix, the vendor, the model, a version suffix.
_BEDROCK = re.compile(
    r"^(?:(?:us|eu|apac|us-gov|global)\.)?"
    r"(?:anthropic|meta|mistral|deepseek|qwen|amazon|cohere|ai21)\.(?P<model>.+?)"
    r"(?:-v\d+(?::\d+)?)?(?::\d+)?$"
)
# Vertex AI's dated Claude ids: claude-sonnet-4-5@20250929.
_VERTEX = re.compile(r"^(?P<model>claude-[a-z0-9.-]+)@(?P<date>\d{8})$")


def candidates(model: str) -> list[str]:
    """Spellings of ``model`` to look up, lowercased, most specific first (no duplicates)."""
    name = model.strip().lower()
    out = [name]
    tail = name.rsplit("/", 1)[-1]  # provider/model, org/repo, @cf/meta/..., accounts/.../x
    out.append(tail)
    match = _BEDROCK.match(tail)
    if match:
        out.append(match["model"])
    match = _VERTEX.match(tail)
    if match:
        out.append(f"{match['model']}-{match['date']}")
    if ":" in tail:
        out.append(tail.replace(":", "-"))  # Ollama's qwen3:32b, llama3.1:8b
    return list(dict.fromkeys(out))
