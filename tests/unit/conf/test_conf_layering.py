"""conf/model.py is pure data: the parsers import it, never the other way, and the public classmethod
defined on it by k8s_backend.conf works as one of its own."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import k8s_backend
from k8s_backend.conf import model
from k8s_backend.conf.model import KubernetesConf

CONF_DIR = Path(model.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_model_imports_no_parser_not_even_lazily() -> None:
    imports = imported_modules(CONF_DIR / "model.py")
    assert not [name for name in imports if name.startswith("k8s_backend.conf.parse")]
    # Pure data types and name matching (which keys are credentials'), no parsing.
    data_only = ("k8s_backend.conf.frozen", "k8s_backend.kube.settings", "k8s_backend.conf.credentials")
    assert not [n for n in imports if n.startswith("k8s_backend") and not n.startswith(data_only)]


def test_from_spark_conf_is_a_classmethod_of_the_one_public_class() -> None:
    assert k8s_backend.KubernetesConf is KubernetesConf
    method = KubernetesConf.from_spark_conf
    assert inspect.ismethod(method) and method.__self__ is KubernetesConf
    assert method.__name__ == "from_spark_conf" and "ConfigError" in (method.__doc__ or "")
    conf = k8s_backend.KubernetesConf.from_spark_conf({"spark.executor.cores": "2"})
    assert isinstance(conf, KubernetesConf) and conf.executor.default_profile.cores == 2
    assert conf.with_properties({"spark.executor.cores": "3"}).executor.default_profile.cores == 3
