"""Save a screenshot of every dashboard page, from the demo, into docs/screenshots/.

Usage:  .venv/bin/python scripts/screenshots.py [--out docs/screenshots]
Needs:  Debian's chromium and the test extras (Playwright), as the browser tests do.

It starts ``openrl-inspect demo`` on a free loopback port, picks the model, session and
node to show from the demo's own GraphQL answers (the most urgent model, its session),
and saves one full-page PNG per page, in light and dark.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.dashboard import ask, dashboard, demo_server  # noqa: E402


def pages(base: str) -> list[tuple[str, str, str]]:
    """(file stem, route, selector that says the page has its data)."""
    overview = ask(base, "overview")["data"]
    briefs = overview["attention"]["models"]
    urgent = briefs[0]["model"]["id"]
    waiting = next((b["model"]["id"] for b in briefs if b["verdict"] == "WAITING"), urgent)
    session = briefs[0]["model"]["sessionId"]
    return [
        ("overview", "#/overview", "[data-section=models] tbody tr"),
        ("model", f"#/model/{urgent}", "[data-section=diagnosis]"),
        ("model-waiting", f"#/model/{waiting}", "[data-section=why-waiting]"),
        ("session", f"#/session/{session}", "[data-section=models] tbody tr"),
        ("cluster", "#/cluster", "[data-node]"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with demo_server() as base, dashboard(base) as ui:
        for scheme in ("light", "dark"):
            ui.page.emulate_media(color_scheme=scheme)
            for stem, route, ready in pages(base):
                ui.open(route)
                ui.page.wait_for_selector(ready)
                ui.page.wait_for_timeout(300)  # let the SVG charts settle
                name = stem if scheme == "light" else f"{stem}-dark"
                path = args.out / f"{name}.png"
                ui.page.screenshot(path=str(path), full_page=True)
                print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        ui.assert_clean()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
