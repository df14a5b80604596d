"""What a reader at a projector would call broken, found in the page itself: something wider than the window or
than its column, a label cut by an ellipsis, figure text under 11 px, a figure with nothing in it.

`layout_problems(page)` returns one plain sentence per problem (empty when the page reads well); the browser test
of every page and `scripts/screenshots.py --check` use it.
"""

from __future__ import annotations

SMALLEST_TEXT_PX = 11

# One pass over the page in the browser. Hidden things (a collapsed sidebar, a closed expander, another tab's
# panel) are skipped: what is not drawn cannot be cut.
PROBLEMS = r"""(smallest) => {
    const problems = [];
    const width = window.innerWidth;
    const drawn = e => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
        return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'
               && parseFloat(s.opacity || '1') > 0 && !e.closest('[hidden], [aria-hidden="true"]'); };
    const name = e => (e.getAttribute('aria-label') || e.textContent || e.tagName).trim().replace(/\s+/g, ' ').slice(0, 60);
    const title = chart => { const t = chart.querySelector('.gtitle'); return t ? t.textContent.slice(0, 60) : 'untitled'; };

    // 1. Nothing wider than the window: the main column never scrolls sideways.
    const main = document.querySelector('[data-testid="stMain"]');
    if (main && main.scrollWidth > main.clientWidth + 1) {
        const wide = [...main.querySelectorAll('[data-testid="stElementContainer"]')]
            .filter(e => drawn(e) && e.getBoundingClientRect().right > width + 1).map(name);
        problems.push(`the page scrolls sideways by ${main.scrollWidth - main.clientWidth} px: ${wide.slice(0, 3).join(' | ')}`);
    }
    // 2. No figure wider than its column (cut off by it, or spilling over its neighbour).
    for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
        const svg = chart.querySelector('.main-svg');
        if (!svg || !drawn(chart)) continue;
        const column = chart.closest('[data-testid="stColumn"], [data-testid="stVerticalBlock"]') || chart.parentElement;
        const over = svg.getBoundingClientRect().right - Math.min(column.getBoundingClientRect().right, width);
        if (over > 2 && !chart.closest('[data-testid="stHorizontalBlock"][style*="overflow"]'))
            problems.push(`figure “${title(chart)}” is ${Math.round(over)} px wider than its column`);
    }
    // 3. No label cut by an ellipsis: text set to end in “…” that does not fit.
    for (const e of document.querySelectorAll('[data-testid="stAppViewContainer"] *')) {
        if (!e.childNodes.length || !drawn(e)) continue;
        const s = getComputedStyle(e);
        if (s.textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + 1 && e.textContent.trim())
            problems.push(`label cut by an ellipsis: “${name(e)}” (${e.scrollWidth} px in ${e.clientWidth})`);
    }
    // 4. No figure text under the smallest size a room can read.
    for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
        if (!drawn(chart)) continue;
        const small = [...chart.querySelectorAll('svg text')]
            .filter(t => t.textContent.trim() && drawn(t) && parseFloat(getComputedStyle(t).fontSize) < smallest - 0.01);
        if (small.length) {
            const sizes = [...new Set(small.map(t => parseFloat(getComputedStyle(t).fontSize)))].sort((a, b) => a - b);
            problems.push(`figure “${title(chart)}” has ${small.length} texts under ${smallest} px `
                          + `(${sizes.join(', ')} px), e.g. “${small[0].textContent.slice(0, 30)}”`);
        }
    }
    // 5. No empty figure: every chart has a trace with something in it.
    const filled = trace => ['x', 'y', 'z', 'values', 'lat', 'a', 'cells']
        .some(key => trace[key] && (trace[key].length > 0 || (trace[key].values && trace[key].values.length > 0)));
    for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
        const plot = chart.querySelector('.js-plotly-plot');
        if (!plot || !drawn(chart)) continue;
        if (!(plot.data || []).some(filled)) problems.push(`figure “${title(chart)}” is empty`);
    }
    return problems;
}"""


def layout_problems(page, smallest: int = SMALLEST_TEXT_PX) -> list[str]:
    """Every layout problem on the page as it is drawn now, one sentence each."""
    return page.evaluate(PROBLEMS, smallest)
