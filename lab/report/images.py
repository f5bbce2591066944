"""The base images a report's guests were cloned from, summarised from their manifests.

Each guest's host facts name its image and the image's hash; the manifest is read from the
image cache (``<image_dir>/<name>-<hash[:12]>/manifest.json``) when it is still there. When
it is not (another host, a cleaned cache), the report shows the hash alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.store import GuestRecord


@dataclass(frozen=True)
class ImageSummary:
    """What a reader needs of a base image: which one, its kernel, its packages, its trims."""

    name: str
    hash: str
    manifest_found: bool = False
    kernel: str | None = None
    packages: int | None = None
    trims: tuple[tuple[str, str], ...] = ()  # (why, the command that does it, or "")
    description: str = ""


def summary_from_manifest(
    name: str, image_hash: str, manifest: Mapping[str, Any] | None
) -> ImageSummary:
    """The summary of image ``name`` at ``image_hash``; ``manifest`` None: the hash only."""
    if manifest is None:
        return ImageSummary(name=name, hash=image_hash)
    trims: list[tuple[str, str]] = []
    for trim in manifest.get("trims") or []:
        if isinstance(trim, Mapping):
            trims.append((str(trim.get("why", "")), str(trim.get("run", ""))))
        else:  # manifests of earlier builders list each trim as one string
            trims.append((str(trim), ""))
    packages = manifest.get("packages")
    return ImageSummary(
        name=name,
        hash=image_hash,
        manifest_found=True,
        kernel=manifest.get("kernel_version"),
        packages=len(packages) if isinstance(packages, Mapping | list) else None,
        trims=tuple(trims),
        description=str(manifest.get("description", "")),
    )


def read_manifest(image_dir: Path, name: str, image_hash: str) -> dict[str, Any] | None:
    """The manifest of that exact image in the cache, or None (absent, unreadable, other)."""
    if not name or not image_hash:
        return None
    path = Path(image_dir) / f"{name}-{image_hash[:12]}" / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("hash") not in (None, image_hash):
        return None
    return manifest


def image_summaries(guests: Iterable[GuestRecord], image_dir: Path) -> list[ImageSummary]:
    """One summary per distinct (image, hash) the guests' host facts name, in guest order."""
    seen: dict[tuple[str, str], ImageSummary] = {}
    for guest in guests:
        facts = guest.host_facts or {}
        name, image_hash = str(facts.get("image") or ""), str(facts.get("image_hash") or "")
        if not image_hash or (name, image_hash) in seen:
            continue
        manifest = read_manifest(image_dir, name, image_hash)
        seen[name, image_hash] = summary_from_manifest(name, image_hash, manifest)
    return list(seen.values())
