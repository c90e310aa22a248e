"""Package discovery for the layout in pyproject.toml.

The repository root *is* the package ``openrl_inspect`` (``package-dir`` maps it), so
``setuptools.find_packages`` run on the root finds its subpackages by their short
names; they are prefixed here. Everything else is in pyproject.toml. A wheel test
(tests/test_packaging.py) checks that every module of the tree is in the wheel.
"""

from setuptools import find_packages, setup

NOT_SHIPPED = ["tests", "tests.*", "bench", "bench.*", "scripts", "scripts.*", "build", "dist"]

setup(
    packages=["openrl_inspect"]
    + [f"openrl_inspect.{name}" for name in find_packages(where=".", exclude=NOT_SHIPPED)],
)
