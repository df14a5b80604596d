"""`streamlit run` that contacts no address outside this machine: what start.sh (pages/launch.py) runs.

Streamlit's headless start asks checkip.amazonaws.com for the machine's external IP (for an "External URL" line in
its banner, and as a fallback of its cross-origin check), and finds its network IP by routing a socket towards
8.8.8.8. The README promises that nothing leaves the machine after install, so both are answered here with
"unknown": the banner shows the address the launcher sets (--browser.serverAddress), and a page is reached from
its own origin, which Streamlit allows without either. tests/explorer/test_offline_start.py holds it: the server
starts with every socket address it resolves or connects to recorded, and none is outside the machine."""

from __future__ import annotations

import sys

from streamlit import net_util
from streamlit.web import cli


def unknown() -> None:
    return None


def main() -> None:
    net_util.get_external_ip = unknown          # read at each call by the banner and the origin check
    net_util.get_internal_ip = unknown
    sys.exit(cli.main(prog_name="streamlit"))


if __name__ == "__main__":
    main()
