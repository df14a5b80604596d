"""bertviz's head view and model view as self-contained HTML: no network, and safe for any token text.

bertviz (`head_view(..., html_action="return")`) loads require.js, d3 and jQuery from a CDN and writes its
parameters into a <script> with plain json.dumps, so a token like `</script><script>alert(1)` would end the
script and run. Here we build the same page from bertviz's own view scripts (`head_view.js`, `model_view.js`
from the installed package), with the three libraries inlined from the copies inside the package
(explorer/scripts/, from their npm packages) and the parameters escaped so no `<`, `>` or `&` appears inside the
script. bertviz draws tokens with d3's `.text()`, which never interprets markup.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path

import bertviz
import numpy as np

import explorer.settings as settings
from explorer.capture.trace import Trace
from explorer.models.errors import ExplorerError
from explorer.models.vocabulary import ATTENTION_KINDS, KIND_WORDS

LIBRARIES = tuple(settings.SCRIPTS / name for name in ("jquery.min.js", "d3.min.js", "require.js"))
CDN_CONFIG = re.compile(r"require\.config\(\{.*?\}\);", re.DOTALL)


class OfflineScriptsMissing(ExplorerError, RuntimeError):
    """The copies of require.js, d3 or jQuery inside the package are missing."""


def script_safe_json(value) -> str:
    """JSON that cannot close or open a tag inside <script>: <, >, & and line separators are \\u-escaped."""
    text = json.dumps(value, ensure_ascii=False)
    for character in "<>&\u2028\u2029":
        text = text.replace(character, f"\\u{ord(character):04x}")
    return text


def inline_script(source: str) -> str:
    # "</script" inside a library's strings or regexes would end the inline <script> early.
    return "<script>" + re.sub(r"</(script)", r"<\\/\1", source, flags=re.IGNORECASE) + "</script>"


@lru_cache(maxsize=1)
def library_scripts() -> str:
    missing = [path.name for path in LIBRARIES if not path.is_file()]
    if missing:
        raise OfflineScriptsMissing(f"the explorer's copy of {missing[0]}, which bertviz's views need, is missing: "
                                    "reinstall attention-explorer")
    jquery, d3, require = (path.read_text(encoding="utf-8") for path in LIBRARIES)
    # jQuery and d3 load first and set globals; then require.js, and bertviz's requirejs(['jquery', 'd3'])
    # resolves to those globals through named modules instead of fetching anything.
    bridge = "define('jquery', [], function () { return window.jQuery; }); define('d3', [], function () { return window.d3; });"
    return "".join(inline_script(s) for s in (jquery, d3, require, bridge))


@lru_cache(maxsize=2)
def view_script(name: str) -> str:
    source = (Path(bertviz.__file__).parent / f"{name}.js").read_text(encoding="utf-8")
    source, count = CDN_CONFIG.subn("", source, count=1)
    if count != 1 or "cdnjs" in source:
        raise RuntimeError(f"bertviz's {name}.js changed: its CDN configuration was not found where expected")
    return source


def attention_data(trace: Trace, kinds: tuple[str, ...]) -> list[dict]:
    return [{"name": KIND_WORDS[kind], "attn": np.round(trace.pattern(kind).astype(np.float64), 4).tolist(),
             "left_text": trace.query_tokens(kind), "right_text": trace.key_tokens(kind)} for kind in kinds]


# Shrink the view to the frame's width when it is wider (the model view's 8 head columns overflowed the page
# and cut off the last head); run again once bertviz has drawn, and when the window is resized.
FIT_TO_WIDTH = """(function () {
  function fit() {
    document.body.style.zoom = 1;
    var needed = document.body.scrollWidth, room = document.documentElement.clientWidth;
    if (needed > room) { document.body.style.zoom = room / needed; }
  }
  window.addEventListener("load", function () { fit(); setTimeout(fit, 300); setTimeout(fit, 1200); });
  window.addEventListener("resize", fit);
})();"""


def page(name: str, params: dict, with_layer_select: bool) -> str:
    # The element id comes from the content, so the same view gives the same page and the browser keeps the
    # iframe it already has instead of reloading it on every rerun.
    params["root_div_id"] = root = "bertviz-" + hashlib.sha1(script_safe_json(params).encode()).hexdigest()[:16]
    options = "".join(f'<option value="{i}">{d["name"]}</option>' for i, d in enumerate(params["attention"]))
    selects = ('Layer: <select id="layer"></select> ' if with_layer_select else "")
    if len(params["attention"]) > 1:
        selects += f'Attention: <select id="filter">{options}</select>'
    # Once: bertviz's own comment on that line names the marker again, and would carry a second copy of the data.
    script = view_script(name).replace("PYTHON_PARAMS", script_safe_json(params), 1)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8">{library_scripts()}</head><body>'
            f'<div id="{root}" style="font-family: Helvetica, Arial, sans-serif;">'
            f'<span style="user-select:none">{selects}</span><div id="vis"></div></div>'
            f"{inline_script(script)}{inline_script(FIT_TO_WIDTH)}</body></html>")


def head_view_html(trace: Trace, kinds: tuple[str, ...] | None = None, layer: int = 0) -> str:
    """bertviz's head view: lines from each query token to the tokens it attends to, coloured per head.
    kinds: those to offer (default: every kind the trace has)."""
    kinds = kinds or tuple(k for k in ATTENTION_KINDS if k in trace.attention)
    params = {"attention": attention_data(trace, kinds), "default_filter": "0",
              "root_div_id": "", "layer": layer, "heads": None,
              "include_layers": list(range(trace.pattern(kinds[0]).shape[0]))}
    return page("head_view", params, with_layer_select=True)


def model_view_html(trace: Trace, kinds: tuple[str, ...] | None = None) -> str:
    """bertviz's model view: a thumbnail per layer and head (default: every kind the trace has)."""
    kinds = kinds or tuple(k for k in ATTENTION_KINDS if k in trace.attention)
    layers, heads = trace.pattern(kinds[0]).shape[:2]
    params = {"attention": attention_data(trace, kinds), "default_filter": "0", "display_mode": "light",
              "root_div_id": "", "include_layers": list(range(layers)),
              "include_heads": list(range(heads)), "total_heads": heads}
    return page("model_view", params, with_layer_select=False)
