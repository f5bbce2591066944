"""``lab image``'s actions: a base image built from a recipe in images/ (cached by hash) or
imported from a qcow2 file, the images the image directory holds, and its folders nothing uses
removed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab.core.context import Context
from lab.core.errors import UnknownNameError
from lab.core.names import check_name
from lab.core.paths import IMAGES_DIR
from lab.images.build import build_image
from lab.images.image import BaseImage, import_image, list_images
from lab.images.prune import ImageFolder, prune_images


@dataclass(frozen=True)
class BuildRequest:
    recipe: str | None = None  # None: the `image` of lab.toml
    force: bool = False  # rebuild even when the recipe's hash is cached


@dataclass(frozen=True)
class BuildResult:
    directory: Path


def build(ctx: Context, request: BuildRequest) -> BuildResult:
    """Build (or find cached) the image of ``request.recipe``, with a spinner on stderr."""
    recipe = check_name("recipe", request.recipe or ctx.config.image, "--recipe")
    recipe_dir = IMAGES_DIR / recipe
    if not recipe_dir.is_dir():
        known = [p.name for p in IMAGES_DIR.iterdir() if (p / "recipe.toml").is_file()]
        raise UnknownNameError("recipe", recipe, known)
    with ctx.err.status(f"building image {recipe}", spinner="dots") as status:

        def log(message: str) -> None:
            ctx.note(message)
            status.update(message.split(" (log:")[0])

        image = build_image(
            recipe_dir, Path(ctx.config.image_dir), ctx.host, log, force=request.force,
            clock=ctx.clock,
        )  # fmt: skip
    return BuildResult(image.directory)


@dataclass(frozen=True)
class ImportRequest:
    path: Path  # the user's qcow2 image (never written to)
    name: str | None = None  # None: the file's name up to its first dot


def import_(ctx: Context, request: ImportRequest) -> BuildResult:
    """Copy ``request.path`` into the image directory, with a spinner on stderr."""
    path = request.path
    with ctx.err.status(f"importing {path}", spinner="dots") as status:

        def log(message: str) -> None:
            ctx.note(message)
            status.update(message)

        image = import_image(
            path, Path(ctx.config.image_dir), request.name or path.stem.split(".")[0], ctx.host,
            log, clock=ctx.clock,
        )  # fmt: skip
    return BuildResult(image.directory)


def images(ctx: Context) -> list[BaseImage]:
    """Every named image of the image directory whose folder is complete, by name."""
    return list_images(Path(ctx.config.image_dir))


@dataclass(frozen=True)
class PruneResult:
    gone: list[ImageFolder]  # removed, or with ``dry_run`` to be removed
    kept: list[Path]  # what a name points at, or a guest boots or is backed by


def prune(ctx: Context, dry_run: bool = False) -> PruneResult:
    """Remove the image folders no name points at and no guest of libvirt uses."""
    gone, kept = prune_images(Path(ctx.config.image_dir), ctx.libvirt, ctx.host, dry_run=dry_run)
    return PruneResult(gone, kept)
