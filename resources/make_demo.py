#!/usr/bin/env python3
"""Generate the bundled demo session: ``resources/demo/demo_session.json``.

A developer and a coding agent build and debug ``ledgerlite``, a small bookkeeping CLI, over
about seventy turns: the agent reads and writes files, greps, runs the test suite, patches bugs.
All text (code, logs, prose) is produced here from our own templates, driven by a fixed-seed
generator, so ``python resources/make_demo.py`` always writes the same bytes.

The session is long enough that its cumulative context crosses the built-in compressor's
threshold (96,000 rough tokens at a 128K window) several times, which is what makes it a useful
default for comparing engines. Recorded usage is synthesised the way a provider would have
reported it for an agent compacting at that threshold (prompt size, cached prefix, a cache TTL
lapse after the long break), so the inspector can compare recorded and replayed figures.

Standard library only; no network; no randomness without the fixed seed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "demo" / "demo_session.json"
SEED = 20260302
START = 1772442840  # 2026-03-02 09:14:00 UTC
CONTEXT_LENGTH = 128_000
THRESHOLD = 96_000
MODEL = "anthropic/claude-sonnet-4.5"  # what config.yaml replays it with
ROOT = "/workspace/ledgerlite"


# ---------------------------------------------------------------------------------------------
# Deterministic randomness (splitmix64: identical on every Python version and platform)
# ---------------------------------------------------------------------------------------------
class Rng:
    def __init__(self, seed: int) -> None:
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def randint(self, lo: int, hi: int) -> int:
        return lo + self.next() % (hi - lo + 1)

    def choice(self, seq: list[Any] | tuple[Any, ...]) -> Any:
        return seq[self.next() % len(seq)]

    def chance(self, percent: int) -> bool:
        return self.next() % 100 < percent

    def hex(self, n: int) -> str:
        out = ""
        while len(out) < n:
            out += f"{self.next():016x}"
        return out[:n]


# ---------------------------------------------------------------------------------------------
# Source code generation
# ---------------------------------------------------------------------------------------------
MODULES: dict[str, dict[str, Any]] = {
    "ledgerlite/money.py": {
        "doc": "Exact money arithmetic: Decimal amounts with a currency, banker's rounding, splitting.",
        "imports": ["from __future__ import annotations", "", "from dataclasses import dataclass",
                    "from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation", "",
                    "from ledgerlite.errors import MoneyError"],
        "verbs": ["quantize", "split", "convert", "format", "parse", "round", "compare", "allocate"],
        "nouns": ["amount", "share", "rate", "currency", "remainder", "cents", "total", "fraction"],
        "classes": ["Money", "ExchangeTable"],
        "error": "MoneyError",
    },
    "ledgerlite/parser.py": {
        "doc": "CSV import: dialect detection, header mapping, dates and amounts from bank exports.",
        "imports": ["from __future__ import annotations", "", "import csv", "import io", "import logging",
                    "from datetime import date, datetime", "", "from ledgerlite.errors import ParseError",
                    "from ledgerlite.models import Transaction", "from ledgerlite.money import Money"],
        "verbs": ["parse", "detect", "normalise", "split", "coerce", "read", "validate", "guess"],
        "nouns": ["row", "header", "date", "amount", "dialect", "column", "payee", "memo", "encoding"],
        "classes": ["CsvImporter", "HeaderMap"],
        "error": "ParseError",
    },
    "ledgerlite/rules.py": {
        "doc": "Categorisation rules: match payees and memos to accounts, in priority order.",
        "imports": ["from __future__ import annotations", "", "import re", "from dataclasses import dataclass, field",
                    "", "from ledgerlite.errors import RuleError", "from ledgerlite.models import Transaction"],
        "verbs": ["match", "compile", "rank", "apply", "load", "explain", "merge", "validate"],
        "nouns": ["rule", "pattern", "payee", "category", "priority", "memo", "account", "ruleset"],
        "classes": ["Rule", "RuleSet"],
        "error": "RuleError",
    },
    "ledgerlite/storage.py": {
        "doc": "SQLite persistence: accounts, transactions and postings, with simple migrations.",
        "imports": ["from __future__ import annotations", "", "import logging", "import sqlite3",
                    "import threading", "from contextlib import contextmanager", "from pathlib import Path", "",
                    "from ledgerlite.errors import StorageError", "from ledgerlite.models import Account, Transaction"],
        "verbs": ["insert", "fetch", "migrate", "delete", "upsert", "count", "vacuum", "iterate"],
        "nouns": ["transaction", "account", "posting", "schema", "batch", "cursor", "row", "version"],
        "classes": ["Repository", "Migrator"],
        "error": "StorageError",
    },
    "ledgerlite/reports.py": {
        "doc": "Reports: monthly totals per category, balances over time, budget against actual.",
        "imports": ["from __future__ import annotations", "", "from collections import defaultdict",
                    "from dataclasses import dataclass", "from datetime import date", "",
                    "from ledgerlite.models import Transaction", "from ledgerlite.money import Money"],
        "verbs": ["summarise", "group", "render", "compute", "collect", "project", "compare", "total"],
        "nouns": ["month", "category", "balance", "budget", "period", "column", "report", "variance"],
        "classes": ["MonthlyReport", "BudgetReport"],
        "error": "ValueError",
    },
    "ledgerlite/cli.py": {
        "doc": "Command line entry point: import, categorise, report, budget.",
        "imports": ["from __future__ import annotations", "", "import argparse", "import logging", "import sys",
                    "from pathlib import Path", "", "from ledgerlite import parser, reports, rules, storage"],
        "verbs": ["run", "build", "handle", "print", "resolve", "configure", "open", "dispatch"],
        "nouns": ["command", "args", "output", "path", "config", "table", "report", "database"],
        "classes": ["App"],
        "error": "SystemExit",
    },
}

PARAM_POOL = ["value", "rows", "items", "text", "limit", "amount", "currency", "when", "pattern",
              "accounts", "period", "strict", "default", "records", "options", "key"]
ATTRS = ["amount", "currency", "payee", "memo", "category", "posted_on", "account", "priority", "id"]


def _stmt(rng: Rng, names: list[str], err: str, fn: str, noun: str, method: bool) -> list[str]:
    """One plausible statement (possibly a small block) using the given local names."""
    a = rng.choice(names)
    others = [n for n in names if n != a]
    b = rng.choice(others) if others else "None"
    attr = rng.choice(ATTRS)
    kind = rng.randint(0, 11)
    if kind == 0:
        return [f"if not {a}:", f'    raise {err}("{fn}: {noun} must not be empty")']
    if kind == 1:
        return [f"{noun}s = [item for item in {a} if item.{attr} is not None]"]
    if kind == 2:
        return [f"for item in {a}:", f"    if item.{attr} == {b}:", "        result.append(item)"]
    if kind == 3:
        return [f'log.debug("{fn}: %d {noun}s after filtering", len({a}))']
    if kind == 4:
        return [f'{noun} = Decimal(str({a})).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)']
    if kind == 5:
        return ["try:", f"    {noun} = int({a})", "except (TypeError, ValueError) as exc:",
                f'    raise {err}(f"{fn}: cannot read {noun} from {{{a}!r}}") from exc']
    if kind == 6:
        return [f"{noun}_by_key = {{item.{attr}: item for item in {a}}}"]
    if kind == 7:
        return [f"if {a} is None:", f"    {a} = {b}"]
    if kind == 8:
        return [f"{noun} = sorted({a}, key=lambda item: (item.{attr}, item.id))"]
    if kind == 9:
        if method:
            return ["with self._lock:", f"    self._cache[{noun}_key] = {a}"]
        return [f"if {a} is not None and {b} is not None:", f"    {noun} = ({a}, {b})"]
    if kind == 10:
        return [f"total = sum((item.{attr} for item in {a}), start=Decimal(0))"]
    return [f"{noun} = {a}.strip().lower() if isinstance({a}, str) else {a}"]


def gen_function(rng: Rng, name: str, method: bool, err: str, noun: str, verb: str) -> list[str]:
    n_params = rng.randint(1, 3)
    params: list[str] = []
    while len(params) < n_params:
        p = rng.choice(PARAM_POOL)
        if p not in params:
            params.append(p)
    sig = (["self"] if method else []) + params
    ret = rng.choice(["list", "Decimal", "str", "dict", "bool", "int"])
    lines = [f"def {name}({', '.join(sig)}) -> {ret}:",
             f'    """{verb.capitalize()} the {noun} for {params[0]}; see the module docstring for the rules."""',
             "    result: list = []"]
    if method:
        lines.append(f"    {noun}_key = (id(self), repr({params[0]}))")
    for _ in range(rng.randint(3, 8)):
        lines.extend("    " + s for s in _stmt(rng, params, err, name, noun, method))
    tail = {"list": "result", "Decimal": f"Decimal(len(result)) + Decimal({params[0]!s} or 0)",
            "str": f'", ".join(str(item) for item in result) or str({params[0]})', "dict": "{str(i): v for i, v in enumerate(result)}",
            "bool": "bool(result)", "int": "len(result)"}[ret]
    lines.append(f"    return {tail}")
    return lines


def gen_module(rng: Rng, path: str, functions: int) -> tuple[str, list[str]]:
    """Source text of one module and the public function names it defines."""
    spec = MODULES[path]
    imports = list(spec["imports"])
    for needed in ("import logging", "import threading", "from decimal import ROUND_HALF_EVEN, Decimal"):
        if needed not in imports and not any(needed.split()[-1] in ln and ln.startswith(needed.split()[0]) for ln in imports):
            imports.insert(2, needed)
    out = [f'"""{spec["doc"]}"""', ""] + imports + ["", "log = logging.getLogger(__name__)", "", ""]
    public: list[str] = []
    used: set[str] = set()
    for cls in spec["classes"]:
        out.append(f"class {cls}:")
        out.append(f'    """{cls} keeps its state private; callers go through the methods below."""')
        out.append("")
        out.append("    def __init__(self, options: dict | None = None) -> None:")
        out.append("        self._options = dict(options or {})")
        out.append("        self._cache: dict = {}")
        out.append("        self._lock = threading.Lock()")
        for _ in range(rng.randint(3, 5)):
            verb, noun = rng.choice(spec["verbs"]), rng.choice(spec["nouns"])
            name = f"{verb}_{noun}"
            if name in used:
                continue
            used.add(name)
            out.append("")
            out.extend("    " + ln for ln in gen_function(rng, name, True, spec["error"], noun, verb))
        out.extend(["", ""])
    count = 0
    while count < functions:
        verb, noun = rng.choice(spec["verbs"]), rng.choice(spec["nouns"])
        name = f"{verb}_{noun}"
        if name in used:
            name = f"{verb}_{noun}_{count}"
        used.add(name)
        public.append(name)
        out.extend(gen_function(rng, name, False, spec["error"], noun, verb))
        out.extend(["", ""])
        count += 1
    return "\n".join(out).rstrip() + "\n", public


def gen_tests(rng: Rng, module: str, public: list[str], per_function: int = 2) -> tuple[str, list[str]]:
    mod = module.split("/")[-1][:-3]
    lines = [f'"""Tests for ledgerlite.{mod}."""', "", "from decimal import Decimal", "", "import pytest", "",
             f"from ledgerlite import {mod}", "", ""]
    names: list[str] = []
    cases = ["empty", "single", "many", "rounding", "unicode", "negative", "large", "none"]
    for fn in public:
        for case in [rng.choice(cases) for _ in range(per_function)]:
            tname = f"test_{fn}_{case}"
            if tname in names:
                continue
            names.append(tname)
            arg = {"empty": "[]", "single": '["x"]', "many": "list(range(12))", "rounding": 'Decimal("10.005")',
                   "unicode": '"Caf\\u00e9 M\\u00fcller"', "negative": 'Decimal("-3.10")', "large": "10**9",
                   "none": "None"}[case]
            lines += [f"def {tname}():", f"    result = {mod}.{fn}({arg})",
                      f"    assert result == {mod}.{fn}({arg})",
                      "    assert result is not None" if case != "none" else "    assert result is not None or True",
                      "", ""]
    return "\n".join(lines).rstrip() + "\n", names


# ---------------------------------------------------------------------------------------------
# Tool results
# ---------------------------------------------------------------------------------------------
def numbered(text: str, offset: int = 1, limit: int | None = None) -> str:
    rows = text.split("\n")
    if text.endswith("\n"):
        rows = rows[:-1]
    end = len(rows) if limit is None else min(len(rows), offset - 1 + limit)
    return "\n".join(f"{i:>6}|{rows[i - 1]}" for i in range(offset, end + 1))


def grep(files: dict[str, str], needle: str, limit: int = 60) -> list[dict[str, Any]]:
    hits = []
    for path in sorted(files):
        for no, line in enumerate(files[path].split("\n"), 1):
            if needle in line:
                hits.append({"path": path, "line": no, "content": line.strip()[:200]})
    return hits[:limit]


def pytest_log(rng: Rng, tests: dict[str, list[str]], failures: list[tuple[str, str, str]], verbose: bool) -> tuple[str, int]:
    """A pytest run over the generated tests; ``failures`` are (file, test, error line)."""
    total = sum(len(v) for v in tests.values())
    failed = {(f, t) for f, t, _ in failures}
    out = ["============================= test session starts ==============================",
           "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0" + (" -- /workspace/ledgerlite/.venv/bin/python" if verbose else ""),
           f"rootdir: {ROOT}", "configfile: pyproject.toml", f"collected {total} items", ""]
    done = 0
    for path in sorted(tests):
        names = tests[path]
        if verbose:
            for name in names:
                done += 1
                status = "FAILED" if (path, name) in failed else "PASSED"
                out.append(f"{path}::{name} {status}".ljust(72) + f"[{done * 100 // max(total, 1):>3}%]")
        else:
            marks = "".join("F" if (path, n) in failed else "." for n in names)
            done += len(names)
            out.append(f"{path} {marks}".ljust(72) + f"[{done * 100 // max(total, 1):>3}%]")
    if failures:
        out += ["", "=================================== FAILURES ==================================="]
        for path, name, err in failures:
            out += [f"_{'_' * 20} {name} {'_' * 20}", "", f"    def {name}():",
                    ">       result = helper_under_test()",
                    f"E       {err}", "", f"{path}:{rng.randint(8, 160)}: {err.split(':')[0]}"]
        out += ["=========================== short test summary info ============================"]
        out += [f"FAILED {p}::{n} - {e[:90]}" for p, n, e in failures]
    secs = f"{rng.randint(180, 420) / 100:.2f}s"
    summary = f"{len(failures)} failed, {total - len(failures)} passed in {secs}" if failures else f"{total} passed in {secs}"
    out.append(f"{'=' * 20} {summary} {'=' * 20}")
    return "\n".join(out), (1 if failures else 0)


# ---------------------------------------------------------------------------------------------
# The storyline: what the user asks, and what the agent does about it
# ---------------------------------------------------------------------------------------------
M, P, R, S, REP, C = ("ledgerlite/money.py", "ledgerlite/parser.py", "ledgerlite/rules.py",
                      "ledgerlite/storage.py", "ledgerlite/reports.py", "ledgerlite/cli.py")

# (kind, user text, primary file, secondary file, search needle, failing-test error or None)
STORY: list[tuple[str, str, str, str, str, str | None]] = [
    ("explore", "I want to build a tiny bookkeeping CLI called ledgerlite: import bank CSVs, categorise, monthly reports. There's a skeleton in the repo already, can you look around and tell me what's there?", M, P, "def ", None),
    ("implement", "Start with money.py. Amounts must be Decimal with a currency, never floats. Add splitting an amount into n shares.", M, M, "Decimal", None),
    ("debug", "The split test fails for 10.00 / 3, the shares don't add up to the total. Use the largest remainder method so the cents always sum up.", M, M, "split_", "AssertionError: sum of shares Money('9.99') != Money('10.00')"),
    ("question", "Why largest remainder rather than just putting the leftover cent on the last share?", M, M, "", None),
    ("implement", "Now the CSV parser. Banks give us semicolon or comma files, dates as 31.01.2026 or 2026-01-31, and amounts with comma decimals sometimes.", P, M, "parse_", None),
    ("debug", "Importing the sample export from my bank fails with a date error on the first row.", P, P, "strptime", "ParseError: parse_date: cannot read date from '2026-01-31T00:00:00'"),
    ("review", "Show me how the header mapping works, I want to understand what happens with unknown columns.", P, M, "HeaderMap", None),
    ("refactor", "The parser functions are getting long. Split the dialect detection out into its own helpers without changing behaviour.", P, P, "detect_", None),
    ("run", "Run the full test suite and tell me where we stand.", P, M, "", None),
    ("implement", "Next: categorisation rules. A rule matches payee or memo with a regex and assigns an account. Higher priority wins.", R, P, "priority", None),
    ("debug", "Rules with the same priority are applied in random order, I get different categories between runs.", R, R, "rank_", "AssertionError: expected 'Groceries' but rule order gave 'Household'"),
    ("explore", "Where do we read rules from? I'd like them in a TOML file next to the database.", R, C, "load_", None),
    ("implement", "Add loading rules from rules.toml, with a clear error message that names the line when a regex doesn't compile.", R, R, "compile_", None),
    ("run", "Try categorising the sample export with the example rules and show me the uncategorised payees.", R, P, "", None),
    ("implement", "Storage now. SQLite, one file, tables for accounts, transactions and postings. Keep it boring.", S, M, "sqlite3", None),
    ("debug", "The storage tests hang sometimes when two tests open the same database file.", S, S, "connect", "sqlite3.OperationalError: database is locked"),
    ("review", "Walk me through the migration logic, how do we know which version the file is at?", S, S, "version", None),
    ("implement", "Add a migration that introduces an 'imported_from' column so we can trace rows back to the CSV file.", S, S, "migrate_", None),
    ("run", "Import all three sample CSVs into a fresh database and count the rows per account.", S, P, "", None),
    ("debug", "Importing the same file twice duplicates everything. We need idempotent imports.", S, P, "upsert_", "AssertionError: expected 214 rows after re-import, found 428"),
    ("question", "What's the dedup key you used? I'm worried about two genuine identical coffees on the same day.", S, P, "", None),
    ("implement", "Make the dedup key include the row's position within the file so identical transactions survive.", S, P, "upsert_", None),
    ("implement", "Reports: monthly totals per category, as a plain text table.", REP, M, "summarise_", None),
    ("debug", "January shows spending from February 1st. Looks like a timezone or boundary bug.", REP, P, "month", "AssertionError: 2026-02-01 counted in January period"),
    ("review", "Show me the period grouping code and the tests around month boundaries.", REP, REP, "period", None),
    ("refactor", "Rename period helpers so it's obvious which ones are inclusive and which exclusive.", REP, REP, "period", None),
    ("run", "Run the monthly report against the imported data for January and February.", REP, S, "", None),
    ("implement", "Budget vs actual: a budgets table and a report showing variance per category.", REP, S, "budget", None),
    ("debug", "Variance percentages are wrong when the budget is zero, we get a division error.", REP, REP, "variance", "decimal.DivisionByZero: [<class 'decimal.DivisionByZero'>]"),
    ("implement", "Now wire it all into the CLI: ledgerlite import, categorise, report, budget.", C, REP, "add_parser", None),
    ("run", "Try the CLI end to end: import, categorise, then the January report.", C, S, "", None),
    ("debug", "ledgerlite report with no database yet prints a traceback instead of a friendly message.", C, S, "open_", "StorageError: no such table: transactions"),
    ("review", "Let's review the whole money module once more before we build on it further.", M, M, "def ", None),
    ("implement", "Add currency conversion with a small exchange table, so EUR and CHF accounts can be reported together.", M, REP, "convert_", None),
    ("debug", "Converted totals are off by a cent compared to my spreadsheet.", M, M, "quantize", "AssertionError: Money('1083.46 CHF') != Money('1083.47 CHF')"),
    ("question", "Should we round per transaction or only the converted total? What do accountants usually do?", M, REP, "", None),
    ("refactor", "Round only at the report level then, and keep full precision in between.", M, REP, "quantize", None),
    ("run", "Run everything again, I'm off for lunch after this.", M, S, "", None),
    # --- after a long break (the cache TTL lapses here) ---
    ("explore", "Back. Where were we? Give me a short status and the open problems.", REP, C, "TODO", None),
    ("implement", "Add an export command that writes the monthly report as CSV too.", C, REP, "render_", None),
    ("debug", "The CSV export writes Decimal('12.50') literally instead of 12.50.", REP, C, "render_", "AssertionError: 'Decimal(\\'12.50\\')' found in exported CSV"),
    ("review", "Show me the rules module again, I want to add a 'split' rule that divides one transaction over two accounts.", R, M, "apply_", None),
    ("implement", "Implement split rules using Money.split so the shares add up exactly.", R, M, "split_", None),
    ("debug", "A split rule with weights 1:2 gives shares that don't sum to the total for odd cents.", R, M, "allocate_", "AssertionError: shares (Money('3.34'), Money('6.67')) sum to 10.01"),
    ("run", "Run the rules tests verbose, I want to see every case.", R, R, "", None),
    ("explore", "Search the code for every place we still convert amounts through float.", M, P, "float(", None),
    ("refactor", "Remove those float conversions, Decimal all the way.", P, M, "float(", None),
    ("run", "Full test suite please.", P, M, "", None),
    ("implement", "Add a 'balances' report: running balance per account per day.", REP, S, "balance", None),
    ("debug", "Running balances drift when there are several postings on the same day.", REP, S, "balance", "AssertionError: balance on 2026-01-14 is 231.40, expected 219.90"),
    ("review", "Read the storage query that feeds the balances report, is it ordering postings deterministically?", S, REP, "ORDER BY", None),
    ("implement", "Order by date, then by import position, then by id.", S, REP, "fetch_", None),
    ("run", "Benchmark importing the big 40k-row export, how long does it take?", S, P, "", None),
    ("refactor", "Import is slow. Batch the inserts in one transaction per file.", S, S, "insert_", None),
    ("run", "Benchmark again after batching.", S, P, "", None),
    ("debug", "Batching broke the duplicate detection: re-importing now raises an IntegrityError.", S, S, "upsert_", "sqlite3.IntegrityError: UNIQUE constraint failed: transactions.dedup_key"),
    ("implement", "Add a --dry-run flag to import that shows what would be inserted.", C, S, "add_argument", None),
    ("explore", "Which parts of the code have no tests at all? Grep for functions that no test calls.", REP, C, "def ", None),
    ("implement", "Write tests for the uncovered report functions.", REP, REP, "def test_", None),
    ("debug", "One of the new report tests fails on the budget rendering with an empty month.", REP, REP, "render_", "IndexError: list index out of range"),
    ("run", "Run the report tests verbose.", REP, REP, "", None),
    ("review", "Let's look at the CLI module as a whole, is the help text consistent?", C, C, "help=", None),
    ("refactor", "Make the help texts consistent and add examples to the epilog.", C, C, "help=", None),
    ("lcm", "This morning we argued about largest remainder for split_evenly. Can you find what we decided and why, before I change allocation for split rules?", M, R, "largest remainder", None),
    ("implement", "Use the same largest remainder allocation for weighted splits then.", M, R, "allocate_", None),
    ("run", "Full suite one more time.", M, R, "", None),
    ("explore", "Check the README against what the CLI actually does now.", C, C, "ledgerlite ", None),
    ("implement", "Update the README with the import, categorise, report and budget examples.", C, C, "README", None),
    ("question", "What would you do next if this were going to be used by more people than me?", C, S, "", None),
    ("run", "Last full run, then I'll tag a release.", C, M, "", None),
]


TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a text file with line numbers. Use offset and limit for large files.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "offset": {"type": "integer", "default": 1},
                                                     "limit": {"type": "integer", "default": 500}}, "required": ["path"]}}},
    {"type": "function", "function": {"name": "search_files", "description": "Search file contents (regex) or names under a path.",
     "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}, "path": {"type": "string", "default": "."},
                                                     "target": {"type": "string", "enum": ["content", "files"], "default": "content"}},
                    "required": ["pattern"]}}},
    {"type": "function", "function": {"name": "terminal", "description": "Run a shell command in the project directory and return its output and exit code.",
     "parameters": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "integer", "default": 120}},
                    "required": ["command"]}}},
    {"type": "function", "function": {"name": "write_file", "description": "Create or overwrite a file with the given content.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path", "content"]}}},
    {"type": "function", "function": {"name": "patch", "description": "Replace one exact snippet in a file with new text.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "old_string": {"type": "string"},
                                                     "new_string": {"type": "string"}}, "required": ["path", "old_string", "new_string"]}}},
    {"type": "function", "function": {"name": "lcm_grep", "description": "Search the whole conversation history kept by the lcm context engine, including compacted turns.",
     "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "regex": {"type": "boolean", "default": False},
                                                     "limit": {"type": "integer", "default": 20}}, "required": ["query"]}}},
]

SYSTEM_PROMPT = """You are a careful software engineering agent working in the user's project directory.

# How you work
- Read before you write. Open the files you are about to change and the tests that cover them.
- Prefer small, reviewable changes. After each change run the relevant tests and report the result honestly, including failures you could not fix.
- Use the tools: read_file for files, search_files for finding code, terminal for running commands, write_file for new files, patch for targeted edits.
- Never invent file contents or command output. If something is unclear, say what you checked.
- Money is always Decimal in this project. Floats are a bug.

# Project memory
- Project: ledgerlite, a personal bookkeeping CLI (Python 3.12, pytest, SQLite, no third-party runtime dependencies).
- The user prefers plain text tables over rich formatting, and short explanations with the reasoning behind decisions.
- Tests live in tests/, one file per module. The sample bank exports are in samples/.
- The user reviews diffs before committing; do not run git commit yourself.

# Environment
- Working directory: /workspace/ledgerlite
- Shell: bash; virtual environment at .venv (activated for terminal commands).
- Platform: linux; timezone Europe/Zurich.
"""

QUESTION_ANSWERS = {
    STORY[3][1]: "Putting the leftover on the last share is simple, but with larger n it can push one share "
                 "several cents away from the others, and the choice of which share absorbs it depends on order.",
    STORY[20][1]: "The dedup key was (date, amount, payee, memo). Two genuine identical coffees on the same day "
                  "would collapse into one, so the key needs something positional from the source file.",
    STORY[35][1]: "Accounting practice is to keep full precision while computing and round once where the figure "
                  "is reported or booked; rounding each converted transaction accumulates error across many rows.",
    STORY[69][1]: "I would add a config file instead of flags, a proper migration history table, property-based "
                  "tests for money and splitting, and packaging so people can pip install it.",
}

ANSWER_OPENERS = {
    "explore": "Here is what I found.",
    "implement": "Done.",
    "debug": "Found it and fixed it.",
    "review": "Here's a walkthrough.",
    "refactor": "Refactored without changing behaviour.",
    "run": "Results:",
    "question": "Good question.",
    "lcm": "I found the earlier discussion.",
}


class Builder:
    def __init__(self) -> None:
        self.rng = Rng(SEED)
        self.files: dict[str, str] = {}
        self.public: dict[str, list[str]] = {}
        self.tests: dict[str, list[str]] = {}
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        self.clock = START
        self.user_text = ""
        self.sizes = {M: 11, P: 12, R: 10, S: 11, REP: 12, C: 8}
        for path in MODULES:
            self._regen(path, self.sizes[path])

    # -- project state -----------------------------------------------------------------------
    def _regen(self, path: str, functions: int) -> None:
        text, public = gen_module(self.rng, path, functions)
        self.files[path] = text
        self.public[path] = public
        test_path = "tests/test_" + path.split("/")[-1]
        ttext, names = gen_tests(self.rng, path, public)
        self.files[test_path] = ttext
        self.tests[test_path] = names

    def _grow(self, path: str, extra: int = 2) -> str:
        """Add functions to a module (an implement step) and return the new text."""
        self.sizes[path] += extra
        spec = MODULES[path]
        added = []
        for k in range(extra):
            verb, noun = self.rng.choice(spec["verbs"]), self.rng.choice(spec["nouns"])
            name = f"{verb}_{noun}_v{self.sizes[path]}{k}"
            added.append(name)
            self.files[path] += "\n\n" + "\n".join(gen_function(self.rng, name, False, spec["error"], noun, verb)) + "\n"
        self.public[path] += added
        test_path = "tests/test_" + path.split("/")[-1]
        ttext, names = gen_tests(self.rng, path, added, per_function=3)
        self.files[test_path] += "\n\n" + ttext.split("\n\n\n", 1)[-1]
        self.tests[test_path] += names
        return self.files[path]

    # -- messages ----------------------------------------------------------------------------
    def tick(self, lo: int, hi: int) -> int:
        self.clock += self.rng.randint(lo, hi)
        return self.clock

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"id": "call_" + self.rng.hex(24), "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}

    def assistant_calls(self, text: str, calls: list[dict[str, Any]]) -> None:
        self.messages.append({"role": "assistant", "content": text, "tool_calls": calls,
                              "timestamp": self.tick(3, 22)})

    def tool(self, call: dict[str, Any], result: Any, slow: bool = False) -> None:
        content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        self.messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                              "content": content, "timestamp": self.tick(4, 45) if slow else self.tick(1, 6)})

    def read(self, path: str, note: str = "") -> None:
        c = self.call("read_file", {"path": path})
        self.assistant_calls(note, [c])
        text = self.files[path]
        self.tool(c, {"path": path, "content": numbered(text), "total_lines": text.count("\n")})

    def search(self, needle: str, note: str = "") -> None:
        c = self.call("search_files", {"pattern": needle, "path": "."})
        self.assistant_calls(note, [c])
        hits = grep(self.files, needle)
        self.tool(c, {"total_count": len(hits), "matches": hits})

    def pytest(self, failures: list[tuple[str, str, str]], verbose: bool = False, only: str | None = None, note: str = "") -> None:
        tests = {k: v for k, v in self.tests.items() if only is None or k == only}
        cmd = "python -m pytest" + (" -v" if verbose else " -q") + (f" {only}" if only else "")
        c = self.call("terminal", {"command": cmd})
        self.assistant_calls(note, [c])
        log, code = pytest_log(self.rng, tests, failures, verbose)
        self.tool(c, {"output": log, "exit_code": code, "error": None}, slow=True)

    def terminal(self, command: str, output: str, code: int = 0, note: str = "") -> None:
        c = self.call("terminal", {"command": command})
        self.assistant_calls(note, [c])
        self.tool(c, {"output": output, "exit_code": code, "error": None}, slow=True)

    def patch(self, path: str, note: str = "") -> None:
        lines = self.files[path].split("\n")
        idx = next((i for i in range(len(lines) // 3, len(lines)) if lines[i].strip().startswith("return ")), len(lines) - 2)
        old = lines[idx]
        new = old.replace("return ", "return _checked(", 1) + ")" if "return " in old else old + "  # checked"
        c = self.call("patch", {"path": path, "old_string": old.strip(), "new_string": new.strip()})
        self.assistant_calls(note, [c])
        lines[idx] = new
        self.files[path] = "\n".join(lines)
        diff = f"--- a/{path}\n+++ b/{path}\n@@ -{idx + 1},1 +{idx + 1},1 @@\n-{old}\n+{new}"
        self.tool(c, {"success": True, "diff": diff, "path": path})

    def write(self, path: str, note: str = "") -> None:
        text = self.files[path]
        c = self.call("write_file", {"path": path, "content": text})
        self.assistant_calls(note, [c])
        self.tool(c, {"bytes_written": len(text.encode()), "path": path})

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text, "timestamp": self.tick(5, 40)})

    # -- turns -------------------------------------------------------------------------------
    def turn(self, index: int, kind: str, user: str, f1: str, f2: str, needle: str, error: str | None) -> None:
        gap = (52 * 60, 55 * 60) if index == 38 else (20, 190)
        self.user_text = user
        self.messages.append({"role": "user", "content": user, "timestamp": self.tick(*gap)})
        test1 = "tests/test_" + f1.split("/")[-1]
        fn = self.rng.choice(self.public[f1])
        if kind == "explore":
            self.search(needle, "Let me search the code first.")
            self.read(f1, f"Reading {f1}.")
            self.read(f2, "")
            self.answer(self._prose(kind, f1, f2, fn, 5))
        elif kind == "implement":
            self.read(f1, f"I'll start from the current {f1}.")
            self._grow(f1, self.rng.randint(2, 4))
            self.write(f1, f"Writing the new version of {f1} with the additional functions.")
            self.write(test1, "And the tests for them.")
            self.pytest([], only=test1)
            self.answer(self._prose(kind, f1, f2, fn, 4))
        elif kind == "debug":
            tname = self.rng.choice(self.tests[test1])
            self.pytest([(test1, tname, error or "AssertionError")], note="Reproducing first.")
            self.read(f1, "")
            self.search(needle, "Checking other callers.")
            self.read(test1, "")
            self.patch(f1, "The fix:")
            self.pytest([], note="Re-running the suite.")
            self.answer(self._prose(kind, f1, f2, fn, 5, error=error))
        elif kind == "review":
            self.read(f1, "")
            self.read(test1, "")
            if f2 != f1:
                self.read(f2, "")
            self.answer(self._prose(kind, f1, f2, fn, 7))
        elif kind == "refactor":
            self.read(f1, "")
            self.patch(f1, "")
            self.patch(f1, "")
            self.search(needle, "Making sure nothing else referenced the old names.")
            self.pytest([])
            self.answer(self._prose(kind, f1, f2, fn, 4))
        elif kind == "run":
            verbose = "verbose" in user
            self.pytest([], verbose=verbose or self.rng.chance(35))
            if "Benchmark" in user:
                secs = "14.82" if "again" not in user else "1.97"
                self.terminal("python -m ledgerlite import samples/big_export.csv --db /tmp/bench.db",
                              f"imported 40000 rows into /tmp/bench.db (0 duplicates skipped)\nreal\t0m{secs}s\nuser\t0m{secs}s\nsys\t0m0.31s")
            elif "CLI" in user or "report" in user or "categoris" in user or "Import" in user:
                self.terminal("python -m ledgerlite report --month 2026-01", self._report_table())
            self.answer(self._prose(kind, f1, f2, fn, 3))
        elif kind == "question":
            self.answer(self._prose(kind, f1, f2, fn, 9))
        elif kind == "lcm":
            self._lcm_turn(needle)
            self.read(f1, "Now the current allocation code.")
            self.answer(self._prose(kind, f1, f2, fn, 6))

    def _lcm_turn(self, phrase: str) -> None:
        c = self.call("lcm_grep", {"query": phrase})
        self.assistant_calls("That discussion was compacted out of my context; searching the full history.", [c])
        results = []
        for seq, msg in enumerate(self.messages[1:]):
            text = msg.get("content") or ""
            pos = text.lower().find(phrase)
            if pos >= 0 and msg["role"] in ("user", "assistant"):
                a, b = max(0, pos - 100), min(len(text), pos + len(phrase) + 100)
                results.append({"type": "message", "seq": seq, "role": msg["role"],
                                "snippet": ("…" if a else "") + " ".join(text[a:b].split()) + ("…" if b < len(text) else ""),
                                "covered_by": [f"L0-{seq // 40 + 1:04d}", "L1-0005"], "compacted": True})
        self.tool(c, {"session": "20260302_091400_4f2a9c", "query": phrase, "message_matches": len(results),
                      "summary_matches": 0, "results": results[:20], "truncated": len(results) > 20})

    def _report_table(self) -> str:
        cats = ["Groceries", "Rent", "Transport", "Eating out", "Utilities", "Insurance", "Health", "Books",
                "Household", "Gifts", "Travel", "Uncategorised"]
        rows = ["Category".ljust(18) + "Jan 2026".rjust(12) + "Feb 2026".rjust(12) + "Budget".rjust(12), "-" * 54]
        for cat in cats:
            a, b, c = (self.rng.randint(2000, 190000) for _ in range(3))
            rows.append(cat.ljust(18) + f"{a / 100:>12.2f}{b / 100:>12.2f}{c / 100:>12.2f}")
        return "\n".join(rows)

    def _prose(self, kind: str, f1: str, f2: str, fn: str, sentences: int, error: str | None = None) -> str:
        """The agent's closing answer: specific to the turn, assembled from our own phrases."""
        parts = [ANSWER_OPENERS[kind]]
        mod = f1.split("/")[-1]
        pool = [
            f"The core of it is in `{mod}`, mainly `{fn}`, which the tests in tests/test_{mod} exercise directly.",
            f"I kept the public names in `{mod}` unchanged, so nothing outside the module had to move.",
            f"`{f2.split('/')[-1]}` only depends on the small interface at the top of `{mod}`, which I did not touch.",
            "All amounts stay Decimal end to end; the only rounding happens when a value is shown or stored.",
            "I ran the affected tests after each step rather than only at the end, so each change is verified on its own.",
            "One thing to watch: the helper assumes its input is already sorted by posting date, which the storage layer guarantees but the parser does not.",
            "If you want to double-check, the diff is small enough to read in one go.",
            "There is still a TODO about locale-specific thousands separators; I left it alone because no sample file needs it yet.",
            "The test suite runs in about three seconds, so it is cheap to run after every change.",
        ]
        if kind == "debug" and error:
            parts.append(f"The failure was `{error}`. The root cause was in `{fn}`: it handled the edge case "
                         "after rounding instead of before, so the error only appeared for particular inputs.")
        if kind == "question" and self.user_text in QUESTION_ANSWERS:
            parts.append(QUESTION_ANSWERS[self.user_text])
        if kind == "lcm" or "largest remainder" in self.user_text.lower():
            parts.append("The largest remainder method first gives every share the rounded-down amount, then "
                         "hands the leftover cents one by one to the shares with the biggest fractional parts, "
                         "so the shares always add up to the total and no share is ever off by more than a cent.")
        for _ in range(sentences):
            s = self.rng.choice(pool)
            if s not in parts:
                parts.append(s)
        return " ".join(parts)

    # -- usage -------------------------------------------------------------------------------
    def add_usage(self) -> None:
        """Recorded usage for every assistant message, as an agent compacting at 96K would see it."""
        tools_tokens = len(json.dumps(TOOLS)) // 4
        window: list[int] = []  # rough tokens of messages in the agent's context
        system = len(str(self.messages[0])) // 4
        prev_prompt = 0
        prev_time = None
        compacted = False
        for msg in self.messages[1:]:
            if msg["role"] == "assistant":
                prompt_rough = system + tools_tokens + sum(window)
                if prompt_rough >= THRESHOLD:
                    keep, acc = [], 0
                    for t in reversed(window):
                        if acc + t > int(THRESHOLD * 0.2):
                            break
                        keep.insert(0, t)
                        acc += t
                    window = [2600] + keep  # a summary plus the protected tail
                    compacted = True
                    prompt_rough = system + tools_tokens + sum(window)
                prompt = int(prompt_rough * 0.92)
                ts = msg["timestamp"]
                if prev_time is None or ts - prev_time > 300:
                    cached = 0
                elif compacted:
                    cached = int((system + tools_tokens) * 0.92) // 128 * 128
                else:
                    cached = min(prev_prompt, prompt) // 128 * 128
                completion = max(8, int(len(str({k: msg.get(k) for k in ("content", "tool_calls")})) / 4 * 0.92))
                msg["usage"] = {
                    "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                    "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                  "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
                }
                prev_prompt, prev_time, compacted = prompt, ts, False
            window.append(len(str(msg)) // 4)

    def build(self) -> dict[str, Any]:
        self.messages[0]["timestamp"] = self.clock
        for i, row in enumerate(STORY):
            self.turn(i, *row)
        self.add_usage()
        return {
            "messages": self.messages,
            "tools": TOOLS,
            "meta": {
                "title": "ledgerlite: building and debugging a bookkeeping CLI",
                "model": MODEL,
                "context_length": CONTEXT_LENGTH,
                "generator": "resources/make_demo.py",
                "seed": SEED,
            },
        }


def generate() -> bytes:
    data = Builder().build()
    return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    out = Path(argv[0]) if argv else OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    blob = generate()
    out.write_bytes(blob)
    data = json.loads(blob)
    msgs = data["messages"]
    turns = sum(1 for m in msgs if m["role"] == "user")
    rough = sum(len(str({k: v for k, v in m.items() if k not in ("usage", "timestamp")})) for m in msgs) // 4
    print(f"wrote {out} ({len(blob):,} bytes): {len(msgs)} messages, {turns} turns, ~{rough:,} rough tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
