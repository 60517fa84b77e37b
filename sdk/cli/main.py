"""`sdk`: the command line. One module per subcommand; one place maps errors to exit codes."""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from importlib import import_module

from sdk import __version__

# Subcommand modules, each with `add_parser(subparsers)` and `run(args) -> int`.
COMMANDS = (
    "export", "inspect", "run", "cut", "kernels", "build", "flash", "boards", "doctor",
    "deploy", "tune", "cache", "numerics", "estimate",
)  # fmt: skip


def _quiet_third_party_logs() -> None:
    """torch/torchao announce optional extensions they cannot load; users need not see it."""
    warnings.filterwarnings("ignore")
    for name in ("torchao", "torch.utils._pytree", "torch._export", "executorch"):
        logging.getLogger(name).setLevel(logging.ERROR)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sdk",
        description="Take a PyTorch model to an Arm Cortex-M + Ethos-U board (Corstone-300: "
        "Cortex-M55 + Ethos-U55; Corstone-320: Cortex-M85 + Ethos-U85).",
    )
    parser.add_argument("--version", action="version", version=f"sdk {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        import_module(f"sdk.cli.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    _quiet_third_party_logs()
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as given (a zoo passes it on)
    from sdk.errors import SdkError

    try:
        return int(args.handler(args) or 0)
    except SdkError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
