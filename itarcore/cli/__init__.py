"""The `itarcore` command line.

Every read command takes ``--json``. Exit codes: 0 ok, 1 findings, 2 unusable input
or usage. Errors print one line to stderr, never a traceback; ``--debug`` (on any
command) adds the traceback, for a bug report.

Start-up is kept short: only the module of the command being run is imported (the
others are listed by name and help line from ``COMMANDS``), and command modules import
numpy and the readers inside their functions, so ``--help`` and ``info`` of a TARIDX
index never import numpy.
"""
from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .. import __version__
from ..errors import ItarError
from ..formats import detect_format, format_of, unsupported_reason
from ..limits import raise_open_file_limit
from ..storage import RangedSource, is_url, scrub, secret_values
from .remote import add_storage_options, local_file, renamed, shown, storage_options

EXIT_OK, EXIT_FINDINGS, EXIT_UNUSABLE = 0, 1, 2

# Each module registers its subcommands with register(subparsers) and, when it
# owns a format, answers `info` with info(path, args) -> dict and info_text(dict) -> str.
COMMAND_MODULES = ("taridx", "keys", "diff", "content", "taco", "kastore", "tbl", "convert")
INFO_MODULES = {"taridx": "taridx", "taco": "taco", "kastore": "kastore", "tbl": "tbl"}
# command -> (module, help line): what `--help` lists without importing the module
# (tests/itarcore/test_cli_startup.py checks these lines equal the modules' own)
COMMANDS: dict[str, tuple[str, str]] = {
    "index": ("taridx", "build <fold>.taridx for the folds of a folder of shards"),
    "rows": ("taridx", "print rows of an index"),
    "stem": ("taridx", "print the rows of one sample, by stem"),
    "cat": ("taridx", "write one member's raw payload to stdout"),
    "verify": ("taridx", "check an index (and with --full, its shards)"),
    "keys": ("keys", "build an index's key index ahead of time (stem lookups in microseconds)"),
    "diff": ("diff", "compare two TARIDX indexes by sample"),
    "stats": ("content", "statistics of a fold: extensions, shards, labels, image sizes"),
    "dedup": ("content", "duplicate payloads within and across folds (split leaks)"),
    "export": ("content", "export a subset of a fold as new shards and index, or a stem list"),
    "taco": ("taco", "TACO zip commands (update header entries, create archives)"),
    "kastore": ("kastore", "kastore / tskit .trees commands"),
    "tbl": ("tbl", "TBL (TurboLoader) commands: cat a sample, verify checksums"),
    "convert": ("convert", "convert between formats (tar shards -> TBL)"),
}


class UsageError(ItarError):
    """Bad command-line use (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # on every (sub)command, so `itarcore verify X --debug` works as well as `itarcore --debug verify X`
        self.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                          help="on an error, also print its traceback (for bug reports)")

    def error(self, message: str) -> NoReturn:  # one line, exit 2, like every other error
        print(f"itarcore: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_UNUSABLE)


def _module(name: str) -> Any:
    return importlib.import_module(f".{name}", __name__)


def _command_of(argv: Sequence[str]) -> str | None:
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The full parser; given ``argv``, only the module of the command it runs is imported."""
    parser = _Parser(
        prog="itarcore",
        description="Inspect, build and check TARIDX, TACO, kastore and TBL files.",
        epilog="Exit codes: 0 ok, 1 findings, 2 unusable input or usage. "
        "Run `itarcore COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"itarcore {__version__}")
    parser.set_defaults(debug=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    info = sub.add_parser(
        "info",
        help="show the format (detected by magic) and header of any supported file",
        description="Show the detected format and header fields of a TARIDX, TACO, kastore or TBL file.",
    )
    info.add_argument("file", help="file to describe")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.add_argument("--store", type=int, default=0, metavar="N", help="kastore: which store of a multi-store file (default 0)")
    add_storage_options(info)
    info.set_defaults(func=_cmd_info)

    command = _command_of(argv) if argv is not None else None
    needed = COMMANDS[command][0] if command in COMMANDS else None
    for name in COMMAND_MODULES:
        if argv is None or name == needed or name not in {m for m, _ in COMMANDS.values()}:
            _module(name).register(sub)
        else:
            for listed, (module, help_line) in COMMANDS.items():
                if module == name:
                    sub.add_parser(listed, help=help_line, add_help=False)
    return parser


def _cmd_info(args: argparse.Namespace) -> int:
    if is_url(args.file):  # opened once: its first bytes give the format and, for a TARIDX, header and tables
        from ..formats.taridx_header import FIRST_READ
        from ..storage import open_source

        with open_source(args.file, storage_options(args)) as source:
            first = bytes(source.read(0, min(source.size, FIRST_READ)))
            module, data = _info(args, format_of(first), source, first)
    else:
        module, data = _info(args, detect_format(args.file))
    if args.json:
        print_json(data)
    else:
        print(module.info_text(data))
    return EXIT_OK


def _info(args: argparse.Namespace, fmt: str | None, source: RangedSource | None = None,
          first: bytes | None = None) -> tuple[Any, dict[str, Any]]:
    """(command module, info dict) of ``args.file``, whose format is ``fmt``; ``source``: the URL, open."""
    if fmt not in INFO_MODULES:
        if fmt != "zip" or source is None:
            raise UsageError(f"{shown(args.file)}: {unsupported_reason(args.file, fmt)}")
        with local_file(args.file, args, source) as local:  # the reason looks inside a zip (a tszip?): a local copy
            raise UsageError(f"{shown(args.file)}: {unsupported_reason(local, fmt)}")
    module = _module(INFO_MODULES[fmt])
    if source is None:
        return module, module.info(args.file, args)
    if fmt == "taridx":  # header and tables by ranged reads
        return module, module.info(args.file, args, source, first)
    with local_file(args.file, args, source) as local:
        return module, renamed(module.info(local, args), local, args.file)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def print_json_lines(objs: Any) -> None:
    write = sys.stdout.write
    for obj in objs:
        write(json.dumps(obj, ensure_ascii=False) + "\n")


def resume_gc() -> None:
    """End start-up: collect again, leaving out every object made so far (the modules just loaded).

    The console script runs start-up with the collector off (:func:`entry_point`): imports make
    no garbage, and each collection would walk every object loaded so far (importing numpy
    alone triggers dozens). A command whose own imports are costly calls this once they are
    done (``set_defaults(resumes_gc=True)``); for the others :func:`main` calls it. A no-op
    when the collector is on (``main`` called in-process, as the tests do).
    """
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    try:
        if not getattr(args, "resumes_gc", False):
            resume_gc()
        return int(args.func(args) or EXIT_OK)
    except KeyboardInterrupt:
        print("itarcore: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away: entry_point ends quietly
        raise
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, one line and exit 2, never a traceback
        secrets = _secrets(args)  # never printed, not even in a traceback
        if args.debug:
            import traceback  # only with --debug: it costs ~10 ms to import

            print(scrub(traceback.format_exc(), (), "", secrets), file=sys.stderr, end="")
        print(f"itarcore: error: {scrub(error_line(exc), (), '', secrets)}", file=sys.stderr)
        return EXIT_UNUSABLE


def _secrets(args: argparse.Namespace) -> list[str]:
    try:
        return secret_values(storage_options(args))
    except ItarError:  # a malformed --storage-option: its text is masked as a whole
        return [v.partition("=")[2] or v for v in getattr(args, "storage_option", []) if len(v) >= 4]


def error_line(exc: Exception) -> str:
    """One line for any exception: ours say what and where; anything else is named as unexpected."""
    if isinstance(exc, ItarError):
        text = str(exc)
    elif isinstance(exc, FileNotFoundError):
        text = f"{exc.filename}: no such file"
    elif isinstance(exc, IsADirectoryError):
        text = f"{exc.filename}: is a directory"
    elif isinstance(exc, PermissionError):
        text = f"{exc.filename}: permission denied"
    elif isinstance(exc, OSError):
        text = str(exc)
    else:
        text = (f"internal error ({type(exc).__name__}: {exc}); please report it with the output of "
                "`itarcore --debug ...`")
    return " ".join(text.split())


def entry_point() -> None:
    gc.disable()  # until start-up's imports are done: see resume_gc
    # No command does linear algebra, and OpenBLAS's thread pool, started by `import numpy`,
    # costs a sixth of that import (and its idle threads then poll); a user's setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    raise_open_file_limit()  # a fold of thousands of shards maps them at once
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `itarcore rows X | head`
        sys.stderr.close()
        code = EXIT_OK
    gc.freeze()  # nothing left to collect: spare the interpreter's collections at exit (tens of ms after numpy)
    raise SystemExit(code)
