"""The JSON API's bodies: checked request fields -> the app's typed requests, and typed
results -> the JSON answers (every field of the matching proto response, by its proto name,
defaults included so the shape is fixed; bytes as hex).
"""

from __future__ import annotations

from typing import Any

from tokend.core.lint import token_dict
from tokend.core.lint.diff import DIFF_FORMAT
from tokend.server.app.catalog import TokenizerManifest, TokenizerSummary
from tokend.server.app.counting import Counted, CountRequest
from tokend.server.app.encoding import Decoded, DecodeRequest, Encoded, EncodeRequest
from tokend.server.app.linting import Diffed, DiffRequest, DiffToken, Linted, LintRequest
from tokend.server.app.messages import ChatMessage, ContentPart, ImagePart, ToolCall
from tokend.server.app.quoting import QuoteRequest
from tokend.server.app.specials import NO_POLICY, SpecialPolicy
from tokend.server.web import schema
from tokend.server.web.convert import checked, invalid

_DEPTHS = {0: "", 1: "import", 2: "full"}  # LintDepth's numbers (the proto's enum)

# -- requests ---------------------------------------------------------------------------------


def encode_request(body: dict[str, Any]) -> EncodeRequest:
    """/tokenize's body (``include_details`` defaults to true: TEI answers with the pieces)."""
    body.setdefault("include_details", True)
    f = checked(body, schema.ENCODE)
    return EncodeRequest(f.get("tokenizer", ""), f.get("texts", []), _policy(f),
                         f.get("include_details", False), f.get("add_special_tokens", False))


def decode_request(body: dict[str, Any]) -> DecodeRequest:
    f = checked(body, schema.DECODE)
    return DecodeRequest(f.get("tokenizer", ""), f.get("ids", []),
                         [seq.get("ids", []) for seq in f.get("batch", [])])


def count_request(body: dict[str, Any]) -> CountRequest:
    f = checked(body, schema.COUNT)
    return CountRequest(
        tokenizer=f.get("tokenizer", ""),
        texts=f.get("texts", []),
        messages=[_message(m) for m in f.get("messages", [])],
        plain_text=f.get("plain_text", False),
        special_tokens=_policy(f),
        max_tokens=f.get("max_tokens"),
        model=f.get("model", ""),
        tools_json=f.get("tools_json", ""),
        tool_choice=f.get("tool_choice", ""),
        add_special_tokens=f.get("add_special_tokens", False),
    )


def lint_request(ref: str, query: dict[str, Any]) -> LintRequest:
    """GET /tokenizers/{ref}/lint's query (``depth``, ``list_partial_utf8``,
    ``max_findings``); the tokenizer is the path's."""
    if "tokenizer" in query:
        raise invalid("tokenizer", "is named by the path (/tokenizers/{ref}/lint), not the query")
    f = checked({**query, "tokenizer": ref}, schema.LINT)
    depth = f.get("depth", 0)
    return LintRequest(f["tokenizer"], _DEPTHS.get(depth, str(depth)),
                       f.get("list_partial_utf8", False), f.get("max_findings", 0))


def diff_request(query: dict[str, Any]) -> DiffRequest:
    """GET /diff's query: ``a``, ``b`` and ``top``."""
    f = checked(query, schema.DIFF)
    return DiffRequest(f.get("a", ""), f.get("b", ""), f.get("top", 0))


def _policy(fields: dict[str, Any]) -> SpecialPolicy:
    p = fields.get("special_tokens")
    if p is None:
        return NO_POLICY
    return SpecialPolicy(tuple(p.get("allowed", ())), p.get("allow_all", False),
                         p.get("disallowed_mode", 0), tuple(p.get("disallowed", ())))


def _message(m: dict[str, Any]) -> ChatMessage:
    parts = []
    for part in m.get("parts", []):
        image = part.get("image")
        if image is not None:
            parts.append(ContentPart(image=ImagePart(image.get("width", 0),
                                                     image.get("height", 0),
                                                     image.get("detail", ""),
                                                     image.get("url", ""))))
        else:
            parts.append(ContentPart(text=part.get("text", "")))
    calls = tuple(ToolCall(c.get("id", ""), c.get("name", ""), c.get("arguments", ""))
                  for c in m.get("tool_calls", []))
    return ChatMessage(m.get("role", ""), m.get("content", ""), m.get("name", ""), tuple(parts),
                       calls, m.get("tool_call_id", ""))


# -- answers ----------------------------------------------------------------------------------


def tokens_json(result: Encoded, byte_fallback: frozenset[int]) -> dict[str, Any]:
    """Encode's answer with TEI-style tokens: id, text (when the piece is whole UTF-8),
    bytes (hex), byte offsets [start, end), special and byte-fallback flags."""
    results: list[dict[str, Any]] = []
    for item in result.results:
        tokens = [
            {"id": d.id, "text": _utf8_or_none(d.piece), "bytes": d.piece.hex(),
             "start": d.start, "end": d.end, "special": d.special,
             "byte_fallback": d.id in byte_fallback}
            for d in item.details
        ]
        results.append({"ids": item.ids, "count": len(item.ids), "tokens": tokens})
    return {"tokenizer": result.tokenizer, "total": result.total, "results": results}


def decoded_json(result: Decoded) -> dict[str, Any]:
    return {"tokenizer": result.tokenizer, "text": result.text, "data": result.data.hex(),
            "results": [{"text": r.text, "data": r.data.hex()} for r in result.results]}


# The fields /quote adds to /count's body (QuoteRequest's, HTTP spelling: vendor_body an object).
QUOTE_FIELDS = ("vendor", "vendor_body", "max_output_tokens", "cache", "provider")


def quote_request(body: dict[str, Any]) -> QuoteRequest:
    """/quote's body: /count's fields plus the quote's (or a vendor body and its name)."""
    own = {key: body.pop(key) for key in QUOTE_FIELDS if key in body}
    for key in ("vendor", "provider"):
        if not isinstance(own.get(key, ""), str):
            raise invalid(key, "must be a string")
    out = own.get("max_output_tokens")
    if out is not None and (isinstance(out, bool) or not isinstance(out, int)):
        raise invalid("max_output_tokens", "must be an integer (tokens)")
    given = own.get("vendor_body")
    if given is not None and not isinstance(given, dict):
        raise invalid("vendor_body", "must be an object: the vendor's request body")
    return QuoteRequest(count=count_request(body), vendor=own.get("vendor", ""),
                        vendor_body=given, max_output_tokens=out, cache=own.get("cache", ""),
                        provider=own.get("provider", ""))


def counted_json(r: Counted) -> dict[str, Any]:
    return {
        "tokenizer": r.tokenizer, "counts": r.counts, "messages_count": r.messages_count,
        "total": r.total, "fits": r.fits, "remaining": r.remaining, "exact": r.exact,
        "estimate_reason": r.estimate_reason, "chat_rule": r.chat_rule,
        "tools_count": r.tools_count, "images_count": r.images_count, "model": r.model,
        "context_window": r.context_window, "max_output_tokens": r.max_output_tokens,
        "breakdown": r.breakdown.as_dict(),
    }


def tokenizers_json(summaries: list[TokenizerSummary]) -> dict[str, Any]:
    return {"tokenizers": [
        {"name": s.name, "builtin": s.builtin, "versions": s.versions,
         "latest_version": s.latest_version, "aliases": s.aliases, "vocab_size": s.vocab_size}
        for s in summaries
    ]}


def manifest_json(m: TokenizerManifest) -> dict[str, Any]:
    return {"manifest": {
        "name": m.name, "version": m.version, "ref": m.ref, "builtin": m.builtin,
        "vocab_size": m.vocab_size, "pattern": m.pattern, "special_tokens": m.special_tokens,
        "sha256": m.sha256, "training_json": m.training_json, "created_at": m.created_at,
        "versions": m.versions, "aliases": m.aliases, "engine": m.engine,
    }}


def _utf8_or_none(piece: bytes) -> str | None:
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        return None


def lint_json(result: Linted) -> dict[str, Any]:
    """Lint's answer in ``tokend registry lint --json``'s shape (docs/lint.md), plus the depth
    and whether the findings were cut."""
    out = result.report.to_dict()
    out["tokenizer"] = result.tokenizer
    out["depth"] = result.depth
    out["truncated"] = result.truncated
    return out


def diff_json(r: Diffed) -> dict[str, Any]:
    """Diff's answer in ``tokend registry diff --json``'s shape (docs/lint.md)."""
    def rows(tokens: list[DiffToken]) -> list[dict[str, Any]]:
        return [{"id": t.id, "token": token_dict(t.token)} for t in tokens]

    return {
        "format": DIFF_FORMAT, "a": r.a, "b": r.b,
        "n_vocab": {"a": r.a_n_vocab, "b": r.b_n_vocab},
        "summary": r.summary, "errors": r.errors,
        "added": rows(r.added), "removed": rows(r.removed),
        "changed": [{"id": c.id, "a": token_dict(c.a), "b": token_dict(c.b)} for c in r.changed],
        "moved": [{"a": m.a_id, "b": m.b_id, "token": token_dict(m.token)} for m in r.moved],
        "specials": {"added": r.specials_added, "removed": r.specials_removed,
                     "changed_id": r.specials_moved},
        "languages": [{"language": x.language, "name": x.name, "a": x.a_tokens,
                       "b": x.b_tokens, "ratio": x.ratio} for x in r.languages],
        "texts": [{"text": t.text, "a": t.a_tokens, "b": t.b_tokens, "ratio": t.ratio}
                  for t in r.texts],
    }
