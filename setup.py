"""The package list, found rather than written: every package under checker/ ships, and
tests/test_packaging.py compares the built wheel with the tree. The language (spec/) and
the shipped models (models/) are mapped into the package as checker.spec and
checker.models; everything else about the project is in pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["checker", "checker.*"]) + ["checker.spec", "checker.models"],
    package_dir={"checker.spec": "spec", "checker.models": "models"},
    package_data={"checker.spec": ["*.lark", "*.json", "*.md"], "checker.models": ["*.spec"]},
)
