"""The headless Chromium the page-drawing tests screenshot with (None: those tests skip)."""

import shutil
from pathlib import Path


def chromium() -> str | None:
    for name in ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    path = Path("/usr/lib/chromium/chromium-headless-shell")
    return str(path) if path.is_file() else None
