"""Run specs and the comparison runner: 2–4 engines (or configs) replayed over one session.

A *run spec* is an engine name, config overrides and a label, written on the command line as
``NAME[:key=value,key=value]`` (``compressor:compression.threshold=0.6``). The runner loads every
engine on the calling thread first, because plugin import and the compatibility modules are
process-global state, then replays the runs in worker threads. Each run gets its own cache
simulator (the cache is state carried across requests).

One run failing — an engine that does not load, a replay that crashes, a hook blocked for good
in a call nothing can interrupt, a worker that dies — is recorded on that run and never costs
the others their results: each run is a worker process (:mod:`inspector.worker`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from inspector.config import ConfigError, cfg_set, deep_merge, parse_set_option
from inspector.llm.secrets import is_secret_name, public_value
from inspector.trace.model import Trace

if TYPE_CHECKING:
    from inspector.compare.align import Alignment

# progress(label, turns done, turns total); called from worker threads.
ProgressFn = Callable[[str, int, int], None]

MAX_RUNS = 8  # the UI is designed for 2-4; more is allowed headlessly but not encouraged
STATUS_OK = "ok"
STATUS_LOAD_FAILED = "load_failed"
STATUS_CRASHED = "crashed"
STATUS_CANCELLED = "cancelled"
STATUS_REFUSED = "refused"  # the host would not start an agent with this engine (trace kept)
STATUS_ABANDONED = "abandoned"  # a hook never returned; the partial trace ends with its timeout fault
STATUS_WORKER_DIED = "worker_died"  # the run's worker ended (os._exit, a signal, a BaseException); trace kept
STATUS_MEMORY = "memory"  # the run's worker outgrew its memory limit and was killed; trace kept

# "key=value" pieces are separated by commas; a comma only separates when a new key follows,
# so a value may itself contain commas (``a.b=[1, 2]``).
_PIECE_SPLIT = re.compile(r",(?=\s*[A-Za-z_][\w.\-]*\s*=)")
_KEY_RE = re.compile(r"^[A-Za-z_][\w\-]*(\.[A-Za-z_0-9][\w\-]*)*$")


class SpecError(ValueError):
    """A ``--engine`` spec could not be parsed; the message says which part and why."""


@dataclass(frozen=True)
class RunSpec:
    """One run of a comparison: which engine, with which config overrides, under what label.

    ``overrides`` are dotted keys with already-parsed values (``{"compression.threshold": 0.6}``),
    kept flat so the label, the bundle and the report can show exactly what the user changed.
    """

    engine: str
    overrides: tuple[tuple[str, Any], ...] = ()
    label: str = ""

    def config_for(self, base: dict[str, Any]) -> dict[str, Any]:
        """The run's config: ``base`` with this run's overrides merged over it (base untouched)."""
        nested: dict[str, Any] = {}
        for key, value in self.overrides:
            cfg_set(nested, key, value)
        merged = deep_merge(base, nested)
        if isinstance(base.get("x_user_set"), list):  # the run's own settings are the user's too
            merged["x_user_set"] = sorted(set(base["x_user_set"]) | {key for key, _ in self.overrides})
        return merged

    def describe(self) -> str:
        """The spec as the user would type it (``name:key=value,...``), secret values masked."""
        if not self.overrides:
            return self.engine
        return self.engine + ":" + ",".join(f"{k}={_shown(k, v)}" for k, v in self.overrides)

    def to_json(self) -> dict[str, Any]:
        """Everything, secrets included: for re-running in this process, never for writing out."""
        return {"engine": self.engine, "overrides": [[k, v] for k, v in self.overrides], "label": self.label}

    def public_json(self) -> dict[str, Any]:
        """What may be saved or shown: overrides of secret-looking keys (API keys) left out."""
        return {"engine": self.engine, "label": self.label,
                "overrides": [[k, public_value(v)] for k, v in self.overrides if not is_secret_key(k)]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        pairs = tuple((str(k), v) for k, v in (data.get("overrides") or []))
        return cls(engine=str(data.get("engine") or ""), overrides=pairs, label=str(data.get("label") or ""))


def is_secret_key(key: str) -> bool:
    """Config keys whose values must never reach a file, label or report (``*.api_key`` ...)."""
    return is_secret_name(key.rsplit(".", 1)[-1])


def _shown(key: str, value: Any) -> str:
    """How an override appears in labels, headers and reports: credentials masked at any depth."""
    return "***" if is_secret_key(key) else _yaml_scalar(public_value(value))


def _yaml_scalar(value: Any) -> str:
    """Render a parsed value the way the user would type it (and YAML reads back as the same value)."""
    import yaml

    if isinstance(value, str) and value and "\n" not in value and "," not in value:
        try:
            if yaml.safe_load(value) == value:
                return value
        except yaml.YAMLError:
            pass
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("...").strip()


def parse_engine_spec(text: str) -> RunSpec:
    """Parse ``NAME[:key=value,key=value]``; a ``label=...`` piece names the run explicitly.

    Values are YAML scalars, as with ``--set`` (``0.6`` is a float, ``true`` a bool).
    """
    raw = (text or "").strip()
    if not raw:
        raise SpecError("empty --engine spec; expected NAME or NAME:key=value,...")
    name, sep, rest = raw.partition(":")
    name = name.strip()
    if not name:
        raise SpecError(f"--engine {raw!r}: missing engine name before ':'")
    if sep and not rest.strip():
        raise SpecError(f"--engine {raw!r}: nothing after ':'; expected key=value[,key=value]")
    overrides: list[tuple[str, Any]] = []
    label = ""
    if rest.strip():
        for piece in _PIECE_SPLIT.split(rest):
            key, eq, value = piece.partition("=")
            key = key.strip()
            if not eq:
                raise SpecError(f"--engine {raw!r}: {piece.strip()!r} is not key=value")
            if key == "label":
                label = value.strip()
                continue
            if not _KEY_RE.match(key):
                raise SpecError(f"--engine {raw!r}: {key!r} is not a dotted config key (like compression.threshold)")
            try:
                parsed = parse_set_option([f"{key}={value.strip()}"])
            except (ConfigError, ValueError) as exc:
                raise SpecError(f"--engine {raw!r}: cannot read value of {key!r}: {exc}") from None
            except Exception as exc:  # yaml errors
                raise SpecError(f"--engine {raw!r}: cannot read value of {key!r}: {exc}") from None
            node: Any = parsed
            for part in key.split("."):
                node = node[part]
            overrides.append((key, node))
    return RunSpec(engine=name, overrides=tuple(overrides), label=label)


def _default_label(spec: RunSpec) -> str:
    """Engine name plus the last part of each override key: ``compressor[threshold=0.6]``."""
    if not spec.overrides:
        return spec.engine
    parts = ",".join(f"{k.rsplit('.', 1)[-1]}={_shown(k, v)}" for k, v in spec.overrides)
    return f"{spec.engine}[{parts}]"


def unique_labels(specs: Sequence[RunSpec]) -> list[RunSpec]:
    """Give every spec a label, unique across the comparison (``name``, ``name #2``, ...).

    Labels are how the table, plots and bundle name runs, so two runs may never share one.
    """
    out: list[RunSpec] = []
    seen: set[str] = set()
    for spec in specs:
        base = spec.label or _default_label(spec)
        label, n = base, 2
        while label in seen:
            label = f"{base} #{n}"
            n += 1
        seen.add(label)
        out.append(RunSpec(spec.engine, spec.overrides, label))
    return out


def parse_specs(texts: Sequence[str]) -> list[RunSpec]:
    """Parse several ``--engine`` values and make their labels unique."""
    return unique_labels([parse_engine_spec(t) for t in texts])


@dataclass
class RunResult:
    """One run's outcome: its trace (None if it never ran), or why it failed.

    A cancelled run keeps its partial trace; a crashed run has none (the replay raised).
    """

    spec: RunSpec
    trace: Trace | None = None
    status: str = STATUS_OK
    error: str | None = None
    details: str = ""  # traceback or the loader's long explanation
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    config: dict[str, Any] | None = None  # the run's effective config (None after reload from a bundle)

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK and self.trace is not None


@dataclass
class Comparison:
    """Several runs over one session. Runs keep the order the user gave; run 0 is the baseline."""

    runs: list[RunResult]
    session: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.runs]

    @property
    def traces(self) -> list[Trace | None]:
        """One entry per run (None for a run that produced no trace), same order as ``runs``."""
        return [r.trace for r in self.runs]

    @property
    def errors(self) -> list[str | None]:
        return [r.error for r in self.runs]

    @cached_property
    def alignment(self) -> Alignment:
        """The lockstep (turn, call) alignment of all runs; computed once."""
        from inspector.compare.align import align_runs

        return align_runs(self.traces)


def session_info(session: Any) -> dict[str, Any]:
    """What the report and bundle say about the session (no message text)."""
    return {
        "id": getattr(session, "id", None),
        "format": getattr(session, "source_format", None),
        "path": getattr(session, "source_path", None),
        "title": getattr(session, "title", None),
        "model": getattr(session, "model", None),
        "turns": len(getattr(session, "turns", []) or []),
        "messages": len(getattr(session, "messages", []) or []),
        "warnings": list(getattr(session, "warnings", []) or [])[:200],
    }






def run_comparison(
    session: Any,
    specs: Sequence[RunSpec],
    base_config: dict[str, Any],
    *,
    plugin_dirs: Sequence[str] = (),
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    max_workers: int = 4,
    echo: Any = None,
) -> Comparison:
    """Replay ``session`` once per spec, each in its own worker process, and collect the runs.

    Up to ``max_workers`` workers run at once, so the runs of a comparison use every core. Each
    worker loads its engine itself (a plugin that hangs or exits at import fails that run only)
    and has its own cache simulator. Labels are made unique first. ``cancel`` stops every replay
    at its next turn; the partial traces are kept. A run whose hook blocks past its deadline,
    whose worker dies or outgrows its memory limit keeps the trace it streamed, ending with
    that fault (:mod:`inspector.worker.supervisor`); the other runs go on.
    """
    from inspector.worker.replays import RunRequest, replay_in_workers

    if not specs:
        raise ValueError("a comparison needs at least one run")
    if len(specs) > MAX_RUNS:
        raise ValueError(f"at most {MAX_RUNS} runs in one comparison, got {len(specs)}")
    specs = unique_labels(specs)
    results = [RunResult(spec=s) for s in specs]
    todo: list[int] = []
    for i, (spec, res) in enumerate(zip(specs, results)):
        try:
            res.config = spec.config_for(base_config)
        except Exception as exc:
            res.status, res.error = STATUS_LOAD_FAILED, f"bad config overrides for {spec.label!r}: {exc}"
            continue
        todo.append(i)
    runs = [RunRequest(specs[i].engine, results[i].config or base_config, specs[i].label) for i in todo]
    outcomes = replay_in_workers(session, runs, plugin_dirs, progress=progress, cancel=cancel,
                                 parallel=max(1, min(max_workers, len(runs) or 1)), echo=echo, analyse=True)
    for i, outcome in zip(todo, outcomes):
        _record(results[i], outcome)
    return Comparison(runs=results, session=session_info(session),
                      meta={"specs": [s.public_json() for s in specs], "plugin_dirs": [str(d) for d in plugin_dirs]})


def _record(res: RunResult, outcome: Any) -> None:
    """A worker's outcome as the run's status, error and trace."""
    from inspector.worker import supervisor as sv

    res.seconds = outcome.seconds
    res.warnings.extend(outcome.warnings)
    error = outcome.error
    if outcome.trace is not None:
        res.trace = _stamp(outcome.trace, res)
    if error is not None and error.get("kind") in ("load", "user", "session"):
        text = str(error.get("message") or error.get("exception") or "")
        res.status = STATUS_LOAD_FAILED
        res.error = text.split("\n", 1)[0] or str(error.get("exception"))
        res.details = text if "\n" in text else str(error.get("traceback") or "")
        res.trace = None
    elif error is not None:
        res.status = STATUS_CRASHED
        res.error = f"replay crashed: {error.get('exception')}: {error.get('message')}"
        res.details = str(error.get("traceback") or "")
        res.trace = None
    elif outcome.status == sv.STATUS_CANCELLED:
        res.status, res.error = STATUS_CANCELLED, "cancelled by the user (partial trace kept)"
    elif outcome.status == sv.STATUS_OK:
        if res.trace is not None and res.trace.meta.get("stopped"):
            res.status, res.error = STATUS_REFUSED, f"the host refused to start: {res.trace.meta['stopped']}"
    else:
        res.status = {sv.STATUS_TIMEOUT: STATUS_ABANDONED, sv.STATUS_MEMORY: STATUS_MEMORY}.get(
            outcome.status, STATUS_WORKER_DIED)
        res.error = outcome.describe()
        res.details = (outcome.fault.traceback or "") if outcome.fault is not None else ""


def _stamp(trace: Trace, res: RunResult) -> Trace:
    """Record the run's label and spec in its trace so a trace saved alone still says what it was."""
    trace.meta["label"] = res.label
    trace.meta["run_spec"] = res.spec.public_json()
    return trace
