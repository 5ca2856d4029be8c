"""Defaults apart from the server and the browser, so that ``hatp-ui --help`` can name them cheaply."""

from pathlib import Path
from typing import Final

SERVER: Final = "ui://fakeapp"
DEFAULT_CHROMIUM: Final = Path("/usr/bin/chromium")
