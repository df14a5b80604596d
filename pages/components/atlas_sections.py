"""The Atlas page's three views (pages/atlas.py): the map of a stack's heads, the chosen head's queries and keys in
one plane, and the search for heads by behaviour. Each computes over the first N captions once per model, stack and
N (st.cache_data), and keeps its choices in the URL."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.analyses.corpus.atlas import HeadMap, stack_kind
from explorer.analyses.corpus.head_search import KEY_PATTERNS, POSITIONAL, TREE_KEY_PATTERNS, HeadSearch
from explorer.analyses.corpus.query_key_space import PROJECTIONS, QueryKeySpace
from explorer.capture.inputs import InputError
from explorer.figures.atlas import COLOURINGS, head_map_figure, search_figure, space_figure, thumbnail_figure
from explorer.models.vocabulary import Kind
from explorer.pages.components import url_state
from explorer.pages.components.caches import cached_model
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.head_analyses import head_analysis
from explorer.pages.components.traces import sentence_trace
from explorer.pages.components.widgets import show_figure
from explorer.service import ModelRef


def captions(count: int) -> list[str]:
    import explorer.settings as settings
    from explorer.models.data import read_lines

    return read_lines(settings.CAPTIONS)[:count]


@st.cache_data(max_entries=16, show_spinner="Comparing every two heads' attention over the captions…")
def cached_map(ref: ModelRef, target_language: str, kind: str, count: int) -> HeadMap:
    from explorer.atlas_studies import atlas

    return atlas(cached_model(ref, target_language), captions(count), kind=kind)


@st.cache_data(max_entries=16, show_spinner="Reading the head's queries and keys…")
def cached_space(ref: ModelRef, target_language: str, kind: str, layer: int, head: int, count: int,
                 projection: str) -> QueryKeySpace:
    from explorer.atlas_studies import query_key_space

    return query_key_space(cached_model(ref, target_language), layer, head, captions(count), kind=kind,
                           projection=projection)


@st.cache_data(max_entries=32, show_spinner="Searching every head…")
def cached_search(ref: ModelRef, target_language: str, kind: str, count: int, query: str, key: str,
                  treebank: bool = False) -> HeadSearch | str:
    """The search over the first `count` captions, or the first `count` trees of the shipped treebank by words."""
    import explorer.settings as settings
    from explorer.atlas_studies import search_heads

    try:
        model = cached_model(ref, target_language)
        if treebank:
            return search_heads(model, None, query, key, count, kind=kind, conllu=settings.TREEBANK)
        return search_heads(model, captions(count), query, key, kind=kind)
    except InputError as error:
        return str(error)


def full_name(short: str) -> str:
    """enc.1.6 → encoder.1.6, the form of a link's `head=`."""
    kind, layer, head = short.split(".")
    return f"{next(k.value for k in Kind if k.short == kind)}.{layer}.{head}"


def colour_values(checkpoint, mapped: HeadMap, colour_by: str) -> dict:
    """head name → what colours it: its layer, its shipped role, its gradient importance, its sink share."""
    if colour_by == "layer":
        return {head.name: head.layer for head in mapped.heads}
    if colour_by == "sink share":
        return {head.name: head.sink_share for head in mapped.heads}
    report = head_analysis("roles" if colour_by == "role" else "importance", checkpoint)
    if report is None:
        return {}
    if colour_by == "role":
        return {entry.spec: (entry.roles[0] if len(entry.roles) == 1 else "several" if entry.roles else "none")
                for entry in report.heads}
    return {entry.spec: entry.gradient_importance for entry in report.heads}


def thumbnail(checkpoint, kind: str, chosen: str) -> None:
    """The chosen head's pattern on the sentence in the sidebar (nothing when the sentence cannot be read)."""
    _, trace = sentence_trace(notices=False)
    if trace is None or not trace.attention.get(kind):
        return
    _, layer, head = (int(part) if part.isdigit() else part for part in chosen.split("."))
    show_figure(thumbnail_figure(trace.pattern(kind)[layer, head], trace.query_tokens(kind), trace.key_tokens(kind),
                                 f"{chosen} on your sentence"), f"atlas-{chosen}-sentence")


def open_on_attention(name: str) -> None:
    """A button that opens the head on the Attention page, on the sentence in the sidebar."""
    if st.button(f"Open {name} on the Attention page →", key=f"open_{name}",
                 help="Its pattern on the sentence in the sidebar, every label, with the other heads of its layer."):
        url_state.follow({"head": full_name(name), "view": "Every head"})
        st.switch_page("attention.py")


def map_view(checkpoint, ref: ModelRef, kind: str, count: int, chosen: str, pruned: set[str]) -> str | None:
    """The map; returns a head clicked on it."""
    mapped = cached_map(ref, checkpoint.target_language, kind, count)
    url_state.kept("atlas_colour", "colour_by", COLOURINGS)
    colour_by = st.radio("Colour the heads by", COLOURINGS, key="atlas_colour", horizontal=True,
                         help="role: the shipped roles (Heads page); importance: gradient importance (Michel et al.); "
                              "sink share: attention on the first token and the special tokens")
    url_state.keep("colour_by", colour_by)
    values = colour_values(checkpoint, mapped, colour_by)
    if colour_by in ("role", "importance") and not values:
        st.caption(f"No {colour_by} is known for this model yet: the Heads page computes it.")
    names = [head.name for head in mapped.heads]
    nearest = pd.Series(mapped.matrix()[names.index(chosen)], index=names).drop(chosen).nsmallest(5)
    figure = head_map_figure(mapped.heads, colour_by, values, chosen, pruned,
                             f"{len(mapped.heads)} {kind} heads over {mapped.sentences} captions: close = attend alike",
                             labelled=set(nearest.index))
    event = st.plotly_chart(figure, key="atlas_map", on_select="rerun", selection_mode="points",
                            config={"displaylogo": False})
    st.caption(f"Distance: the {linked('Jensen–Shannon divergence')} between two heads' attention at the same query, "
               f"in bits (0 alike, 1 nothing in common), averaged over {mapped.queries:,} queries; laid out by "
               f"{linked('multidimensional scaling (MDS)')} (Clark et al. 2019, §6). Click a head to choose it; ✕ marks "
               "a pruned head.")
    st.markdown(f"**{chosen}** attends most like " + ", ".join(f"{name} ({value:.2f} bits)"
                                                                for name, value in nearest.items()) + ".")
    thumbnail(checkpoint, kind, chosen)
    open_on_attention(chosen)
    beside_other_models(checkpoint, count)
    clicked = [point.get("customdata") for point in (event.selection.points if event else []) if point.get("customdata")]
    return clicked[0] if clicked else None


def beside_other_models(checkpoint, count: int) -> None:
    """The maps of up to two other models of text, side by side, each of its first stack, coloured by layer, with
    the mean distance within a layer and across layers under each."""
    from explorer.analyses.corpus.atlas import layer_pairs
    from explorer.capture.input_kinds import TEXT, input_kind
    from explorer.pages.components.session import offered_models, selection

    offered = {label: path for label, path in offered_models().items() if path != selection().model_path}
    url_state.kept_list("atlas_beside", "beside", list(offered))
    chosen = st.multiselect("Beside it: the maps of other models", list(offered), key="atlas_beside", max_selections=2,
                            help="each model's first attention stack over the same captions, coloured by layer")
    url_state.keep("beside", "|".join(chosen))
    if not chosen:
        return
    # two maps a row: three side by side would be too narrow to read at a projector's 1024 px
    columns = [column for _ in range(2) for column in st.columns(2)]
    for column, label in zip(columns, [None, *chosen]):
        ref = chosen_ref_of(label, offered)
        model = cached_model(ref)
        if input_kind(model) is not TEXT:
            column.caption(f"{label} reads images: its heads read patches, not captions.")
            continue
        kind = stack_kind(model, None)
        mapped = cached_map(ref, model.target_language, kind, count)
        within, across = layer_pairs(len(mapped.heads), model.heads)
        distance = mapped.matrix()
        # the model's short name as the title: a narrow column cuts a long one
        figure = head_map_figure(mapped.heads, "layer", {h.name: h.layer for h in mapped.heads}, None, set(),
                                 model.name)
        with column:
            show_figure(figure, f"atlas-beside-{model.name}")
            st.caption(f"{len(mapped.heads)} {kind} heads. "
                       + (f"Mean distance within a layer {distance[within].mean():.3f} bits, across layers "
                          f"{distance[across].mean():.3f}." if within.any() and across.any() else
                          "One head a layer (or one layer): nothing to compare within and across layers."))


def chosen_ref_of(label: str | None, offered: dict[str, str]) -> ModelRef:
    from explorer.pages.components.session import chosen_ref

    return chosen_ref() if label is None else ModelRef.of(offered[label])


def space_view(checkpoint, ref: ModelRef, kind: str, count: int, chosen: str) -> None:
    url_state.kept("atlas_projection", "projection", PROJECTIONS)
    left, right = st.columns(2)
    projection = left.radio("Projection", PROJECTIONS, key="atlas_projection", horizontal=True,
                            help="pca: principal components (fast, linear); tsne: t-SNE (slower; neighbours kept)\n\n"
                                 + term_help("PCA", "t-SNE"))
    url_state.keep("projection", projection)
    colour_by = right.radio("Colour by", ("query or key", "position"), key="atlas_space_colour", horizontal=True)
    _, layer, head = chosen.split(".")
    space = cached_space(ref, checkpoint.target_language, kind, int(layer), int(head), min(count, 100), projection)
    show_figure(space_figure(space.points, colour_by, f"{chosen}: queries and keys of {space.sentences} captions"),
                f"atlas-space-{chosen}")
    st.caption(f"The {linked('query–key space')}: each query (circle) and key (diamond) of the head, both scaled to "
               "the same mean length and the keys moved so that their mean is the queries' (attention is unchanged by "
               "both; AttentionViz, Yeh et al. 2023), so a query tends to sit near the keys it attends to, as far as "
               "two axes can show. Clusters are tokens the head treats alike (colour by position: a positional head "
               "lines them up by place). Hover names the token and the key its query attends most.")


def search_view(checkpoint, ref: ModelRef, kind: str, count: int) -> None:
    reads_text = Kind(kind).is_self and Kind(kind).query_side is Kind(stack_kind(checkpoint, None)).query_side
    sources = ["captions", "treebank (by words)"] if reads_text else ["captions"]
    url_state.kept("atlas_source", "source", sources)
    source = st.radio("Read", sources, key="atlas_source", horizontal=True,
                      help="captions: Multi30k's, token by token; treebank: UD English EWT's dev sentences word by word "
                           "(a word's row the mean of its pieces', a key word's weight the sum), where the patterns "
                           "may name parts of speech (pos:NOUN) and relations (deprel:det, head)")
    url_state.keep("source", source)
    treebank = source != "captions"
    keys = [key for key in KEY_PATTERNS if Kind(kind).is_self or key not in POSITIONAL]
    keys += [key for key in TREE_KEY_PATTERNS if treebank and key not in keys]
    url_state.kept("atlas_key", "key", keys)
    url_state.kept_text("atlas_word", "word")
    url_state.kept_text("atlas_key_word", "key_word")
    left, middle, right = st.columns(3)
    query_text = left.text_input("From queries", key="atlas_word", placeholder="every query",
                                 help="empty: every query; a word (it); with the treebank pos:NOUN or deprel:nsubj. "
                                      "Case and the word-start mark are ignored")
    key = middle.selectbox("To keys", keys, key="atlas_key",
                           help="previous/next: the neighbouring token; same: the same piece earlier in the sentence; "
                                "first: the first token; special: [CLS], [SEP], </s> …; word:X: a word; with the "
                                "treebank head: the query word's syntactic head, dependent: a word it heads, pos:X, "
                                "deprel:X")
    key_word = right.text_input("X (for the key's :X)", key="atlas_key_word") if key.endswith(":X") else ""
    url_state.keep("key", key)
    url_state.keep("word", query_text.strip())
    url_state.keep("key_word", key_word.strip())
    if key.endswith(":X") and not key_word.strip():
        st.info("Type what X is (a word, a part of speech such as ADJ, or a relation such as det).")
        return
    key_pattern = key.replace(":X", f":{key_word.strip()}") if key.endswith(":X") else key
    query = query_text.strip()
    query = "any" if not query else query if ":" in query else f"word:{query}"
    result = cached_search(ref, checkpoint.target_language, kind, count, query, key_pattern, treebank)
    if isinstance(result, str):
        st.info(result)
        return
    shown = min(12, len(result.heads))
    show_figure(search_figure(result.heads, result.chance, f"attention from {said(query)} to {said(key_pattern)}: "
                                                           f"the best {shown} of {len(result.heads)} heads"),
                "atlas-search", numbers=result.table())
    st.caption(f"Bars: each head's share of the attention of {result.queries:,} queries (those with a matching key: "
               "the first token has no previous one) on the matching keys, with a 95% interval (sentence bootstrap); "
               "the dashed line: what uniform attention would give. The ⬇ CSV has every head.")
    st.markdown("**Where the best heads do it most**")
    for number, example in enumerate(result.examples[:4]):
        left, right = st.columns([5, 1])
        left.markdown(f"**{example.head}**, from “{example.token}” (position {example.query}): {example.share:.0%} "
                      f"of its attention on the matching keys, most on “{example.top_key}” — in “{example.sentence}”")
        right.button("Open", key=f"atlas_example_{number}", on_click=open_example, args=(example,),
                     help="This sentence and query on the Attention page, this head chosen")
    if st.session_state.pop("atlas_open", False):
        st.switch_page("attention.py")


PATTERN_WORDS = {"any": "every query", "previous": "the previous token", "next": "the next token",
                 "self": "itself", "same": "the same piece earlier", "first": "the first token",
                 "special": "the special tokens", "head": "its syntactic head", "dependent": "its dependents"}


def said(pattern: str) -> str:
    """A pattern in words, for a title: word:it → “it”, deprel:det → deprel det."""
    if pattern in PATTERN_WORDS:
        return PATTERN_WORDS[pattern]
    prefix, _, value = pattern.partition(":")
    return f"“{value}”" if prefix == "word" else f"{prefix} {value}"


def open_example(example) -> None:
    """A button's callback (before the sidebar's sentence box is drawn again): the example's sentence, head and
    query for the Attention page."""
    st.session_state["sentence"] = example.sentence
    url_state.follow({"head": full_name(example.head), "query": str(example.query), "view": "Every head"})
    st.session_state["atlas_open"] = True
