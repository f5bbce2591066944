"""``lab image build|import|list|prune``: the base images guests are linked clones of."""

from __future__ import annotations

import argparse
import datetime
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from lab.commands.show import print_built
from lab.core.context import Context
from lab.core.text import cell
from lab.core.units import format_timestamp, iso_timestamp

if TYPE_CHECKING:
    from lab.app.image import BuildRequest


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "image",
        help="build, import, list or prune base guest images",
        description="Base images live in image_dir (see `lab config`), one folder per recipe"
        " hash, with a name symlink to the current one.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    build = actions.add_parser(
        "build",
        help="build a base image from a recipe in images/",
        description="Build images/RECIPE with mmdebstrap into a qcow2 disk, kernel, initrd"
        " and manifest. Cached: the same recipe (by content hash) is built once.",
    )
    build.add_argument(
        "--recipe", default=None, metavar="NAME", help="recipe folder under images/ (config: image)"
    )
    build.add_argument("--force", action="store_true", help="rebuild even when cached")
    build.set_defaults(run=run_build)

    imp = actions.add_parser(
        "import",
        help="use an existing qcow2 cloud image as a base image",
        description="Copy a qcow2 cloud image (with cloud-init) into image_dir. Guests of"
        " an imported image boot from its disk instead of a lab-built kernel.",
    )
    imp.add_argument("path", help="the qcow2 file")
    imp.add_argument("--name", default=None, help="image name (default: the file's stem)")
    imp.set_defaults(run=run_import)

    listing = actions.add_parser("list", help="list the images in image_dir")
    listing.add_argument("--json", action="store_true", help="print the images as JSON")
    listing.set_defaults(run=run_list)

    prune = actions.add_parser(
        "prune",
        help="remove old image folders no guest uses",
        description="Remove the image folders in image_dir that no image name points at and"
        " no libvirt domain (running or not) boots from or has in a disk's backing chain,"
        " and unfinished folders of killed builds.",
    )
    prune.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")
    prune.set_defaults(run=run_prune)


def run_build(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.image import build  # deferred: the parser is built for every command

    print_built(ctx, build(ctx, build_request(args)))
    return 0


def build_request(args: argparse.Namespace) -> BuildRequest:
    from lab.app.image import BuildRequest  # deferred, as above

    return BuildRequest(args.recipe, args.force)


def run_import(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.image import (  # deferred: the parser is built for every command
        ImportRequest,
        import_,
    )

    image = import_(ctx, ImportRequest(Path(args.path), args.name))
    ctx.out.print(str(image.directory), highlight=False)
    return 0


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.image import images as named  # deferred: the parser is built for every command

    images = named(ctx)
    if args.json:
        found = [
            {
                "name": image.name,
                "hash": image.hash,
                "folder": str(image.directory),
                "kind": image.manifest.get("kind"),
                "boot": image.manifest.get("boot"),
                "built_at": _moment(image.manifest.get("built_at"), iso_timestamp),
                "imported_at": _moment(image.manifest.get("imported_at"), iso_timestamp),
                "disk_file_bytes": image.manifest.get("sizes", {}).get("disk_file_bytes"),
            }
            for image in images
        ]
        ctx.print_json(found)
        return 0
    if not images:
        ctx.note(f"no images in {ctx.config.image_dir}. Run: lab image build")
        return 0
    table = Table("name", "kind", "boot", "hash", "built/imported", "disk", "folder")
    for image in images:
        manifest = image.manifest
        size = manifest.get("sizes", {}).get("disk_file_bytes", 0)
        table.add_row(*map(cell, (  # a manifest's and a folder's words: text, never markup
            image.name,
            str(manifest.get("kind", "?")),
            str(manifest.get("boot", "?")),
            image.hash[:12],
            str(_moment(manifest.get("built_at") or manifest.get("imported_at"),
                        format_timestamp) or "?"),
            f"{size / 1024**2:.0f} MiB",
            str(image.directory),
        )))  # fmt: skip
    ctx.out.print(table)
    return 0


def _moment(recorded: Any, written: Callable[[float], str | None]) -> Any:
    """A manifest's moment (ISO 8601 in UTC, to the second, as lab.images records it) as the
    output writes every moment (``written``: local time with its offset); a value that is no
    moment (a hand-edited manifest's) as it is."""
    try:
        return written(datetime.datetime.fromisoformat(recorded).timestamp())
    except (TypeError, ValueError):
        return recorded


def run_prune(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.image import prune  # deferred: the parser is built for every command

    pruned = prune(ctx, dry_run=args.dry_run)
    gone, kept = pruned.gone, pruned.kept
    verb = "would remove" if args.dry_run else "removed"
    for folder in gone:
        ctx.out.print(cell(f"{verb} {folder.path} ({folder.bytes / 1024**2:.0f} MiB)"),
                      highlight=False)  # fmt: skip
    freed = sum(folder.bytes for folder in gone) / 1024**3
    kept_names = ", ".join(path.name for path in kept) or "none"
    ctx.note(f"{verb} {len(gone)} folder(s), {freed:.1f} GiB; kept: {kept_names}")
    return 0
