"""Where the lab's own files live (the project tree it was installed from)."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
GUEST_DIR = PROJECT_ROOT / "guest"
IMAGES_DIR = PROJECT_ROOT / "images"
RESULTS_DIR = PROJECT_ROOT / "results"
