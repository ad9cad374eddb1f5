"""A headless Chromium for the browser tests: Debian's ``chromium`` driven by Selenium through
Debian's ``chromium-driver`` (never a downloaded browser). Tests that need it skip, saying how to
install it, where either is missing; with ``HEAR2ACT_REQUIRE_BROWSER=1`` (``.ci/run`` sets it)
they fail instead, so CI cannot pass them unseen."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

INSTALL_HINT = (
    "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver) "
    'and selenium (pip install -e ".[test]")'
)
#: Where the README's screenshots are written when a test run takes them.
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "img"


def _binaries() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or (
        "/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else None
    )
    return (browser, driver) if browser and driver else None


def _missing() -> None:
    if os.environ.get("HEAR2ACT_REQUIRE_BROWSER") == "1":
        pytest.fail(f"HEAR2ACT_REQUIRE_BROWSER=1 but the browser tests cannot run: {INSTALL_HINT}")
    pytest.skip(INSTALL_HINT)


def start_browser(downloads: Path | None = None):
    """A headless Chromium WebDriver (the caller quits it), or a pytest skip."""
    found = _binaries()
    if found is None:
        _missing()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing()
    browser, driver = found
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,900",
        "--autoplay-policy=no-user-gesture-required",
        "--allow-file-access-from-files",
    ):
        options.add_argument(arg)
    if downloads is not None:
        options.add_experimental_option("prefs", {"download.default_directory": str(downloads)})
    return webdriver.Chrome(service=Service(driver), options=options)


@pytest.fixture
def browser() -> Iterator:
    """A fresh headless Chromium per test."""
    driver = start_browser()
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def media_state(driver, element) -> dict:
    """Load and play an ``<audio>`` element; its duration, error code and whether it played."""
    return driver.execute_async_script(
        """
        const [el, done] = arguments;
        const finish = () => done({duration: el.duration, error: el.error ? el.error.code : null,
                                   played: el.played.length > 0 && el.currentTime > 0});
        el.muted = true;
        el.addEventListener('error', finish, {once: true});
        el.addEventListener('timeupdate', () => { if (el.currentTime > 0) finish(); });
        el.load();
        el.play().catch(() => finish());
        setTimeout(finish, 10000);
        """,
        element,
    )
