"""``lab image build``'s action: a base image from a recipe in images/, cached by hash."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab.core.context import Context
from lab.core.errors import UnknownNameError
from lab.core.names import check_name
from lab.core.paths import IMAGES_DIR
from lab.images.build import build_image


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
