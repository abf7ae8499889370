"""Auxiliary LLM calls for engines: the inspector's ``agent.auxiliary_client.call_llm``.

Third-party engines summarise through Hermes' ``call_llm(task, messages=..., ...)``. This
module accepts every keyword the real one does (and unknown ones, so newer plugins still run),
resolves ``auxiliary.<task>`` from the active config, and calls an OpenAI-compatible endpoint
through the ``openai`` SDK. With nothing configured it raises the same ``RuntimeError`` Hermes
raises, unless the config opts into a deterministic offline stand-in
(``inspector.aux_offline_stand_in: true``) so replays stay reproducible without a network.

Every call, successful or not, is handed to the recorder(s) as an :class:`AuxCallRecord`; the
host subscribes and turns records into trace events. API keys never reach a record.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from inspector.config import cfg_get
from inspector.llm.secrets import config_secrets, scrub_exception, scrub_text

OFFLINE_MODEL = "inspector-offline-stand-in"
COMPRESSION_TIMEOUT_FLOOR = 300.0  # Hermes floors the compression task's timeout at 300 s
DEFAULT_TIMEOUT = 120.0
DEFAULT_KEY_ENV = "OPENAI_API_KEY"  # key of an OpenAI-compatible endpoint with no api_key/api_key_env

# Named providers with a well-known OpenAI-compatible endpoint and key variable. "auto" (Hermes'
# detection chain) is deliberately not reproduced: the inspector only calls what is configured.
KNOWN_PROVIDERS: dict[str, tuple[str, str]] = {
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
}
_SECRET_KWARGS = frozenset({"api_key", "default_headers", "headers", "authorization"})
_MAX_COMPLETION_MODELS = re.compile(r"(^|/)(o\d|gpt-5)")


@dataclass
class AuxCallRecord:
    """One auxiliary call as the trace shows it (no secrets)."""

    task: str | None
    kwargs: dict[str, Any]
    prompt: list[Any]
    reply: str | None = None
    duration_s: float = 0.0
    error: str | None = None
    model: str | None = None
    base_url: str | None = None
    offline: bool = False
    usage: dict[str, int] | None = None
    unknown_kwargs: list[str] = field(default_factory=list)
    thread: str = ""
    started_at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "kwargs": self.kwargs,
            "prompt": self.prompt,
            "reply": self.reply,
            "duration_s": self.duration_s,
            "error": self.error,
            "model": self.model,
            "base_url": self.base_url,
            "offline": self.offline,
            "usage": self.usage,
            "unknown_kwargs": self.unknown_kwargs,
            "thread": self.thread,
            "started_at": self.started_at,
        }


Recorder = Callable[[AuxCallRecord], None]


class AuxCallLog:
    """A thread-safe list of records; usable directly as a recorder."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[AuxCallRecord] = []

    def __call__(self, record: AuxCallRecord) -> None:
        with self._lock:
            self._records.append(record)

    @property
    def records(self) -> list[AuxCallRecord]:
        with self._lock:
            return list(self._records)


# -- active config and recorders -------------------------------------------------------------
# A process default plus a context-local override: two replays side by side each see their
# own config and recorder (the host must propagate contextvars into its worker threads, as
# Hermes does for its compression pool).
_state_lock = threading.Lock()
_default_config: dict[str, Any] = {}
_global_recorder: Recorder | None = None
_ctx_config: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("aux_config", default=None)
_ctx_recorder: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("aux_recorder", default=None)
_protect = threading.local()


def set_aux_config(config: dict[str, Any] | None) -> None:
    """Set the process-wide config ``call_llm`` resolves ``auxiliary.<task>`` from."""
    global _default_config
    with _state_lock:
        _default_config = dict(config or {})


@contextlib.contextmanager
def use_aux_config(config: dict[str, Any]) -> Iterator[None]:
    """Use ``config`` for calls made in this context (thread / task)."""
    token = _ctx_config.set(config)
    try:
        yield
    finally:
        _ctx_config.reset(token)


def active_aux_config() -> dict[str, Any]:
    cfg = _ctx_config.get()
    if cfg is not None:
        return cfg
    with _state_lock:
        return _default_config


def set_recorder(recorder: Recorder | None) -> Recorder | None:
    """Install the process-wide recorder (``None`` removes it); returns the previous one."""
    global _global_recorder
    with _state_lock:
        previous, _global_recorder = _global_recorder, recorder
    return previous


@contextlib.contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """Deliver records of calls made in this context to ``recorder`` (besides the global one)."""
    token = _ctx_recorder.set(recorder)
    try:
        yield recorder
    finally:
        _ctx_recorder.reset(token)


def _emit(record: AuxCallRecord) -> None:
    with _state_lock:
        global_rec = _global_recorder
    for rec in {id(r): r for r in (_ctx_recorder.get(), global_rec) if r is not None}.values():
        try:
            rec(record)
        except Exception:  # a broken subscriber must never break the engine's call
            pass


# -- interrupt protection ---------------------------------------------------------------------
@contextlib.contextmanager
def aux_interrupt_protection(active: bool = True):  # unannotated, as Hermes' (the API snapshot)
    """Mark this thread's aux calls as non-interruptible (Hermes' gateway semantics).

    The inspector has no gateway interrupts; the flag is kept so engines that use the context
    manager run unchanged and the host can show it. ``active=False`` marks nothing (Hermes'
    signature, agent/auxiliary_client.py of hermes-agent 0.19.0).
    """
    if not active:
        yield
        return
    _protect.depth = getattr(_protect, "depth", 0) + 1
    try:
        yield
    finally:
        _protect.depth -= 1


def is_aux_interrupt_protected() -> bool:
    return getattr(_protect, "depth", 0) > 0


# -- resolution -------------------------------------------------------------------------------
@dataclass
class AuxEndpoint:
    provider: str
    base_url: str
    model: str
    api_key: str | None
    timeout: float
    extra_body: dict[str, Any]


def resolve_endpoint(
    task: str | None,
    config: dict[str, Any],
    *,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    main_runtime: Any = None,
) -> AuxEndpoint | None:
    """The endpoint ``auxiliary.<task>`` (overridden by explicit args) points at, or ``None``."""
    task_cfg = cfg_get(config, f"auxiliary.{task}", {}) if task else {}
    if not isinstance(task_cfg, dict):
        task_cfg = {}
    prov = str(provider or task_cfg.get("provider") or "auto").strip().lower()
    url = str(base_url or task_cfg.get("base_url") or "").strip()
    mdl = str(model or task_cfg.get("model") or "").strip()
    key = api_key or task_cfg.get("api_key") or None
    key_env = str(task_cfg.get("api_key_env") or "")
    if prov == "main" or (task is None and prov == "auto" and not url):
        # Hermes' "auto" sends a call that names no task (``ctx.llm``) to the main model.
        main = _main_runtime(config, main_runtime)
        url = url or main.get("base_url", "")
        mdl = mdl or main.get("model", "")
        key = key or main.get("api_key")
    if not url and prov in KNOWN_PROVIDERS:
        url, default_env = KNOWN_PROVIDERS[prov]
        key_env = key_env or default_env
    if not url:
        return None
    if not key and not key_env and prov not in KNOWN_PROVIDERS and prov != "main":
        key_env = DEFAULT_KEY_ENV  # an OpenAI-compatible endpoint: the SDK's own convention
    if not key and key_env:
        key = os.environ.get(key_env) or None
    if not key and prov in KNOWN_PROVIDERS:
        key = os.environ.get(KNOWN_PROVIDERS[prov][1]) or None
    if not mdl:
        if task is None:
            raise RuntimeError("No model configured for a call without a task, which goes to the main model "
                               "(set model.default)")
        raise RuntimeError(f"No model configured for auxiliary task '{task}' (set auxiliary.{task}.model)")
    t = float(timeout if timeout is not None else task_cfg.get("timeout") or DEFAULT_TIMEOUT)
    if task == "compression":
        t = max(t, COMPRESSION_TIMEOUT_FLOOR)
    extra = task_cfg.get("extra_body") if isinstance(task_cfg.get("extra_body"), dict) else {}
    extra = dict(extra)
    effort = str(task_cfg.get("reasoning_effort") or "").strip()
    if effort and "reasoning" not in extra:
        extra["reasoning"] = {"effort": effort}
    return AuxEndpoint(provider=prov, base_url=url, model=mdl, api_key=key, timeout=t, extra_body=extra)


def _main_runtime(config: dict[str, Any], main_runtime: Any) -> dict[str, Any]:
    if isinstance(main_runtime, dict):
        return main_runtime
    model_cfg = config.get("model") if isinstance(config.get("model"), dict) else {}
    return {
        "base_url": str(model_cfg.get("base_url") or ""),
        "model": str(model_cfg.get("default") or model_cfg.get("model") or ""),
        "api_key": model_cfg.get("api_key") or None,
    }


# -- the call ---------------------------------------------------------------------------------
def call_llm(
    task: str | None = None,
    *,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    main_runtime: Any = None,
    messages: list[Any],
    temperature: float | None = None,
    max_tokens: int | None = None,
    tools: list[Any] | None = None,
    timeout: float | None = None,
    extra_body: dict[str, Any] | None = None,
    reasoning_config: dict[str, Any] | None = None,
    api_mode: str | None = None,
    stream: bool = False,
    stream_options: dict[str, Any] | None = None,
    **extra: Any,
) -> Any:
    """Hermes' ``call_llm``: resolve ``auxiliary.<task>``, call it, record the call."""
    config = active_aux_config()
    shown_kwargs = {
        "provider": provider,
        "model": model,
        "base_url": base_url,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "tools": tools,
        "timeout": timeout,
        "extra_body": extra_body,
        "reasoning_config": reasoning_config,
        "api_mode": api_mode,
        "stream": stream,
        "stream_options": stream_options,
        "main_runtime": None if main_runtime is None else "<main runtime>",
    }
    shown_kwargs.update({k: v for k, v in extra.items() if k.lower() not in _SECRET_KWARGS})
    record = AuxCallRecord(
        task=task,
        kwargs=_jsonable({k: v for k, v in shown_kwargs.items() if v is not None and v is not False}),
        prompt=_jsonable(list(messages or [])),
        unknown_kwargs=sorted(extra),
        thread=threading.current_thread().name,
        started_at=time.time(),
    )
    start = time.perf_counter()
    endpoint_key = None
    try:
        endpoint = resolve_endpoint(
            task, config, provider=provider, model=model, base_url=base_url, api_key=api_key,
            timeout=timeout, main_runtime=main_runtime,
        )
        if endpoint is None:
            if not cfg_get(config, "inspector.aux_offline_stand_in", False):
                if task is None:  # ctx.llm and other task-less calls: Hermes' "auto" would use the main model
                    raise RuntimeError(
                        "No LLM provider configured for an auxiliary call without a task (Hermes routes it to "
                        "the main model: set model.base_url and model.default, or use the offline stand-in "
                        "with inspector.aux_offline_stand_in: true)"
                    )
                raise RuntimeError(f"No LLM provider configured for auxiliary task '{task}'")
            response = offline_completion(task, messages, max_tokens=max_tokens)
            record.offline = True
            record.model = OFFLINE_MODEL
        else:
            record.model, endpoint_key = endpoint.model, endpoint.api_key
            record.base_url = scrub_text(endpoint.base_url)  # ``user:pass@`` never reaches a trace
            response = _call_endpoint(
                endpoint, messages, temperature=temperature, max_tokens=max_tokens, tools=tools,
                extra_body=extra_body, reasoning_config=reasoning_config, stream=stream,
                stream_options=stream_options,
            )
        if stream:
            record.reply = "<stream>"
            return response
        # An endpoint that echoes its key (a proxy, a test server) must not put it in a summary.
        _scrub_reply(response, api_key, endpoint_key, *config_secrets(config))
        record.reply = _reply_text(response)
        record.usage = _usage_dict(response)
        return response
    except Exception as exc:
        scrub_exception(exc, api_key, endpoint_key)
        record.error = scrub_text(f"{type(exc).__name__}: {exc}", api_key, endpoint_key)
        raise
    finally:
        record.duration_s = time.perf_counter() - start
        _emit(record)


def _scrub_reply(response: Any, *secrets: str | None) -> None:
    """Mask credentials in the reply text in place (the engine reads the same object)."""
    def get(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    for choice in get(response, "choices") or []:
        message = get(choice, "message")
        content = get(message, "content")
        if isinstance(content, str):
            cleaned = scrub_text(content, *secrets)
            if cleaned != content:
                try:
                    if isinstance(message, dict):
                        message["content"] = cleaned
                    else:
                        message.content = cleaned
                except Exception:  # a frozen object keeps its text; the record is still scrubbed
                    pass


async def async_call_llm(task: str | None = None, **kwargs: Any) -> Any:
    """The async twin: same routing and recording, run off the event loop. (asyncio is imported
    here: every replay imports this module, and asyncio with ssl was a tenth of a worker's start.)"""
    import asyncio

    ctx = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(None, lambda: ctx.run(call_llm, task, **kwargs))


def _call_endpoint(
    endpoint: AuxEndpoint,
    messages: list[Any],
    *,
    temperature: float | None,
    max_tokens: int | None,
    tools: list[Any] | None,
    extra_body: dict[str, Any] | None,
    reasoning_config: dict[str, Any] | None,
    stream: bool,
    stream_options: dict[str, Any] | None,
) -> Any:
    from inspector.llm.client import make_client

    client = make_client(endpoint.base_url, endpoint.api_key, timeout=endpoint.timeout)
    params: dict[str, Any] = {"model": endpoint.model, "messages": messages}
    if temperature is not None:
        params["temperature"] = temperature
    if max_tokens is not None:
        key = "max_completion_tokens" if _MAX_COMPLETION_MODELS.search(endpoint.model) else "max_tokens"
        params[key] = max_tokens
    if tools:
        params["tools"] = tools
    body = dict(endpoint.extra_body)
    body.update(extra_body or {})
    if reasoning_config:
        body["reasoning"] = reasoning_config
    if body:
        params["extra_body"] = body
    if stream:
        params["stream"] = True
        if stream_options:
            params["stream_options"] = stream_options
    response = client.chat.completions.create(**params)
    if response is None:
        raise RuntimeError("Auxiliary LLM returned no response")
    if not stream and not getattr(response, "choices", None):
        raise RuntimeError("Auxiliary LLM returned a malformed response (no choices)")
    return response


def offline_completion(task: str | None, messages: list[Any], *, max_tokens: int | None = None) -> Any:
    """A canned, deterministic ChatCompletion: same messages → same reply, no network."""
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletion, ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice

    canonical = json.dumps(_jsonable(messages), sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
    last_user = ""
    for msg in reversed(list(messages or [])):
        if isinstance(msg, dict) and msg.get("role") == "user":
            last_user = _text_of(msg.get("content"))
            break
    excerpt = " ".join(last_user.split())[:400]
    reply = f"[offline stand-in reply for task '{task}' #{digest}] {excerpt}".rstrip()
    if max_tokens:
        reply = reply[: max(40, int(max_tokens) * 4)]
    prompt_tokens = (len(canonical) + 3) // 4
    completion_tokens = (len(reply) + 3) // 4
    return ChatCompletion(
        id=f"offline-{digest}",
        object="chat.completion",
        created=0,
        model=OFFLINE_MODEL,
        choices=[Choice(index=0, finish_reason="stop", message=ChatCompletionMessage(role="assistant", content=reply))],
        usage=CompletionUsage(
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, total_tokens=prompt_tokens + completion_tokens
        ),
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _reply_text(response: Any) -> str | None:
    try:
        message = response.choices[0].message
    except (AttributeError, IndexError, TypeError):
        return None
    content = message.get("content") if isinstance(message, dict) else getattr(message, "content", None)
    return content if content is None or isinstance(content, str) else str(content)


def _usage_dict(response: Any) -> dict[str, int] | None:
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    out = {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = usage.get(key) if isinstance(usage, dict) else getattr(usage, key, None)
        if isinstance(value, int):
            out[key] = value
    return out


def _jsonable(value: Any) -> Any:
    """A detached, JSON-safe copy: records must serialise and must not alias engine data."""
    try:
        return json.loads(json.dumps(value, default=repr, ensure_ascii=False))
    except (TypeError, ValueError):
        return repr(value)
