"""Setup script: the metadata lives in setup.cfg; this file adds the build of the Spark bridge jar.

``build_py`` compiles ``k8s_backend/spark/java`` with ``javac`` against the jars of a pyspark 4.x
installation into ``k8s_backend/spark/jars/k8s-backend-bridge.jar`` (shipped as package data):

* a JDK (javac) and a pyspark 4.x are found: the jar is compiled into the build (or, for an editable
  install, into the source tree). pyspark is looked for where the build runs, then in this interpreter's
  and its base interpreter's site-packages, which an isolated (PEP 517) build can still see;
* no javac, but a built jar is already in the source tree (e.g. an sdist that carries one): it ships;
* no javac and no built jar: the build fails and says which JDK to install;
* javac, but no pyspark visible to the build: the jar is left out and ``k8s_backend.spark`` builds it on
  first use into the user cache (``~/.cache/k8s_backend``; see ``k8s_backend/spark/jar.py``).
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from types import ModuleType

# setuptools ships no type hints everywhere; `unused-ignore` keeps this clean where it does.
from setuptools import setup  # type: ignore[import-untyped,unused-ignore]
from setuptools.command.build_py import build_py  # type: ignore[import-untyped,unused-ignore]
from setuptools.errors import SetupError  # type: ignore[import-untyped,unused-ignore]

HERE = Path(__file__).resolve().parent
JAR = Path("k8s_backend", "spark", "jars", "k8s-backend-bridge.jar")
PTH = Path("k8s_backend", "spark", "k8s_backend_pyspark.pth")
log = logging.getLogger("k8s_backend.setup")


def load_javac_module() -> ModuleType:
    """k8s_backend/spark/javac.py by path: the package's own dependencies may be missing at build time."""
    path = HERE / "k8s_backend" / "spark" / "javac.py"
    spec = importlib.util.spec_from_file_location("_k8s_backend_javac", path)
    if spec is None or spec.loader is None:
        raise SetupError("cannot load k8s_backend/spark/javac.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithBridgeJar(build_py):  # type: ignore[misc,unused-ignore]
    """``build_py`` plus the bridge jar."""

    def run(self) -> None:
        super().run()
        self.build_bridge_jar()
        self.add_pyspark_pth()

    def add_pyspark_pth(self) -> None:
        """The ``.pth`` that readies ``pyspark --master pyk8s://...`` goes to site-packages' top level
        (an editable install cannot place it there; see docs/entry-points.md)."""
        if getattr(self, "editable_mode", False):
            return
        self.copy_file(str(HERE / PTH), str(Path(self.build_lib) / PTH.name))

    def build_bridge_jar(self) -> None:
        javac = load_javac_module()
        editable = bool(getattr(self, "editable_mode", False))
        target = (HERE if editable else Path(self.build_lib)) / JAR
        compiler = javac.find_javac()
        jars_dir = javac.find_pyspark_jars()
        if compiler is not None and jars_dir is not None:
            try:
                javac.build_jar(target, jars_dir, javac=compiler)
            except javac.JarBuildError as error:
                raise SetupError(str(error)) from error
            log.info("built %s against %s", target, jars_dir)
            return
        if (HERE / JAR).is_file():
            log.info("no JDK or pyspark at build time; shipping the prebuilt %s", JAR)
            return
        if compiler is None:
            raise SetupError(
                f"k8s_backend needs its Spark bridge jar ({JAR}), which is compiled at install time, "
                f"and no javac was found: {javac.JDK_HINT}. Then install again, or install a wheel of "
                "k8s_backend that already carries the jar."
            )
        log.warning(
            "javac found but no pyspark 4.x visible to this build (PEP 517 build isolation?): the bridge jar "
            "will be built on first use of k8s_backend.spark"
        )


if __name__ == "__main__":  # setuptools' PEP 517 backend runs this file as __main__ too
    setup(cmdclass={"build_py": BuildPyWithBridgeJar})
