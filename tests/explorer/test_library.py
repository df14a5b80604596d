"""`import explorer`: the README's five notebook lines run and give the explorer's own numbers, offline."""

import ast
import re

import numpy as np
import plotly.graph_objects as go

from tests.conftest import ROOT


def notebook_lines() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## In a notebook", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1).strip().splitlines()


def test_the_readmes_five_notebook_lines_run(monkeypatch):
    lines = notebook_lines()
    assert len(lines) == 5
    monkeypatch.chdir(ROOT)
    namespace, shown = {}, []
    for statement in ast.parse("\n".join(lines)).body:        # as a notebook runs cells: expressions are shown
        code = ast.unparse(statement)
        if isinstance(statement, ast.Expr):
            shown.append(eval(code, namespace))
        else:
            exec(code, namespace)
    trace, (figure, view) = namespace["trace"], shown
    import explorer
    from explorer.capture.translation import translate

    assert trace.output_text == translate(namespace["model"], ["A dog catches a ball in the park."])[0]
    assert isinstance(figure, go.Figure)
    np.testing.assert_allclose(np.array(figure.data[0].z, dtype=float), trace.pattern("cross")[2, 0], atol=1e-6)
    assert isinstance(view, explorer.HtmlView)
    page = view._repr_html_()
    assert page.startswith('<iframe sandbox="allow-scripts"') and "▁dog" in view.html
    # Nothing fetched: no script by address, no require.js path to a CDN (libraries' licence comments may name sites).
    assert not re.search(r"<script[^>]+src=", view.html) and not re.search(r"require\.config\(\{", view.html)


def test_hostile_text_stays_text_in_the_notebook_views(tiny_checkpoint, tmp_path):
    import explorer

    trace = explorer.trace_sentence(tiny_checkpoint, "</script><script>alert(1)</script>", pruned="enc.0.*")
    assert trace.pruned == "enc.0.0,enc.0.1,enc.0.2,enc.0.3"
    for view in (explorer.head_view(trace), explorer.model_view(trace)):
        assert "<script>alert(1)" not in view.html                  # escaped inside the page
        assert "<script>" not in view._repr_html_().split("srcdoc=", 1)[1]   # and the page inside the attribute
        saved = view.save(str(tmp_path / "view.html"))
        with open(saved, encoding="utf-8") as file:
            assert file.read() == view.html
    assert explorer.translate(tiny_checkpoint, ["A dog."], pruned="cross.*.*")[0] == \
        explorer.trace_sentence(tiny_checkpoint, "A dog.", pruned="cross.*.*").output_text
    assert explorer.heads_figure(trace, "decoder").layout.title.text.startswith("Decoder self-attention")
