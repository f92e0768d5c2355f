"""The estimator catalogue (``dplr plugins --json``) and parameter checks.

Keyword arguments of every estimator class are checked against the
catalogue: an unknown name, a value of the wrong type or outside the
declared choices raises :class:`~dplr.errors.ParameterError` before dplr
runs. Ranges and checks that involve the data are left to dplr's own
pre-flight check, which refuses them with exit code 2 (:class:`UsageError`)
before anything is spent.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ._cli import config, run_json
from .errors import ParameterError

__all__ = ["Param", "EstimatorInfo", "catalogue", "describe", "estimator_names", "clear_cache"]


@dataclass(frozen=True)
class Param:
    """One estimator parameter as the catalogue declares it."""

    name: str
    type: str  #: int, float, string or bool
    default: Optional[str] = None
    required: bool = False
    min: Optional[float] = None
    max: Optional[float] = None
    choices: Tuple[str, ...] = ()
    doc: str = ""

    def encode(self, value: Any, estimator: str) -> str:
        """``value`` as dplr's ``--set`` text, or :class:`ParameterError`."""
        where = f"{estimator}: parameter {self.name!r}"
        if self.type == "bool":
            if isinstance(value, bool) or (hasattr(value, "dtype") and getattr(value, "dtype").kind == "b"):
                return "true" if bool(value) else "false"
            raise ParameterError(f"{where} is a bool, got {type(value).__name__} {value!r}")
        if self.type == "int":
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                if isinstance(value, numbers.Real) and float(value).is_integer() and not isinstance(value, bool):
                    value = int(value)
                else:
                    raise ParameterError(f"{where} is an int, got {type(value).__name__} {value!r}")
            return str(int(value))
        if self.type == "float":
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ParameterError(f"{where} is a float, got {type(value).__name__} {value!r}")
            f = float(value)
            if not math.isfinite(f):
                raise ParameterError(f"{where} must be finite, got {f!r}")
            return repr(f)
        # string
        if not isinstance(value, str):
            if isinstance(value, numbers.Real) and not isinstance(value, bool) and not self.choices:
                value = repr(value) if isinstance(value, float) else str(value)
            else:
                raise ParameterError(f"{where} is a string, got {type(value).__name__} {value!r}")
        if self.choices and value not in self.choices:
            raise ParameterError(f"{where} must be one of {', '.join(self.choices)}, got {value!r}")
        return value


@dataclass(frozen=True)
class EstimatorInfo:
    """One estimator of the catalogue."""

    name: str
    plugin: str
    data_kind: str  #: rows, trace or users
    grants: Tuple[str, ...]  #: budget forms accepted: approx (ε, δ), pure (ε), zcdp (ρ)
    params: Dict[str, Param] = field(default_factory=dict)
    summary: str = ""
    guarantee: str = ""
    references: Tuple[str, ...] = ()
    version: str = ""

    @property
    def non_private(self) -> bool:
        """Whether this is a non-private reference (run only with non_private=True)."""
        return self.guarantee.startswith("none")

    def encode(self, params: Dict[str, Any]) -> List[str]:
        """``--set`` flags for ``params``, checked; ``None`` values are left unset."""
        out: List[str] = []
        for k, v in params.items():
            if v is None:
                continue
            p = self.params.get(k)
            if p is None:
                raise ParameterError(
                    f"{self.name}: unknown parameter {k!r} (it takes: {', '.join(sorted(self.params)) or 'none'})")
            out += ["--set", f"{k}={p.encode(v, self.name)}"]
        return out

    def doc(self) -> str:
        """A docstring describing the estimator and its parameters."""
        lines = [f"{self.summary}", "", f"dplr estimator ``{self.name}`` (plugin {self.plugin}), data kind "
                 f"{self.data_kind}.", f"Guarantee: {self.guarantee}.",
                 f"Budgets accepted: {', '.join(self.grants)}.", "", "Parameters (checked against the catalogue):"]
        for p in self.params.values():
            d = "required" if p.required else (f"default {p.default}" if p.default is not None else "optional")
            ch = f" {{{', '.join(p.choices)}}}" if p.choices else ""
            lines.append(f"    {p.name} ({p.type}, {d}){ch}: {p.doc}")
        if self.references:
            lines += ["", "References:"] + [f"    {r}" for r in self.references]
        return "\n".join(lines)


_cache: Dict[Tuple[str, Tuple[str, ...]], Dict[str, EstimatorInfo]] = {}


def _param(d: Dict[str, Any]) -> Param:
    return Param(name=d["name"], type=d.get("type", "string"), default=d.get("default"),
                 required=bool(d.get("required", False)), min=d.get("min"), max=d.get("max"),
                 choices=tuple(d.get("choices") or ()), doc=d.get("doc", ""))


def catalogue(refresh: bool = False) -> Dict[str, EstimatorInfo]:
    """Every installed estimator, by name (cached per binary and plugin dirs).

    Runs ``dplr plugins --json`` with the configured ``--plugin-dir``s once;
    ``refresh=True`` asks again (after installing a plugin).
    """
    key = (config.resolve_binary(), tuple(map(str, config.plugin_dirs)))
    if refresh or key not in _cache:
        plugins = run_json(["plugins", "--json", *config.plugin_args()])
        cat: Dict[str, EstimatorInfo] = {}
        for pl in plugins or []:
            for e in pl.get("estimators") or []:
                if e["name"] in cat:  # the CLI reports shadowed estimators; first wins
                    continue
                cat[e["name"]] = EstimatorInfo(
                    name=e["name"], plugin=pl.get("name", ""), data_kind=e.get("data_kind", "rows"),
                    grants=tuple(e.get("grants") or ()),
                    params={p["name"]: _param(p) for p in e.get("params") or []},
                    summary=e.get("summary", ""), guarantee=e.get("guarantee", ""),
                    references=tuple(e.get("references") or ()), version=e.get("version", ""))
        _cache[key] = cat
    return _cache[key]


def clear_cache() -> None:
    """Forget the catalogues read so far."""
    _cache.clear()


def describe(name: str) -> EstimatorInfo:
    """The catalogue entry of estimator ``name`` (:class:`ParameterError` if
    it is not installed)."""
    cat = catalogue()
    if name not in cat:
        raise ParameterError(f"unknown estimator {name!r} (installed: {', '.join(sorted(cat))})")
    return cat[name]


def estimator_names(kind: Optional[str] = None) -> List[str]:
    """Installed estimator names, optionally only those reading ``kind`` data."""
    return sorted(n for n, e in catalogue().items() if kind is None or e.data_kind == kind)
