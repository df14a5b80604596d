"""The Lesson as a handout: one HTML file of every step on the person's sentence (or digit), in the lecture's order —
each step's title, paragraph, numbers, figure and where the model differs from the paper — that opens offline,
prints, and reads on a phone. The numbers are the Lesson's own (explorer/teaching/lesson.py), so they equal the app's.

Nothing is requested off the file: the figures are plotly's, drawn by plotly.js carried inside the file gzipped
(the browser's DecompressionStream unpacks it: 4.8 MB of script in about 1.5 MB), and the text is the step's
markdown with any raw HTML in it escaped (markdown-it, html off), as the app's st.markdown shows it.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
from functools import lru_cache
from pathlib import Path

from explorer.capture.trace import Trace
from explorer.figures.lesson import chips_html, numbers_html
from explorer.teaching.lesson_steps import Focus

PAGE_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 52rem; margin: 0 auto;
       padding: 1rem; line-height: 1.5; color: #1a1a1a; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
section { border-top: 1px solid #ccd; padding-top: 0.5rem; margin-top: 1.2rem; break-inside: avoid; }
h2 { font-size: 1.2rem; margin: 0.4rem 0; }
.differs { background: #eef4fb; border-left: 4px solid #4a7bd0; padding: 0.4rem 0.7rem; }
.figure { width: 100%; overflow-x: auto; }
.lesson-chip sub { color: #666; }
@media print { .figure { overflow: visible; } body { max-width: none; } }
"""


@lru_cache(maxsize=1)
def packed_plotly() -> str:
    """plotly.js from the installed plotly package, gzipped and base64-encoded (read once)."""
    from plotly.offline import get_plotlyjs

    return base64.b64encode(gzip.compress(get_plotlyjs().encode(), 9, mtime=0)).decode()


def paragraph(markdown: str) -> str:
    """A step's markdown as HTML; raw HTML in it (a sentence's own "<b>") is shown as text, never run."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).render(markdown)


def script_json(value) -> str:
    """JSON safe inside a <script> element: "</" cannot close it."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")


def handout_html(model, trace: Trace, focus: Focus | None = None, label: str | None = None) -> str:
    """The whole Lesson on this trace as one self-contained HTML page (focus: the word, layer, head and output step
    the steps follow; default the Lesson's own)."""
    from explorer.teaching.image_lesson import lesson_for

    lesson = lesson_for(model, trace, label)
    focus = lesson.clamped(focus or lesson.default_focus())
    slugs = lesson.slugs
    sections, figures = [], []
    for number, slug in enumerate(slugs, start=1):
        step = lesson.step(slug, focus)
        parts = [f"<h2>Step {number} of {len(slugs)}: {html.escape(step.title)}</h2>", paragraph(step.text),
                 numbers_html(step.numbers)]
        if step.figure is not None:
            figures.append((f"figure-{slug}", step.figure.to_plotly_json()))
            parts.append(f'<div class="figure" id="figure-{slug}"></div>')
        elif step.tokens is not None:
            parts.append(chips_html(step.tokens, step.marked))
        if step.differs:
            parts.append(f'<p class="differs"><strong>Unlike the paper:</strong> {html.escape(step.differs)}</p>')
        sections.append(f'<section id="step-{slug}">{"".join(parts)}</section>')
    from explorer.figures.lesson import LESSON_CSS

    heading = (f"Lesson: “{html.escape(trace.text)}” through {html.escape(model.name)}" if trace.text else
               f"Lesson: a digit through {html.escape(model.name)}")
    output = (f"<p><strong>The model's output ({html.escape(trace.output_title)}):</strong> "
              f"{html.escape(trace.output_text)}</p>" if trace.output_text else "")
    followed = (f"<p>The steps follow {lesson.word} {focus.word} ({html.escape(lesson.words[focus.word])}), layer "
                f"{focus.layer}, head {focus.head}.</p>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{heading}</title><style>{PAGE_CSS}</style>{LESSON_CSS}</head>
<body><h1>{heading}</h1><p>Attention Explorer's Lesson, every step on one page ({len(slugs)} steps). Made offline: this
file needs no network.</p>{output}{followed}
{"".join(sections)}
<script id="plotly-packed" type="application/octet-stream">{packed_plotly()}</script>
<script>
const FIGURES = {script_json(figures)};
(async () => {{
  const packed = document.getElementById("plotly-packed").textContent;
  const bytes = Uint8Array.from(atob(packed), c => c.charCodeAt(0));
  const unpacked = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  const code = await new Response(unpacked).text();
  const script = document.createElement("script");
  script.textContent = code;
  document.head.appendChild(script);
  for (const [id, figure] of FIGURES) {{
    await Plotly.newPlot(id, figure.data, figure.layout, {{staticPlot: true, responsive: true, displaylogo: false}});
  }}
  document.body.dataset.drawn = String(FIGURES.length);
}})();
</script></body></html>
"""


def write_handout(model, trace: Trace, path: str | Path, focus: Focus | None = None, label: str | None = None) -> Path:
    path = Path(path)
    path.write_text(handout_html(model, trace, focus, label), encoding="utf-8")
    return path
