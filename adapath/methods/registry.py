"""Method name -> ``MethodSpec``, found by walking ``adapath.methods``.

Every module (and sub-package ``__init__``) of ``adapath.methods`` that defines a module-level
``METHODS`` list is registered, so a new method is one new file. Method modules keep torch,
vLLM and the like inside their builders: listing methods imports no heavy package.
"""

from __future__ import annotations

import importlib
import pkgutil

from adapath.errors import InputError
from adapath.methods.base import MethodSpec

_SKIP = {"base", "registry", "run"}
_REGISTRY: dict[str, MethodSpec] | None = None


def _discover() -> dict[str, MethodSpec]:
    import adapath.methods as package

    found: dict[str, MethodSpec] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name in _SKIP or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for spec in getattr(module, "METHODS", ()):
            if spec.name in found:
                raise RuntimeError(f"method {spec.name!r} is registered twice")
            found[spec.name] = spec
    return found


def all_methods() -> dict[str, MethodSpec]:
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _discover()
    return _REGISTRY


def get_method(name: str, given_as: str = "--method") -> MethodSpec:
    """The registered method ``name``; an unknown name is an error naming it as the user gave
    it (``given_as``: the option, or the argument's name, e.g. ``NAME`` of `adapath methods`)."""
    methods = all_methods()
    if name not in methods:
        raise InputError(f"{given_as} {name!r}: choose from {', '.join(methods)} (see `adapath methods`)")
    return methods[name]
