"""A namespace's governance policy: which sources of records are trusted.

Written as YAML by a person (``strata policy set NS policy.yaml``) and stored with the namespace.
A record from a trusted source is promoted as it is captured; every other source's records wait in
quarantine for a person. The default trusts nobody.

```yaml
trust: [user]          # sources whose records skip quarantine: agent, user, tool, import
budgets:               # estimated tokens Strata's own model requests may use (core.services.preflight)
  session_tokens: 20000
  daily_tokens: 200000
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from core.db import write_transaction
from core.errors import InvalidInputError
from core.services.spaces import get_namespace
from core.timeutil import now_iso
from core.vocab import RECORD_SOURCES

MAX_POLICY_BYTES = 64 * 1024
_KEYS = ("trust", "budgets")
_BUDGET_KEYS = ("session_tokens", "daily_tokens")


@dataclass(frozen=True)
class Budgets:
    session_tokens: int | None = None
    daily_tokens: int | None = None


@dataclass(frozen=True)
class Policy:
    trust: tuple[str, ...] = ()
    budgets: Budgets = Budgets()

    def trusts(self, source: str) -> bool:
        return source in self.trust

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"trust": list(self.trust)}
        budgets = {
            k: v
            for k, v in (("session_tokens", self.budgets.session_tokens), ("daily_tokens", self.budgets.daily_tokens))
            if v is not None
        }
        if budgets:
            out["budgets"] = budgets
        return out


def parse_policy(data: Any, where: str = "policy") -> Policy:
    """A Policy from its parsed YAML/JSON form; anything unexpected is refused, naming the key."""
    if data is None:
        return Policy()
    if not isinstance(data, dict):
        raise InvalidInputError(f"{where}: expected a mapping with the key 'trust', got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in _KEYS)
    if unknown:
        raise InvalidInputError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")
    trust = data.get("trust") or []
    if not isinstance(trust, list) or not all(isinstance(s, str) for s in trust):
        raise InvalidInputError(f"{where}: 'trust' must be a list of sources ({', '.join(RECORD_SOURCES)})")
    wrong = [s for s in trust if s not in RECORD_SOURCES]
    if wrong:
        raise InvalidInputError(
            f"{where}: 'trust' names an unknown source {wrong[0]!r} (known: {', '.join(RECORD_SOURCES)})"
        )
    return Policy(trust=tuple(dict.fromkeys(trust)), budgets=_budgets(data.get("budgets"), where))


def _budgets(data: Any, where: str) -> Budgets:
    if data is None:
        return Budgets()
    if not isinstance(data, dict):
        raise InvalidInputError(f"{where}: 'budgets' must be a mapping of {' and '.join(_BUDGET_KEYS)}")
    unknown = sorted(str(k) for k in data if k not in _BUDGET_KEYS)
    if unknown:
        raise InvalidInputError(f"{where}: unknown budget {unknown[0]!r} (known: {', '.join(_BUDGET_KEYS)})")
    values = {}
    for key in _BUDGET_KEYS:
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InvalidInputError(f"{where}: budgets.{key} must be a whole number of tokens >= 0, got {value!r}")
        values[key] = value
    return Budgets(**values)


def read_policy_text(text: str, where: str) -> Policy:
    if len(text.encode("utf-8")) > MAX_POLICY_BYTES:
        raise InvalidInputError(f"{where}: larger than {MAX_POLICY_BYTES // 1024} KiB; a policy is a few lines")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise InvalidInputError(f"{where}: not valid YAML{at}: {getattr(exc, 'problem', None) or exc}") from exc
    return parse_policy(data, where)


def get_policy(namespace: str) -> Policy:
    ns = get_namespace(namespace)
    return parse_policy(ns.policy, f"the stored policy of namespace {namespace!r}")


def set_policy(namespace: str, policy: Policy) -> Policy:
    with write_transaction():
        ns = get_namespace(namespace)
        ns.policy = policy.to_json()
        ns.updated_at = now_iso()
        ns.save()
    return policy


__all__ = ["MAX_POLICY_BYTES", "Budgets", "Policy", "get_policy", "parse_policy", "read_policy_text", "set_policy"]
