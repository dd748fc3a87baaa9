"""The `itarcore` command line.

Every read command takes ``--json``. Exit codes: 0 ok, 1 findings, 2 unusable input
or usage. Errors print one line to stderr, never a traceback; ``itarcore --debug ...``
adds the traceback, for a bug report.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from .. import __version__
from ..errors import ItarError
from ..formats import detect_format, unsupported_reason

EXIT_OK, EXIT_FINDINGS, EXIT_UNUSABLE = 0, 1, 2

# Each module registers its subcommands with register(subparsers) and, when it
# owns a format, answers `info` with info(path, args) -> dict and info_text(dict) -> str.
COMMAND_MODULES = ("taridx", "taco", "kastore", "tbl", "convert")
INFO_MODULES = {"taridx": "taridx", "taco": "taco", "kastore": "kastore", "tbl": "tbl"}


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


def build_parser() -> argparse.ArgumentParser:
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
    info.set_defaults(func=_cmd_info)

    for name in COMMAND_MODULES:
        _module(name).register(sub)
    return parser


def _cmd_info(args: argparse.Namespace) -> int:
    fmt = detect_format(args.file)
    if fmt not in INFO_MODULES:
        raise UsageError(f"{args.file}: {unsupported_reason(args.file, fmt)}")
    module = _module(INFO_MODULES[fmt])
    data = module.info(args.file, args)
    if args.json:
        print_json(data)
    else:
        print(module.info_text(data))
    return EXIT_OK


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def print_json_lines(objs: Any) -> None:
    write = sys.stdout.write
    for obj in objs:
        write(json.dumps(obj, ensure_ascii=False) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or EXIT_OK)
    except KeyboardInterrupt:
        print("itarcore: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away: entry_point ends quietly
        raise
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, one line and exit 2, never a traceback
        if args.debug:
            traceback.print_exc()
        print(f"itarcore: error: {error_line(exc)}", file=sys.stderr)
        return EXIT_UNUSABLE


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
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `itarcore rows X | head`
        sys.stderr.close()
        code = EXIT_OK
    raise SystemExit(code)
