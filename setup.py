"""The one build step pyproject.toml cannot declare: the reference examples ship in the wheel.

examples/ stays at the top of the checkout (README, tests and `make demo` name it there); the wheel
carries a copy as alicerce/examples/, where `alicerce init --example NAME` finds it when installed.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithExamples(build_py):
    def run(self) -> None:
        super().run()
        into = Path(self.build_lib) / "alicerce" / "examples"
        into.mkdir(parents=True, exist_ok=True)
        for spec in sorted(Path("examples").glob("*.yaml")):
            self.copy_file(str(spec), str(into / spec.name))


setup(cmdclass={"build_py": BuildPyWithExamples})
