"""The Atlas page (issue 62): the map, the query–key space and the search draw the atlas's own numbers for the
model in the sidebar, and the choices (stack, captions, head, tab, key pattern) are kept in the URL."""

from __future__ import annotations

import json

import numpy as np
import pytest

from explorer.analyses.corpus.atlas import head_map, map_statistics
from explorer.analyses.corpus.head_search import search_heads
from tests.app.conftest import open_part


def test_the_map_draws_every_head_where_the_atlas_puts_it(page, h8):
    at = page("atlas.py", model="8 heads (en-de-h8)", atlas_sentences=50)
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    drawn = {name: (x, y) for trace in figure["data"] if trace.get("customdata")
             for name, x, y in zip(trace["customdata"], trace["x"], trace["y"])}
    expected = head_map(h8, "encoder", map_statistics(h8, captions_of(50), "encoder"))
    assert len(drawn) == 24
    for head in expected.heads:
        assert np.allclose(drawn[head.name], (head.x, head.y), atol=1e-4), head.name
    assert at.query_params["kind"] in ("encoder", ["encoder"])


def captions_of(count: int) -> list[str]:
    from explorer import settings
    from explorer.models.data import read_lines

    return read_lines(settings.CAPTIONS)[:count]


def test_the_search_ranks_the_heads_as_the_search_does_and_keeps_its_pattern(page, h8):
    at = page("atlas.py", model="8 heads (en-de-h8)", atlas_sentences=50, atlas_key="same")
    at = open_part(at, "Search heads", "atlas_view")
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    bars = figure["data"][0]
    expected = search_heads(h8, captions_of(50), "any", "same")
    assert list(bars["y"])[::-1] == [head.name for head in expected.heads[:12]]
    assert np.allclose(list(bars["x"])[::-1], [head.share for head in expected.heads[:12]])
    assert at.query_params["key"] in ("same", ["same"])


def test_the_space_view_draws_every_query_and_key_of_the_chosen_head(page, h8):
    at = page("atlas.py", model="8 heads (en-de-h8)", atlas_sentences=50, atlas_head="enc.1.6")
    at = open_part(at, "Queries and keys", "atlas_view")
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    queries, keys = figure["data"]
    pieces = sum(len(h8.encode(line).ids) for line in captions_of(50))
    assert len(queries["x"]) == len(keys["x"]) == pieces
    assert at.query_params["head"] in ("encoder.1.6", ["encoder.1.6"])


@pytest.mark.slow
def test_the_search_over_the_treebank_ranks_as_the_treebank_search_does(page):
    """Read: treebank (by words), from deprel:det queries to their syntactic head, on MiniLM's 50 first EWT trees."""
    from explorer import settings
    from explorer.capture.treebank import read_trees
    from explorer.models.loader import open_model

    at = page("atlas.py", model="all-MiniLM-L6-v2 (pretrained)", atlas_sentences=50, atlas_source="treebank (by words)",
              atlas_word="deprel:det", atlas_key="head")
    at = open_part(at, "Search heads", "atlas_view")
    bars = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    expected = search_heads(open_model("all-MiniLM-L6-v2"), None, "deprel:det", "head",
                            trees=read_trees(settings.TREEBANK, 50))
    assert list(bars["y"])[::-1] == [head.name for head in expected.heads[:12]]
    assert np.allclose(list(bars["x"])[::-1], [head.share for head in expected.heads[:12]])
    assert at.query_params["source"] in ("treebank (by words)", ["treebank (by words)"])


def test_other_models_maps_are_drawn_beside_with_their_own_heads(page, h8):
    at = page("atlas.py", model="8 heads (en-de-h8)", atlas_sentences=50,
              atlas_beside=["all-MiniLM-L6-v2 (pretrained)", "1 head (en-de-h1)"])
    maps = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    heads = [sum(len(trace.get("customdata") or []) for trace in figure["data"]) for figure in maps]
    assert heads[0] == 24 and heads[-3:] == [24, 72, 3]          # the map, then h8's, MiniLM's and h1's beside
    captions = " ".join(caption.value for caption in at.caption)
    assert "Mean distance within a layer" in captions and "One head a layer" in captions
    assert at.query_params["beside"] in ("all-MiniLM-L6-v2 (pretrained)|1 head (en-de-h1)",
                                         ["all-MiniLM-L6-v2 (pretrained)|1 head (en-de-h1)"])
