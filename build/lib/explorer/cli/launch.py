"""`attention-explorer app` and `attention-explorer serve`: the Streamlit app, started by its launcher
(explorer/pages/launch.py), which also holds its options."""

from __future__ import annotations

import argparse

from explorer.cli.parser import program_name


def launch(command: str, options: list[str]) -> int:
    from explorer.pages.launch import main

    main((["--serve"] if command == "serve" else []) + options, prog=f"{program_name()} {command}")
    return 0            # main replaces this process with Streamlit's; reached only where it returns (a test's stub)


def run_app(args: argparse.Namespace) -> None:
    launch("app", args.options)


def run_serve(args: argparse.Namespace) -> None:
    launch("serve", args.options)
