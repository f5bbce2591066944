"""The ``lab`` command line: a table from sub-command to the module that runs it.

Each command module defines ``register(subparsers)`` (which sets ``run``) and imports
its heavy dependencies inside ``run``. One handler here turns every :class:`LabError`
into one line on stderr and an exit code; tracebacks only with ``--debug``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from lab import __version__
from lab.core.errors import LabError, RequirementError, StdoutError
from lab.core.text import MESSAGE_CHARS, one_line

HINT_CHARS = 360  # of an error line's MESSAGE_CHARS that its hint may take: a whole command to
# run next (a resume command names the store), which is no use cut

# Order is the order of `lab --help`.
# Exit statuses other than the errors' own (lab.core.errors and its subclasses): the README's
# "Exit status" table lists them all, and tests/unit/test_exit_status.py keeps it true.
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
BROKEN_PIPE = 141  # stdout closed before the output was written (128 + SIGPIPE)

COMMAND_MODULES = (
    "lab.commands.variants",
    "lab.commands.xml",
    "lab.commands.diff",
    "lab.commands.config",
    "lab.commands.host",
    "lab.commands.image",
    "lab.commands.up",
    "lab.commands.status",
    "lab.commands.ssh",
    "lab.commands.console",
    "lab.commands.down",
    "lab.commands.workloads",
    "lab.commands.run",
    "lab.commands.study",
    "lab.commands.import_",
    "lab.commands.compare",
    "lab.commands.plan",
    "lab.commands.report",
    "lab.commands.export",
    "lab.commands.runs",
    "lab.commands.history",
    "lab.commands.bisect",
    "lab.commands.store",
    "lab.commands.demo",
    "lab.commands.completion",
)


def command_name(module: str) -> str:
    """The command a module of COMMAND_MODULES registers: its name ("import_": import)."""
    return module.rsplit(".", 1)[1].rstrip("_")


def command_word(words: Sequence[str]) -> str | None:
    """The command a command line runs: its first word that is neither an option nor the
    value of --config; None when there is none."""
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = "=" not in word and len(word) > 3 and "--config".startswith(word)
        else:
            return word
    return None


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose error is one line (``one_line``): it echoed a 1 MB value
    whole. Sub-commands' parsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line's parser; with ``command`` (a command's name, not completion,
    which describes them all) only that command is registered, which is all running it
    needs: importing every command module took 0.1 s, a twentieth of lab compare at scale.
    Any other word (a typo, an option) gets the whole parser and its message."""
    modules = [m for m in COMMAND_MODULES if command_name(m) == command != "completion"]
    parser = _Parser(
        prog="lab",
        description=(
            "A reproducible A/B performance laboratory for KVM guests: twin guests that differ"
            " only by a declared variant (e.g. thp vs shp1g), workloads run on both at once,"
            " every sample stored, statistics a reviewer would trust."
        ),
        epilog="Run `lab COMMAND --help` for the options of each command.",
    )
    parser.add_argument("--version", action="version", version=f"lab {__version__}")
    parser.add_argument("--config", metavar="PATH", help="lab.toml to read (default: search)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    # `lab completion` describes the whole command line: handed in, as commands import no CLI.
    parser.set_defaults(parser=parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules or COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    for group in _subcommands(parser).values():
        for each in (group, *_subcommands(group).values()):
            _one_json_spelling(each)
            # the crash hint says "run the same command with --debug": it must be taken
            # after the command too; SUPPRESS keeps a --debug given before the command
            if "--debug" not in each._option_string_actions:
                each.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                  help=argparse.SUPPRESS)  # fmt: skip
        _group_options_after_actions(group)
    return parser


class _FormatAsJson(argparse.Action):
    """``--format json|table`` of a command whose code reads ``args.json``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:  # fmt: skip
        namespace.json = values == "json"


def _one_json_spelling(command: argparse.ArgumentParser) -> None:
    """``--format json`` is how every command is asked for JSON, and ``--json`` its alias: a
    command with only ``--json`` also takes ``--format table|json``, and one with only
    ``--format`` (compare: json; export: jsonl) also takes ``--json``."""
    options = command._option_string_actions
    if "--json" in options and "--format" not in options:
        command.add_argument(
            "--format", choices=("table", "json"), action=_FormatAsJson, dest="json",
            default=argparse.SUPPRESS, help="table (default) or json (the same as --json)",
        )  # fmt: skip
    elif "--format" in options and "--json" not in options:
        choices = options["--format"].choices or ()
        json_format = next((c for c in ("json", "jsonl") if c in choices), None)
        if json_format is not None:
            command.add_argument(
                "--json", action="store_const", const=json_format, dest="format",
                default=argparse.SUPPRESS, help=f"the same as --format {json_format}",
            )  # fmt: skip


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _group_options_after_actions(group: argparse.ArgumentParser) -> None:
    """A command group's options (``lab runs --db X``) also after its action, where people
    type them (``lab runs show KEY --db X``): each action's parser gets a copy that sets
    nothing unless given (SUPPRESS), so ``lab runs --db X show KEY`` keeps its X. An action's
    own option of the same spelling (``runs show --json``) is left as it is."""
    options = [a for a in group._actions if a.option_strings and a.dest != "help"]
    for action_parser in _subcommands(group).values():
        taken = set(action_parser._option_string_actions)
        for option in options:
            if taken.isdisjoint(option.option_strings):
                shared = copy.copy(option)
                shared.default = argparse.SUPPRESS
                action_parser._add_action(shared)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``lab`` command line; returns its exit status (README: Exit status)."""
    from lab.core.outputs import GuardedStdout, hold_standard_fds

    hold_standard_fds()  # `lab ... >&-`: the store must not be opened as stdout
    stdout = sys.stdout
    sys.stdout = GuardedStdout(stdout)
    try:
        code = _main(argv)
        sys.stdout.flush()  # the last output fails here, while it can be reported
        return code
    except StdoutError as err:
        return _report(err, err.exit_code, silence_stdout=True)
    except BrokenPipeError:
        # stdout closed early (``lab export | head -1``): what was wanted was read.
        _silence_stdout()
        return BROKEN_PIPE
    finally:
        sys.stdout = stdout


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words == ["--version"]:  # answered before the commands (and numpy) are imported
        print(f"lab {__version__}")
        return 0
    parser = build_parser(command_word(words))
    args = parser.parse_args(words)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        # deferred: `lab --version` answers before rich and the config are imported
        from lab.core.config import find_config_file, load_config
        from lab.core.context import Context

        ctx = Context(config=load_config(find_config_file(args.config)))
        return int(args.run(args, ctx) or 0)
    except StdoutError:
        raise
    except LabError as err:
        if args.debug:
            raise
        return _report(err, err.exit_code)
    except KeyboardInterrupt:
        return _report("interrupted", INTERRUPTED, prefix="lab: ")
    except BrokenPipeError:
        raise
    except OSError as err:  # the system refused (a permission, a device): not a bug
        if args.debug:
            raise
        where = f" ({err.filename})" if err.filename else ""
        failed = LabError(
            f"{err.strerror or err}{where}",
            hint="Check that file or device (permissions, space, the device), then run the"
            " same command again; --debug shows where it happened",
        )
        return _report(failed, failed.exit_code)
    except ModuleNotFoundError as err:
        if err.name != "libvirt" or args.debug:
            raise
        missing = RequirementError(
            f"lab {args.command} drives guests through libvirt, and libvirt-python is not"
            " installed: analysis (compare, report, import, export, plan) needs none",
            hint="Install the host extra where the guests run: pip install './[host]' in"
            " the checkout (libvirt's headers first: apt-get install libvirt-dev pkg-config),"
            " or run bash scripts/bootstrap",
        )
        return _report(missing, missing.exit_code)
    except Exception as err:  # a bug's traceback is for --debug, not for every user
        if args.debug:
            raise
        bug = LabError(
            f"unexpected {type(err).__name__}: {err}",
            hint="This is a bug in lab: run the same command with --debug for the traceback,"
            " and report it",
        )
        return _report(bug, bug.exit_code)


def _report(err: LabError | str, code: int, *, prefix: str = "lab: error: ",
            silence_stdout: bool = False) -> int:  # fmt: skip
    """Print ``err`` as one line on stderr (``one_line``: control characters shown, at most
    MESSAGE_CHARS, its hint kept) and return ``code``. With ``silence_stdout``, stdout is
    pointed at /dev/null first, so the interpreter's own flush at exit finds nothing to say."""
    if silence_stdout:
        _silence_stdout()
    if isinstance(err, LabError) and err.hint:
        hint = one_line(err.hint, HINT_CHARS)
        line = f"{one_line(err.message, MESSAGE_CHARS - len(hint) - 2)}. {hint}"
    else:
        line = one_line(err)
    with contextlib.suppress(OSError):  # stderr may be full too: the status still says it
        print(prefix + line, file=sys.stderr, flush=True)
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null: what Python still holds for it is dropped at exit, not
    reported as an ignored exception with status 120."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.__stdout__.fileno() if sys.__stdout__ else 1)
        os.close(null)
