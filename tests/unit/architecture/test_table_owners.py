"""Each table belongs to one feature, which declares it in its `tables.py` and writes it (issue 36).

Beside the import-linter contracts, as the protocol boundary test is for wire words: `OWNERS` says, for
every table, the package that owns it and, with a reason each, the other packages that may write it (none
today: `billing` moves balances through `accounts.balances`, the retention pruner takes log rows out through
`requestlog.prune`) or read it directly. A scan of the source (`insert`/`update`/`delete` calls on a table,
the SQL text `INSERT INTO`/`UPDATE`/`DELETE FROM` a table, and every import from a `tables` module) fails
on a write or an import the map does not allow. Another feature's rows are otherwise read and written
through the owner's functions (`webhooks.outbox.enqueue`, `billing.ledger.freeze_in`,
`accounts.balances.move_in`, ...).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from modelport.storage.schema import TABLE_MODULES, all_tables

SRC = Path(__file__).resolve().parents[3] / "src" / "modelport"

# Why a package outside the owner may read a table.
OPERATOR_CONSOLE = "the operator console lists every team's rows (read only)"


@dataclass(frozen=True, slots=True)
class Owner:
    package: str  # the feature (package or module under modelport) that declares the table and writes it
    writers: dict[str, str] = field(default_factory=dict)  # other package -> why it writes the table
    readers: dict[str, str] = field(default_factory=dict)  # other package -> why it reads the table directly


OWNERS: dict[str, Owner] = {
    # accounts
    "teams": Owner(
        "accounts",
        readers={
            "billing.notify": "a settlement reads the balances with the thresholds, in one query of its transaction",
            "media.tasks": "the row lock that orders a team's task creations (the unfinished-task limit)",
            "media.assets": "whether the team has the asset service, read in the registration's transaction",
            "retention": "each team's own request-log window (`log_days`, `log_retention`)",
            "console.operator": OPERATOR_CONSOLE,
        },
    ),
    "api_keys": Owner(
        "accounts",
        readers={
            "billing.notify": "the keys whose spend or expiry crosses a notification mark, joined in one query",
            "console.operator": OPERATOR_CONSOLE,
        },
    ),
    "console_sessions": Owner("accounts"),
    "users": Owner("accounts"),
    "memberships": Owner("accounts"),
    "invitations": Owner("accounts"),
    "user_links": Owner("accounts"),
    "scim_groups": Owner("accounts"),
    "scim_group_members": Owner("accounts"),
    "identities": Owner("accounts"),
    "mapped_grants": Owner("accounts"),
    "audit_events": Owner("accounts"),
    "team_notifications": Owner(
        "accounts",
        readers={
            "billing.notify": "a settlement reads the thresholds with the balances, in one query of its transaction"
        },
    ),
    # billing
    "ledger_entries": Owner("billing"),
    "ledger_daily": Owner("billing"),
    "credit_reservations": Owner("billing"),
    "settlement_keys": Owner("billing"),
    "key_spend": Owner("billing"),
    "notification_marks": Owner("billing"),
    # catalog
    "catalog_models": Owner("catalog"),
    # requestlog
    "request_logs": Owner(
        "requestlog",
        readers={
            "retention": "the pruner picks its batches and archives their rows (it deletes them with requestlog.prune)",
            "console.operator": OPERATOR_CONSOLE,
        },
    ),
    "request_log_counts": Owner("requestlog"),
    "usage_daily": Owner("requestlog"),
    # media
    "media_files": Owner("media.files"),
    "provider_assets": Owner("media.assets"),
    "media_tasks": Owner("media.tasks", readers={"console.operator": OPERATOR_CONSOLE}),
    "upstream_slots": Owner("media.tasks"),
    "idempotency_keys": Owner("media.idempotency"),
    # webhooks
    "webhook_secrets": Owner("webhooks"),
    "webhook_deliveries": Owner("webhooks", readers={"console.operator": OPERATOR_CONSOLE}),
    "webhook_attempts": Owner("webhooks"),
    # retention, alerts
    "retention_stats": Owner("retention"),
    "operator_alert_state": Owner("alerts"),
    # stored Responses
    "stored_responses": Owner("responses_store"),
    # the response cache's entries without Redis
    "response_cache_entries": Owner("response_cache"),
    "conversations": Owner("responses_store"),
    "conversation_items": Owner("responses_store"),
    "background_responses": Owner("responses_store"),
    "background_response_events": Owner("responses_store"),
}

_VERBS = {"insert", "update", "delete"}
_SQL = re.compile(r"\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+\"?(\w+)", re.IGNORECASE)


def _module(root: Path, path: Path) -> str:
    """`billing.notify` for `<root>/billing/notify.py` (the package's `__init__` is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _allowed(module: str, packages: dict[str, str]) -> bool:
    return any(_within(module, p) for p in packages)


def declared_tables(root: Path) -> dict[str, tuple[str, str]]:
    """table name -> (its tables module, its variable name), from every `tables.py` under `root`."""
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(root.rglob("tables.py")):
        for node in ast.parse(path.read_text("utf-8")).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "Table"
                and node.value.args
                and isinstance(node.value.args[0], ast.Constant)
                and isinstance(node.targets[0], ast.Name)
            ):
                found[str(node.value.args[0].value)] = (_module(root, path), node.targets[0].id)
    return found


def _verbs(func: ast.expr) -> list[str]:
    """The write verbs a callee names: `insert`, `sqlite.insert`, `_insert`, `(pg.insert if .. else sqlite.insert)`."""
    if isinstance(func, ast.IfExp):
        return _verbs(func.body) + _verbs(func.orelse)
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return [name.lstrip("_")] if name.lstrip("_") in _VERBS else []


def violations(root: Path, owners: dict[str, Owner]) -> list[str]:
    """`module:line: ...` for every write or tables import under `root` that `owners` does not allow."""
    tables = declared_tables(root)
    by_module: dict[str, dict[str, str]] = {}  # tables module -> variable -> table
    for table, (module, var) in tables.items():
        by_module.setdefault(module, {})[var] = table
    hits: list[str] = []
    for path in sorted(root.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        module = _module(root, path)
        tree = ast.parse(path.read_text("utf-8"))
        names = dict(by_module.get(module, {}))  # local name -> table
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.removeprefix("modelport.") in by_module:
                source = by_module[node.module.removeprefix("modelport.")]
                for alias in node.names:
                    imported = source.get(alias.name)
                    if imported is None:
                        continue
                    names[alias.asname or alias.name] = imported
                    owner = owners[imported]
                    if not (_within(module, owner.package) or _allowed(module, owner.writers | owner.readers)):
                        hits.append(f"{module}:{node.lineno}: imports {imported} of {owner.package}")
        writes: list[tuple[int, str]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                if _verbs(node.func):
                    writes += [(node.lineno, a.id) for a in node.args if isinstance(a, ast.Name) and a.id in names]
                if (
                    isinstance(node.func, ast.Attribute)
                    and node.func.attr in _VERBS
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in names
                ):
                    writes.append((node.lineno, node.func.value.id))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                for match in _SQL.finditer(node.value):
                    if match.group(2).lower() in tables:
                        writes.append((node.lineno, f"sql:{match.group(2).lower()}"))
        for line, name in writes:
            table = name.removeprefix("sql:") if name.startswith("sql:") else names[name]
            owner = owners[table]
            if not (_within(module, owner.package) or _allowed(module, owner.writers)):
                hits.append(f"{module}:{line}: writes {table} of {owner.package}")
    return sorted(set(hits))


def test_no_feature_writes_a_table_it_does_not_own() -> None:
    assert violations(SRC, OWNERS) == []


def test_every_table_has_one_owner_that_declares_it() -> None:
    declared = declared_tables(SRC)
    assert set(declared) == set(OWNERS) == set(all_tables().tables)
    for table, (module, _) in declared.items():
        package = module.removesuffix(".tables")
        assert _within(OWNERS[table].package, package), f"{table} is declared in {module}"


def test_storage_lists_every_tables_module() -> None:
    found = {"modelport." + module for module, _ in declared_tables(SRC).values()}
    assert set(TABLE_MODULES) == found and len(TABLE_MODULES) == len(found)


def test_the_map_names_existing_packages() -> None:
    packages = {_module(SRC, p) for p in SRC.rglob("*.py")}
    named = {o.package for o in OWNERS.values()} | {p for o in OWNERS.values() for p in o.writers | o.readers}
    assert {p for p in named if p not in packages} == set()


def test_the_scan_finds_a_foreign_write_and_import(tmp_path: Path) -> None:
    # The check can fail: the gateway importing the accounts' table to write it, and billing writing it
    # with SQL text beside its allowed statement, are found; a read through an allowed import is not.
    (tmp_path / "accounts").mkdir()
    (tmp_path / "accounts" / "tables.py").write_text('teams = Table("teams", metadata)\n')
    (tmp_path / "gateway").mkdir()
    (tmp_path / "gateway" / "admit.py").write_text(
        "from modelport.accounts.tables import teams as t\n"
        "async def f(conn):\n    await conn.execute(update(t).values(balance_micros=0))\n"
    )
    (tmp_path / "billing").mkdir()
    (tmp_path / "billing" / "ledger.py").write_text(
        "from modelport.accounts.tables import teams\n"
        "def g():\n    return update(teams), select(teams)\n"
        "SWEEP = 'DELETE FROM teams WHERE id = ?'\n"
    )
    owners = {"teams": Owner("accounts", readers={"billing": "reads"})}
    assert violations(tmp_path, owners) == [
        "billing.ledger:3: writes teams of accounts",
        "billing.ledger:4: writes teams of accounts",
        "gateway.admit:1: imports teams of accounts",
        "gateway.admit:3: writes teams of accounts",
    ]
