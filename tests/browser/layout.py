"""What a reader at a projector would call broken, found in the page itself: something wider than the window or
than its column, a label cut by an ellipsis, figure text under 11 px or past the figure's edge, axis labels or
cell values printed over each other, a figure with nothing in it.

`layout_problems(page)` returns one plain sentence per problem (empty when the page reads well); the browser test
of every page uses it, and any script that looks at a page can.
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
               && parseFloat(s.opacity || '1') > 0 && !e.closest('[hidden], [aria-hidden="true"]')
               && !(e.closest('details:not([open])') && !e.closest('summary')); };   // a closed expander's body
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
        // The size as drawn: plotly shrinks a bar's text to fit inside it with a transform, not its font size.
        const size = t => { const m = t.getScreenCTM(); const scale = m ? Math.hypot(m.a, m.b) : 1;
                            return Math.round(parseFloat(getComputedStyle(t).fontSize) * scale * 10) / 10; };
        const small = [...chart.querySelectorAll('svg text')]
            .filter(t => t.textContent.trim() && drawn(t) && size(t) < smallest - 0.01);
        if (small.length) {
            const sizes = [...new Set(small.map(size))].sort((a, b) => a - b);
            problems.push(`figure “${title(chart)}” has ${small.length} texts under ${smallest} px `
                          + `(${sizes.join(', ')} px), e.g. “${small[0].textContent.slice(0, 30)}”`);
        }
    }
    // 5. No axis label printed over its neighbour. Rotated labels are parallel strokes: the gap between two
    //    neighbours across their baselines (their spacing along the axis × sin of their angle) must hold a line.
    for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
        if (!drawn(chart)) continue;
        const axes = {};
        for (const t of chart.querySelectorAll('.xaxislayer-above text, .yaxislayer-above text')) {
            if (!t.textContent.trim() || !drawn(t)) continue;
            const tick = t.closest('g[class*="tick"]');
            (axes[tick ? tick.getAttribute('class') : 'tick'] ||= []).push(t);
        }
        for (const [axis, texts] of Object.entries(axes)) {
            const vertical = axis.startsWith('y');
            const placed = texts.map(t => { const r = t.getBoundingClientRect();
                const angle = /rotate\((-?[\d.]+)/.exec(t.getAttribute('transform') || '');
                // A rotated label turns about its tick: measured from there, not from its box's centre (a long
                // label's box reaches further from its tick than a short neighbour's, so box centres come closer
                // together than the labels do).
                const shift = /translate\((-?[\d.]+),\s*(-?[\d.]+)\)/.exec(t.getAttribute('transform') || '');
                const frame = t.parentNode.getScreenCTM ? t.parentNode.getScreenCTM() : null;
                const anchor = angle && shift && frame && !vertical
                    ? frame.a * (parseFloat(shift[1]) + parseFloat(t.getAttribute('x') || '0')) + frame.e : null;
                return {at: vertical ? (r.top + r.bottom) / 2 : (anchor ?? (r.left + r.right) / 2),
                        across: vertical ? 1 : (angle ? Math.abs(Math.sin(parseFloat(angle[1]) * Math.PI / 180)) : 0),
                        extent: vertical ? r.height : r.width, size: parseFloat(getComputedStyle(t).fontSize),
                        text: t.textContent}; })
                .sort((a, b) => a.at - b.at);
            for (let i = 1; i < placed.length; i++) {
                const [a, b] = [placed[i - 1], placed[i]], spacing = b.at - a.at;
                const room = b.across ? spacing * b.across : spacing;          // across the baselines, or along them
                // A line of text across: 11 px labels 10 px apart touch (ascenders on descenders).
                const needed = b.across ? b.size : (a.extent + b.extent) / 2;
                if (room < needed - 0.5) {
                    problems.push(`figure “${title(chart)}”: ${axis.split(' ')[0].replace('tick', '')}-axis labels `
                                  + `“${a.text.slice(0, 20)}” and “${b.text.slice(0, 20)}” overlap `
                                  + `(${room.toFixed(1)} px apart for ${b.size} px text)`);
                    break;
                }
            }
        }
    }
    // 6. No text running past its figure's edge (a title or label cut where the figure ends).
    for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
        const svg = chart.querySelector('.main-svg');
        if (!svg || !drawn(chart)) continue;
        const box = svg.getBoundingClientRect();
        const past = [...chart.querySelectorAll('svg text')].filter(t => t.textContent.trim() && drawn(t))
            .map(t => [t, t.getBoundingClientRect()])
            .filter(([t, r]) => r.right > box.right + 1 || r.left < box.left - 1);
        if (past.length)
            problems.push(`figure “${title(chart)}”: “${past[0][0].textContent.slice(0, 30)}” runs `
                          + `${Math.round(Math.max(past[0][1].right - box.right, box.left - past[0][1].left))} px past its edge`);
    }
    // 7. No numbers written into cells or bars that run into each other ("0.040.000.01").
    for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
        if (!drawn(chart)) continue;
        const rows = {};
        for (const t of chart.querySelectorAll('.heatmaplayer text, .barlayer text, .textpoint text')) {
            if (!t.textContent.trim() || !drawn(t)) continue;
            const r = t.getBoundingClientRect();
            (rows[Math.round((r.top + r.bottom) / 2)] ||= []).push({r, text: t.textContent});
        }
        const crowded = Object.values(rows).flatMap(row => row.sort((a, b) => a.r.left - b.r.left)
            .filter((b, i) => i > 0 && row[i - 1].r.right > b.r.left + 1).map(b => b.text));
        if (crowded.length)
            problems.push(`figure “${title(chart)}”: ${crowded.length} numbers in its cells run into their `
                          + `neighbours, e.g. “${crowded[0].slice(0, 20)}”`);
    }
    // 8. No empty figure: every chart has a trace with something in it.
    const filled = trace => ['x', 'y', 'z', 'values', 'lat', 'a', 'cells']
        .some(key => trace[key] && (trace[key].length > 0 || (trace[key].values && trace[key].values.length > 0)));
    for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
        const plot = chart.querySelector('.js-plotly-plot');
        if (!plot || !drawn(chart)) continue;
        if (!(plot.data || []).some(filled)) problems.push(`figure “${title(chart)}” is empty`);
    }
    // 9. No dialog over the page ("Page not found" when a link names a page the app does not serve there).
    for (const dialog of document.querySelectorAll('[role="dialog"]'))
        if (drawn(dialog)) problems.push(`a dialog covers the page: “${name(dialog)}”`);
    return problems;
}"""


def layout_problems(page, smallest: int = SMALLEST_TEXT_PX) -> list[str]:
    """Every layout problem on the page as it is drawn now, one sentence each."""
    return page.evaluate(PROBLEMS, smallest)
