"""Stand-in for ``agent.plugin_llm``: the ``ctx.llm`` facade Hermes gives general plugins.

A plugin summarising through ``ctx.llm.complete(messages)`` must reach the same place an engine
calling ``call_llm`` does, or the replay would hide its calls. So every completion goes through
the inspector's ``call_llm`` (:mod:`inspector.llm.aux`) with Hermes' arguments (``task=None``,
the trusted overrides, ``extra_body``): it is recorded in the trace, uses the replay's config,
and offline it raises Hermes' "No LLM provider configured" error unless the config turns on
the offline stand-in, like every other auxiliary call.

Hermes' trust gate is kept: ``provider``/``model``/``agent_id``/``profile`` overrides are
refused with :class:`PluginLlmTrustError` unless ``plugins.entries.<plugin_id>.llm`` in the
run's ``config.yaml`` allows them (a missing block allows nothing).
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

log = logging.getLogger(__name__)


# -- the shapes plugins see ---------------------------------------------------------------------
@dataclass
class PluginLlmTextInput:
    text: str
    type: str = "text"


@dataclass
class PluginLlmImageInput:
    """An image by ``data`` (bytes, sent as a data URL) or by ``url``."""

    data: bytes | None = None
    url: str | None = None
    mime_type: str = "image/png"
    file_name: str = ""
    type: str = "image"


PluginLlmInput = Union[PluginLlmTextInput, PluginLlmImageInput, dict[str, Any]]


@dataclass
class PluginLlmUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None


@dataclass
class PluginLlmCompleteResult:
    text: str
    provider: str
    model: str
    agent_id: str
    usage: PluginLlmUsage = field(default_factory=PluginLlmUsage)
    audit: dict[str, Any] = field(default_factory=dict)


@dataclass
class PluginLlmStructuredResult:
    """``parsed`` is set (and ``content_type`` is ``"json"``) only when JSON was asked for and came back."""

    text: str
    provider: str
    model: str
    agent_id: str
    usage: PluginLlmUsage = field(default_factory=PluginLlmUsage)
    parsed: Any = None
    content_type: str = "text"
    audit: dict[str, Any] = field(default_factory=dict)


class PluginLlmTrustError(PermissionError):
    """An override the plugin's ``plugins.entries.<id>.llm`` block does not allow."""


# -- the trust gate -----------------------------------------------------------------------------
@dataclass(frozen=True)
class _TrustPolicy:
    """What one plugin may override; the defaults allow nothing (Hermes fails closed)."""

    plugin_id: str
    allow_provider_override: bool = False
    allowed_providers: frozenset[str] | None = None  # None: no allowlist
    allow_any_provider: bool = False
    allow_model_override: bool = False
    allowed_models: frozenset[str] | None = None
    allow_any_model: bool = False
    allow_agent_id_override: bool = False
    allow_profile_override: bool = False


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value) if isinstance(value, (bool, int, float)) else False


def _ref(value: Any) -> str:
    return str(value or "").strip().lower()


def _allowlist(raw: Any) -> tuple[frozenset[str] | None, bool]:
    """``(names or None, "*" listed)``: a YAML list becomes an allowlist; anything else is none."""
    if not isinstance(raw, list):
        return None, False
    names = {_ref(item) for item in raw if isinstance(item, str)}
    return frozenset(n for n in names if n and n != "*"), "*" in names


def trust_policy(plugin_id: str) -> _TrustPolicy:
    """``plugins.entries.<plugin_id>.llm`` from the run's config, read on every call (as Hermes)."""
    if not plugin_id:
        return _TrustPolicy(plugin_id="")
    try:
        from inspector.engines.compat.mod_hermes_cli_config import load_config_readonly

        config = load_config_readonly() or {}
    except Exception:
        return _TrustPolicy(plugin_id=plugin_id)
    node: Any = config
    for key in ("plugins", "entries", plugin_id, "llm"):
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return _TrustPolicy(plugin_id=plugin_id)
    providers, any_provider = _allowlist(node.get("allowed_providers"))
    models, any_model = _allowlist(node.get("allowed_models"))
    return _TrustPolicy(
        plugin_id=plugin_id,
        allow_provider_override=_truthy(node.get("allow_provider_override")),
        allowed_providers=providers,
        allow_any_provider=any_provider,
        allow_model_override=_truthy(node.get("allow_model_override")),
        allowed_models=models,
        allow_any_model=any_model,
        allow_agent_id_override=_truthy(node.get("allow_agent_id_override")),
        allow_profile_override=_truthy(node.get("allow_profile_override")),
    )


def _gate(
    policy: _TrustPolicy, provider: str | None, model: str | None, agent_id: str | None, profile: str | None
) -> tuple[str | None, str | None, str | None, str | None]:
    """The overrides to use, or :class:`PluginLlmTrustError` naming the key that would allow them."""
    pid = policy.plugin_id
    where = f"plugins.entries.{pid}.llm"

    def checked(value: str | None, what: str, allowed: bool, names: frozenset[str] | None, any_name: bool) -> str | None:
        if not value:
            return None
        if not allowed:
            raise PluginLlmTrustError(
                f"Plugin {pid!r} cannot override the {what} (set {where}.allow_{what}_override to true to allow)."
            )
        if not any_name and names is not None and _ref(value) not in names:
            raise PluginLlmTrustError(f"Plugin {pid!r} {what} override {value!r} is not in {where}.allowed_{what}s.")
        return value.strip()

    final_provider = checked(provider, "provider", policy.allow_provider_override, policy.allowed_providers,
                             policy.allow_any_provider)
    final_model = checked(model, "model", policy.allow_model_override, policy.allowed_models, policy.allow_any_model)
    if agent_id and not policy.allow_agent_id_override:
        raise PluginLlmTrustError(
            f"Plugin {pid!r} cannot run completions against a non-default agent id "
            f"(set {where}.allow_agent_id_override to true to allow)."
        )
    if profile and not policy.allow_profile_override:
        raise PluginLlmTrustError(
            f"Plugin {pid!r} cannot override the auth profile (set {where}.allow_profile_override to true to allow)."
        )
    return final_provider, final_model, agent_id or None, profile.strip() if profile else None


# -- building the request -----------------------------------------------------------------------
def _block(block: Any) -> dict[str, Any]:
    """One structured input as a plain dict; an unknown shape is a ``ValueError``."""
    if isinstance(block, PluginLlmTextInput):
        return {"type": "text", "text": block.text}
    if isinstance(block, PluginLlmImageInput):
        return {"type": "image", "data": block.data, "url": block.url, "mime_type": block.mime_type}
    if not isinstance(block, dict):
        raise ValueError(f"Unsupported input block: {type(block).__name__}")
    kind = block.get("type")
    if kind == "text":
        if not isinstance(block.get("text"), str):
            raise ValueError("text input block requires 'text' string")
        return {"type": "text", "text": block["text"]}
    if kind == "image":
        if "data" not in block and not block.get("url"):
            raise ValueError("image input block requires 'data' bytes or 'url'")
        return {"type": "image", "data": block.get("data"), "url": block.get("url"),
                "mime_type": block.get("mime_type") or "image/png"}
    raise ValueError(f"Unknown input block type: {kind!r}")


def _structured_messages(
    instructions: str, inputs: Sequence[Any], *, wants_json: bool, json_schema: Any, schema_name: str | None,
    system_prompt: str | None,
) -> list[dict[str, Any]]:
    """A system message (the plugin's, plus a JSON-only rule) and one multi-part user message."""
    system = [system_prompt.strip()] if system_prompt else []
    if wants_json:
        system.append("Respond with a single JSON object that matches the requested shape. "
                      "Do not include prose or markdown fences.")
    header = instructions.strip()
    if schema_name:
        header += f"\n\nSchema name: {schema_name}"
    if json_schema is not None:
        try:
            shown = json.dumps(json_schema, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            shown = str(json_schema)
        header += f"\n\nJSON schema:\n{shown}"
    parts: list[dict[str, Any]] = [{"type": "text", "text": header}]
    for raw in inputs:
        block = _block(raw)
        if block["type"] == "text":
            parts.append({"type": "text", "text": block["text"]})
        elif block.get("url"):
            parts.append({"type": "image_url", "image_url": {"url": block["url"]}})
        else:
            data = block.get("data") or b""
            if not isinstance(data, (bytes, bytearray)):
                raise ValueError("image input 'data' must be bytes")
            encoded = base64.b64encode(bytes(data)).decode("ascii")
            parts.append({"type": "image_url", "image_url": {"url": f"data:{block['mime_type']};base64,{encoded}"}})
    messages = [{"role": "system", "content": "\n\n".join(system)}] if system else []
    return messages + [{"role": "user", "content": parts}]


def _response_format(json_mode: bool, json_schema: Any) -> dict[str, Any] | None:
    if json_schema is not None:
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": "plugin_structured_output", "schema": json_schema, "strict": False}}}
    if json_mode:
        return {"response_format": {"type": "json_object"}}
    return None


# -- reading the response -----------------------------------------------------------------------
_FENCED = re.compile(r"```(?:json)?\s*(.+?)```", re.DOTALL | re.IGNORECASE)


def _parse_json(text: str, json_mode: bool, json_schema: Any) -> tuple[Any, str]:
    """``(value, "json")`` when JSON was asked for and parses (and fits the schema), else ``(None, "text")``.

    A reply that parses but breaks the schema is a ``ValueError``; the schema is checked only
    when ``jsonschema`` is installed, as in Hermes.
    """
    if not (json_mode or json_schema is not None) or not text:
        return None, "text"
    fenced = _FENCED.search(text)
    try:
        value = json.loads(fenced.group(1).strip() if fenced else text.strip())
    except ValueError:
        return None, "text"
    if json_schema is not None:
        try:
            import jsonschema  # type: ignore[import-untyped]
        except ImportError:
            log.debug("jsonschema is not installed; the structured reply is not checked against its schema")
        else:
            try:
                jsonschema.validate(value, json_schema)
            except jsonschema.ValidationError as exc:
                raise ValueError(f"Plugin LLM structured output did not match schema: {exc.message}") from exc
    return value, "json"


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _text(response: Any) -> str:
    """The reply text (string content, or the text parts of a list); ``""`` when there is none."""
    try:
        content = _get(_get(response, "choices")[0], "message")
        content = _get(content, "content")
    except (TypeError, IndexError, KeyError):
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [_get(p, "text") for p in content if not isinstance(p, dict) or p.get("type") == "text"]
        return "".join(t for t in texts if isinstance(t, str))
    return ""


def _usage(response: Any) -> PluginLlmUsage:
    raw = _get(response, "usage")
    if raw is None:
        return PluginLlmUsage()

    def count(*names: str) -> int:
        for name in names:
            try:
                value = int(_get(raw, name) or 0)
            except (TypeError, ValueError):
                value = 0
            if value:
                return value
        return 0

    usage = PluginLlmUsage(
        input_tokens=count("prompt_tokens", "input_tokens"),
        output_tokens=count("completion_tokens", "output_tokens"),
        cache_read_tokens=count("cache_read_input_tokens", "cache_read_tokens"),
        cache_write_tokens=count("cache_creation_input_tokens", "cache_write_tokens"),
    )
    usage.total_tokens = count("total_tokens") or usage.input_tokens + usage.output_tokens
    return usage


def _attribution(provider: str | None, model: str | None, response: Any) -> tuple[str, str]:
    """What answered: the override, else the config's main model; the model the response names wins."""
    from inspector.engines.compat.state import active_config

    section = active_config().get("model")
    section = section if isinstance(section, dict) else {}
    answered = _get(response, "model")
    if isinstance(answered, str) and answered.strip():
        model = answered.strip()
    model = model or str(section.get("default") or section.get("model") or "").strip() or "default"
    return provider or str(section.get("provider") or "").strip() or "auto", model


# -- the facade ---------------------------------------------------------------------------------
Caller = Callable[..., Any]


def _route(
    messages: list[dict[str, Any]], provider_override: str | None, model_override: str | None,
    profile_override: str | None, extra_body: dict[str, Any] | None, **params: Any,
) -> dict[str, Any]:
    """``call_llm`` keywords as Hermes passes them (an auth profile travels in ``extra_body.metadata``)."""
    body = dict(extra_body or {})
    if profile_override:
        body.setdefault("metadata", {})["auth_profile"] = profile_override
    return {"task": None, "provider": provider_override, "model": model_override, "messages": messages,
            "extra_body": body or None, **params}


def _default_sync_caller(**kw: Any) -> tuple[str, str, Any]:
    from inspector.llm.aux import call_llm

    response = call_llm(**_route(**kw))
    return (*_attribution(kw["provider_override"], kw["model_override"], response), response)


async def _default_async_caller(**kw: Any) -> tuple[str, str, Any]:
    from inspector.llm.aux import async_call_llm

    response = await async_call_llm(**_route(**kw))
    return (*_attribution(kw["provider_override"], kw["model_override"], response), response)


class PluginLlm:
    """LLM access for one plugin (``ctx.llm``); the plugin id binds the trust gate."""

    def __init__(
        self,
        *,
        plugin_id: str,
        policy_loader: Callable[[str], _TrustPolicy] | None = None,
        sync_caller: Caller | None = None,
        async_caller: Callable[..., Awaitable[Any]] | None = None,
    ) -> None:
        self._plugin_id = plugin_id
        self._policy_loader = policy_loader or trust_policy
        self._sync_caller = sync_caller
        self._async_caller = async_caller

    def complete(
        self, messages: list[dict[str, Any]], *, provider: str | None = None, model: str | None = None,
        temperature: float | None = None, max_tokens: int | None = None, timeout: float | None = None,
        agent_id: str | None = None, profile: str | None = None, purpose: str | None = None,
    ) -> PluginLlmCompleteResult:
        """A chat completion (OpenAI-style ``messages``) on the user's model; overrides need trust."""
        call, agent = self._prepare(messages, provider, model, agent_id, profile, None,
                                    temperature=temperature, max_tokens=max_tokens, timeout=timeout)
        answered = (self._sync_caller or _default_sync_caller)(**call)
        return self._complete_result(answered, agent, call["profile_override"], purpose)

    async def acomplete(
        self, messages: list[dict[str, Any]], *, provider: str | None = None, model: str | None = None,
        temperature: float | None = None, max_tokens: int | None = None, timeout: float | None = None,
        agent_id: str | None = None, profile: str | None = None, purpose: str | None = None,
    ) -> PluginLlmCompleteResult:
        call, agent = self._prepare(messages, provider, model, agent_id, profile, None,
                                    temperature=temperature, max_tokens=max_tokens, timeout=timeout)
        answered = await (self._async_caller or _default_async_caller)(**call)
        return self._complete_result(answered, agent, call["profile_override"], purpose)

    def complete_structured(
        self, *, instructions: str, input: Sequence[PluginLlmInput], json_schema: Any = None,
        json_mode: bool = False, schema_name: str | None = None, system_prompt: str | None = None,
        provider: str | None = None, model: str | None = None, temperature: float | None = None,
        max_tokens: int | None = None, timeout: float | None = None, agent_id: str | None = None,
        profile: str | None = None, purpose: str | None = None,
    ) -> PluginLlmStructuredResult:
        """Instructions plus text/image blocks; with ``json_mode`` or a schema the reply is parsed."""
        call, agent = self._prepare_structured(
            "complete_structured", instructions, input, json_schema, json_mode, schema_name, system_prompt,
            provider, model, agent_id, profile, temperature=temperature, max_tokens=max_tokens, timeout=timeout)
        answered = (self._sync_caller or _default_sync_caller)(**call)
        return self._structured_result(answered, agent, call["profile_override"], purpose, json_mode, json_schema,
                                       schema_name)

    async def acomplete_structured(
        self, *, instructions: str, input: Sequence[PluginLlmInput], json_schema: Any = None,
        json_mode: bool = False, schema_name: str | None = None, system_prompt: str | None = None,
        provider: str | None = None, model: str | None = None, temperature: float | None = None,
        max_tokens: int | None = None, timeout: float | None = None, agent_id: str | None = None,
        profile: str | None = None, purpose: str | None = None,
    ) -> PluginLlmStructuredResult:
        call, agent = self._prepare_structured(
            "acomplete_structured", instructions, input, json_schema, json_mode, schema_name, system_prompt,
            provider, model, agent_id, profile, temperature=temperature, max_tokens=max_tokens, timeout=timeout)
        answered = await (self._async_caller or _default_async_caller)(**call)
        return self._structured_result(answered, agent, call["profile_override"], purpose, json_mode, json_schema,
                                       schema_name)

    # -- internals --------------------------------------------------------------------------
    def _prepare(
        self, messages: list[dict[str, Any]] | Callable[[], list[dict[str, Any]]], provider: str | None,
        model: str | None, agent_id: str | None, profile: str | None, extra_body: dict[str, Any] | None,
        **params: Any,
    ) -> tuple[dict[str, Any], str | None]:
        """The caller's keywords after the trust gate (checked on every call, so config edits apply).

        ``messages`` may be a builder, run only once the gate has passed (as Hermes orders it).
        """
        eff_provider, eff_model, eff_agent, eff_profile = _gate(
            self._policy_loader(self._plugin_id), provider, model, agent_id, profile)
        call = {"messages": messages() if callable(messages) else messages, "provider_override": eff_provider,
                "model_override": eff_model, "profile_override": eff_profile, "extra_body": extra_body, **params}
        return call, eff_agent

    def _prepare_structured(
        self, method: str, instructions: str, inputs: Sequence[Any], json_schema: Any, json_mode: bool,
        schema_name: str | None, system_prompt: str | None, provider: str | None, model: str | None,
        agent_id: str | None, profile: str | None, **params: Any,
    ) -> tuple[dict[str, Any], str | None]:
        if not instructions or not instructions.strip():
            raise ValueError(f"{method} requires non-empty instructions")
        if not inputs:
            raise ValueError(f"{method} requires at least one input block")

        def build() -> list[dict[str, Any]]:
            return _structured_messages(instructions, list(inputs), wants_json=json_mode or json_schema is not None,
                                        json_schema=json_schema, schema_name=schema_name, system_prompt=system_prompt)

        return self._prepare(build, provider, model, agent_id, profile, _response_format(json_mode, json_schema),
                             **params)

    def _audit(self, purpose: str | None, profile: str | None) -> dict[str, Any]:
        return {"plugin_id": self._plugin_id, "purpose": purpose or "", "profile": profile or ""}

    def _complete_result(
        self, answered: tuple[str, str, Any], agent: str | None, profile: str | None, purpose: str | None
    ) -> PluginLlmCompleteResult:
        provider, model, response = answered
        result = PluginLlmCompleteResult(text=_text(response), provider=provider, model=model,
                                         agent_id=agent or "default", usage=_usage(response),
                                         audit=self._audit(purpose, profile))
        log.info("plugin_llm.complete plugin=%s provider=%s model=%s purpose=%s tokens=%d",
                 self._plugin_id, provider, model, purpose or "", result.usage.total_tokens)
        return result

    def _structured_result(
        self, answered: tuple[str, str, Any], agent: str | None, profile: str | None, purpose: str | None,
        json_mode: bool, json_schema: Any, schema_name: str | None,
    ) -> PluginLlmStructuredResult:
        provider, model, response = answered
        text = _text(response)
        parsed, content_type = _parse_json(text, json_mode, json_schema)
        audit = {**self._audit(purpose, profile), "schema_name": schema_name or ""}
        return PluginLlmStructuredResult(text=text, provider=provider, model=model, agent_id=agent or "default",
                                         usage=_usage(response), parsed=parsed, content_type=content_type, audit=audit)


def make_plugin_llm_for_test(
    *, plugin_id: str, policy: _TrustPolicy, sync_caller: Caller | None = None,
    async_caller: Callable[..., Awaitable[Any]] | None = None,
) -> PluginLlm:
    """A :class:`PluginLlm` with a fixed policy and injected callers (Hermes' test helper)."""
    return PluginLlm(plugin_id=plugin_id, policy_loader=lambda _pid: policy, sync_caller=sync_caller,
                     async_caller=async_caller)


__all__ = [
    "PluginLlm",
    "PluginLlmTextInput",
    "PluginLlmImageInput",
    "PluginLlmInput",
    "PluginLlmUsage",
    "PluginLlmCompleteResult",
    "PluginLlmStructuredResult",
    "PluginLlmTrustError",
    "make_plugin_llm_for_test",
]
EAGER = [*__all__, "_TrustPolicy"]  # the private policy type too: make_plugin_llm_for_test needs one
