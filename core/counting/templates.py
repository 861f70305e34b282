"""Render a tokenizer's own Jinja chat template the way transformers' ``apply_chat_template`` does.

Chat templates are untrusted code from model repositories, so they run in Jinja2's
``ImmutableSandboxedEnvironment`` with transformers' settings: ``trim_blocks``,
``lstrip_blocks``, the ``loopcontrols`` extension, a ``{% generation %}`` block that renders its
body, a ``tojson`` filter that does not escape HTML or non-ASCII, ``raise_exception`` and
``strftime_now`` globals, and the tokenizer's special tokens (``bos_token``, ``eos_token``, ...)
as variables. A template error is ``InvalidInput`` naming the template's message.

>>> render_chat_template("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
...                      "{% if add_generation_prompt %}<assistant>{% endif %}",
...                      [{"role": "user", "content": "hi"}])
'<user>hi<assistant>'
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.parser
import jinja2.runtime
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tokend.core.errors import InvalidInput

# Names a message's reasoning may come under; transformers copies it to all of them.
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
MAX_ERROR_CHARS = 300


class _Generation(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: transformers marks assistant text with it."""

    tags = {"generation"}  # noqa: RUF012 - Jinja reads this class attribute

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_render", [], [], None, None)
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _render(self, caller: jinja2.runtime.Macro) -> str:
        return str(caller())


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


@functools.lru_cache(maxsize=64)
def _compile(template: str) -> jinja2.Template:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    try:
        return env.from_string(template)
    except jinja2.exceptions.TemplateSyntaxError as exc:
        raise InvalidInput(f"the chat template does not parse: {exc}"[:MAX_ERROR_CHARS]) from None


def compile_chat_template(template: str) -> None:
    """Check that ``template`` compiles (InvalidInput with Jinja's message if not)."""
    _compile(template)


def _plain(value: Any) -> Any:
    """A copy built of plain JSON types only (what the sandboxed template may see)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return f"<{type(value).__name__}>"


def _with_reasoning_aliases(message: dict[str, Any]) -> dict[str, Any]:
    reasoning = next((message[k] for k in REASONING_FIELDS if message.get(k) is not None), None)
    if reasoning is None:
        return message
    return {"thinking": reasoning, **message, "reasoning_content": reasoning}


def render_chat_template(
    template: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    special_tokens_map: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> str:
    """The prompt text ``template`` renders for ``messages`` (transformers' semantics)."""
    compiled = _compile(template)
    chat = [_with_reasoning_aliases(_plain(m)) for m in messages]
    variables = {**(special_tokens_map or {}), **_plain(kwargs)}
    try:
        return compiled.render(
            messages=chat,
            tools=_plain(list(tools)) if tools is not None else None,
            documents=None,
            add_generation_prompt=add_generation_prompt,
            **variables,
        )
    except jinja2.exceptions.TemplateError as exc:
        raise InvalidInput(f"the chat template failed: {exc}"[:MAX_ERROR_CHARS]) from None
    except (TypeError, ValueError, LookupError) as exc:
        raise InvalidInput(
            f"the chat template failed on these messages: {type(exc).__name__}: {exc}"[
                :MAX_ERROR_CHARS
            ]
        ) from None
