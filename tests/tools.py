"""External tools some exporter tests need (Node with the real Mermaid parser, Graphviz).
tests/install-tools.sh installs them; locally a missing tool skips its tests with the
reason, but under CI (CI set) it fails them, so a CI run cannot silently skip them."""

from __future__ import annotations

import os
import shutil

import pytest

from helpers import TESTS

MERMAID_DIR = TESTS / "mermaid"


def require(ok: bool, why: str) -> None:
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{why} (CI must run this test: tests/install-tools.sh installs it)")
    pytest.skip(f"{why}; run tests/install-tools.sh")


def node() -> str:
    exe = shutil.which("node")
    require(exe is not None, "Node.js is not installed")
    require((MERMAID_DIR / "node_modules" / "mermaid").is_dir(),
            "the npm package mermaid is not installed in tests/mermaid")
    return exe


def graphviz_dot() -> str:
    exe = shutil.which("dot")
    require(exe is not None, "Graphviz (`dot`) is not installed")
    return exe


def chromium() -> tuple[str, str]:
    """Chromium and its WebDriver (Debian's chromium and chromium-driver), for the trace
    explorer's browser tests; Selenium drives them."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    require(browser is not None, "Chromium is not installed")
    require(driver is not None, "chromedriver (Debian's chromium-driver) is not installed")
    try:
        import selenium  # noqa: F401
    except ImportError:
        require(False, "the Python package selenium is not installed (pip install -e '.[test]')")
    return browser, driver
