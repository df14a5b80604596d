"""Who may do what. Run on one's own machine (`bash scripts/start.sh`) the explorer opens any folder, corpus path
or Ray cluster its user names. Served to a class or a lab (`start.sh --serve`, pages/launch.py) it is read-only
for visitors: the models are the bundled ones and those the host named at start, corpora are the bundled defaults
or size-capped uploads, Ray is what the host set, and an access token keeps outsiders out. Nothing a visitor types
is read from, or written to, the server's disk.

The launcher hands the host's choices to every session through environment variables (the one way into a
`streamlit run` process); they are read once.
"""

from __future__ import annotations

import functools
import hmac
import logging
import os
from dataclasses import dataclass

import streamlit as st

SERVE, MODELS, TOKEN = "ATTENTION_EXPLORER_SERVE", "ATTENTION_EXPLORER_MODELS", "ATTENTION_EXPLORER_TOKEN"
WORKERS, RAY_ADDRESS = "ATTENTION_EXPLORER_WORKERS", "ATTENTION_EXPLORER_RAY_ADDRESS"
JOBS, UPLOAD_MB = "ATTENTION_EXPLORER_JOBS", "ATTENTION_EXPLORER_UPLOAD_MB"
DEVICE = "ATTENTION_EXPLORER_DEVICE"
GRANTED = "_access_granted"

# Refusals go to the server log as one line each: who (a short session tag), what was asked, why. No tracebacks:
# a refusal is the server working as meant, not an error.
log = logging.getLogger("attention_explorer.access")
if not log.handlers:
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("%(asctime)s refused %(message)s", "%H:%M:%S"))
    log.addHandler(_handler)
    log.setLevel(logging.INFO)
    log.propagate = False


@dataclass(frozen=True)
class Policy:
    serving: bool = False           # a shared server: visitors only look
    models: tuple[str, ...] = ()    # folders or cached hub ids the host named (--models), offered beside the bundled
    token: str = ""                 # "" = no token asked
    workers: int = 1                # Ray workers for corpus jobs, as the host set them
    ray_address: str = ""
    jobs: int = 1                   # corpus jobs running at once on the whole server (the rest queue)
    upload_mb: int = 20             # largest corpus or treebank upload
    device: str = "auto"            # where the models run (--device): cpu, cuda, or a GPU when torch sees one


@functools.cache
def policy() -> Policy:
    environment = os.environ
    if environment.get(SERVE) != "1":
        return Policy(models=tuple(_named_models()), device=environment.get(DEVICE, "auto"))
    return Policy(serving=True, models=tuple(_named_models()), token=environment.get(TOKEN, ""),
                  device=environment.get(DEVICE, "auto"),
                  workers=int(environment.get(WORKERS, "1")), ray_address=environment.get(RAY_ADDRESS, ""),
                  jobs=int(environment.get(JOBS, "1")), upload_mb=int(environment.get(UPLOAD_MB, "20")))


def _named_models() -> list[str]:
    return [line for line in os.environ.get(MODELS, "").splitlines() if line.strip()]


def session_tag() -> str:
    """A short tag of this browser session for the log (never the whole id)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    context = get_script_run_ctx()
    return context.session_id[:8] if context else "-"


def quoted(text: str, limit: int = 80) -> str:
    """A visitor's input as shown in a message or the log: on one line, cut when long."""
    text = " ".join(str(text).split())
    return f"“{text if len(text) <= limit else text[: limit - 1] + '…'}”"


def refuse(message: str, asked: str, where=st) -> None:
    """Say no in one line on the page (where: st, a column or a container), and log it without a traceback."""
    where.warning(message)
    log.info("%s %s: %s", session_tag(), asked, message)


def granted() -> bool:
    """Whether this session may use the explorer: no token is asked, or it showed the token, in the link
    (`?token=`, as the host's start message prints it) or typed. The token is then kept in the session, and in
    the address bar, so that a reload, or the tab reconnecting after a server restart, opens the same view."""
    token = policy().token
    if not token:
        return True
    state = st.session_state
    given = st.query_params.get("token", "")
    if not state.get(GRANTED) and given and hmac.compare_digest(given.encode(), token.encode()):
        state[GRANTED] = True
    if state.get(GRANTED) and given != token:
        st.query_params["token"] = token
    return bool(state.get(GRANTED))


def ask_token() -> None:
    """The page a visitor without the token sees: why, and a box for the token. Nothing else runs."""
    token = policy().token
    given = st.query_params.get("token", "")
    st.title("Attention Explorer")
    if given:
        refuse("The access token in this link is not this server's: ask the host for the link it printed.",
               f"a link's token ({len(given)} characters)")
    else:
        st.info("This explorer is shared with an access token: open the link the host gave you, or type the token.")
    typed = st.text_input("Access token", type="password", key="_typed_token")
    if typed:
        if hmac.compare_digest(typed.strip().encode(), token.encode()):
            st.session_state[GRANTED] = True
            st.query_params["token"] = token
            st.rerun()
        refuse("That is not this server's access token.", f"a typed token ({len(typed)} characters)")
