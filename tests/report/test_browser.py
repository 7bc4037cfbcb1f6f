"""Every committed card.html under docs/examples/, opened from disk in a real headless Chromium (Debian's
``chromium``, driven through its ``chromedriver`` by selenium; no browser or driver is downloaded) with the
network closed to it, as a reader would open an attached card. Checked per page: no console error; nothing
fetched (the page is self-contained: every resource a ``data:`` URI); the verdict inside the first screen, and
drawn (dark text pixels in the screenshot where its element is); every plot loaded, of non-zero natural size and
inside the document, one per PNG the card lists; every section folded or unfolded as the page says; and a
click on a table's header sorting its rows. Selected with ``-m browser``; skipped, with the install line, where
the binaries are missing (``make test`` installs them)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib import image

DOCS_EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
PAGES = sorted(DOCS_EXAMPLES.rglob("card.html"))
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
INSTALL_HINT = "install them with `apt-get update && apt-get install -y chromium chromium-driver` (make test does)"
#: The first screen a reader sees (CSS pixels).
WIDTH, HEIGHT = 1280, 900
#: Launch flags that work as root, offline, without a GPU (nothing phones home; a fresh profile per session).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    f"--window-size={WIDTH},{HEIGHT}",
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not Path(binary).is_file() and not shutil.which(Path(binary).name):
            pytest.skip(
                f"`{Path(binary).name}` is not installed: these tests render card.html in Chromium; {INSTALL_HINT}"
            )
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is in the dev extra: pip install -e '.[dev]'"
    )
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM if Path(CHROMIUM).is_file() else str(shutil.which("chromium"))
    for flag in (*FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(CHROMEDRIVER if Path(CHROMEDRIVER).is_file() else str(shutil.which("chromedriver")))
    browser = webdriver.Chrome(service=service, options=options)
    browser.set_page_load_timeout(60)
    try:
        yield browser
    finally:
        browser.quit()


def _open(driver: Any, page: Path) -> list[dict[str, Any]]:
    """Load ``page`` with the viewport at WIDTH x HEIGHT; the console messages it logged."""
    driver.get_log("browser")  # drop what an earlier page left
    driver.set_window_size(WIDTH, HEIGHT)
    driver.get(page.as_uri())
    driver.execute_script("window.scrollTo(0, 0)")
    logged: list[dict[str, Any]] = driver.get_log("browser")
    return logged


def _card_plots(page: Path) -> list[str]:
    """The PNGs the card beside ``page`` lists and has on disk (card.json or sweep.json ``plots``)."""
    data = json.loads(
        (page.parent / ("sweep.json" if (page.parent / "sweep.json").is_file() else "card.json")).read_text()
    )
    return [p for p in data.get("plots") or [] if p.endswith(".png") and (page.parent / p).is_file()]


def test_there_is_a_page_per_committed_card() -> None:
    cards = sorted({*DOCS_EXAMPLES.rglob("card.json"), *DOCS_EXAMPLES.rglob("sweep.json")})
    assert sorted(c.parent / "card.html" for c in cards) == PAGES and len(PAGES) >= 5


@pytest.mark.parametrize("page", PAGES, ids=[str(p.parent.relative_to(DOCS_EXAMPLES)) for p in PAGES])
def test_a_committed_card_reads_in_chromium(driver: Any, page: Path, tmp_path: Path) -> None:
    logged = _open(driver, page)
    assert [m for m in logged if m.get("level") == "SEVERE"] == []
    fetched = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith('data:'))"
    )
    assert fetched == []

    viewport = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    box = driver.execute_script("return document.getElementById('verdict').getBoundingClientRect().toJSON()")
    assert box["height"] > 0 and box["top"] >= 0 and box["bottom"] <= viewport[1] and box["right"] <= viewport[0]
    shot = tmp_path / "first-screen.png"
    assert driver.save_screenshot(str(shot))
    pixels = image.imread(shot)
    ratio = pixels.shape[1] / viewport[0]  # device pixels per CSS pixel
    top, bottom = int(box["top"] * ratio), int(box["bottom"] * ratio)
    left, right = int(box["left"] * ratio), int(box["right"] * ratio)
    verdict = pixels[top:bottom, left:right, :3]
    assert verdict.size and float((verdict.mean(axis=2) < 0.4).mean()) > 0.01  # dark text drawn there

    images = driver.execute_script(
        """return Array.from(document.images).map(img => {
             const r = img.getBoundingClientRect();
             return {alt: img.alt, complete: img.complete, w: img.naturalWidth, h: img.naturalHeight,
                     left: r.left + window.scrollX, right: r.right + window.scrollX,
                     top: r.top + window.scrollY, bottom: r.bottom + window.scrollY,
                     docw: document.documentElement.scrollWidth, doch: document.documentElement.scrollHeight};
           })"""
    )
    assert [i["alt"] for i in images] == _card_plots(page)
    for i in images:
        assert i["complete"] and i["w"] > 0 and i["h"] > 0, i
        assert 0 <= i["left"] < i["right"] <= i["docw"] and 0 <= i["top"] < i["bottom"] <= i["doch"], i
    folded = driver.execute_script(
        "return Array.from(document.querySelectorAll('details'))"
        ".map(d => [d.querySelector('summary').textContent, d.open])"
    )
    assert folded and dict(folded).get("Provenance") is False and dict(folded).get("Plots", True) is True


def test_a_table_sorts_by_its_clicked_header(driver: Any) -> None:
    """The 7B sweep's cells table by speedup: ascending on the first click, descending on the second."""
    page = DOCS_EXAMPLES / "h200" / "h200-7b-sweep" / "card.html"
    _open(driver, page)
    column = "speedup"

    def speedups() -> list[float]:
        values: list[str] = driver.execute_script(
            """const [table, col] = arguments;
               return Array.from(table.tBodies[0].rows).map(r => r.cells[col].textContent)""",
            *driver.execute_script(
                """const th = Array.from(document.querySelectorAll('th')).find(h => h.textContent === arguments[0]);
                   th.click(); return [th.closest('table'), th.cellIndex]""",
                column,
            ),
        )
        return [float(v) for v in values]

    ascending = speedups()
    assert len(ascending) >= 10 and ascending == sorted(ascending)
    descending = speedups()
    assert descending == sorted(ascending, reverse=True)
    assert np.isclose(sum(ascending), sum(descending))
