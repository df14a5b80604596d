"""The Glossary page, the one-sentence intro under every page's title, command lines folded away, and every term a
page explains (pages/components/glossary_links.py) being one the glossary defines."""

import ast
import re

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Block, Caption, Expander, Markdown, Title

from explorer.pages.components import access
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.widgets import COMMAND_LINE
from explorer.teaching.glossary import GLOSSARY, slug
from tests.app.conftest import open_page
from tests.conftest import ROOT

SENTENCE = "Two dogs play in the snow."
INTRODUCED = ["translation.py", "attention.py", "internals.py", "faithfulness.py", "decoding.py", "heads.py",
              "patching.py", "compare.py", "prune.py", "papers.py"]
OPENED: dict[str, AppTest] = {}
# The command lines each page shows (on its default view, for the bundled model), folded away.
FOLDED = {"faithfulness.py": 1, "patching.py": 1}


def glossary_page(**query) -> AppTest:
    """The Glossary page run on its own (it needs nothing of the sidebar), with a link's query string."""
    at = AppTest.from_file(str(ROOT / "pages" / "glossary.py"), default_timeout=60)
    at.query_params.update(query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def opened(page: str) -> AppTest:
    """Each page run once for the tests that read it."""
    if page not in OPENED:
        OPENED[page] = open_page(page, SENTENCE)
    return OPENED[page]


def outside_expanders(block: Block):
    """The elements of a block, depth first, except those folded inside an expander."""
    for child in block.children.values():
        if isinstance(child, Expander):
            continue
        if isinstance(child, Block):
            yield from outside_expanders(child)
        else:
            yield child


def test_the_glossary_lists_every_term_under_its_anchor():
    at = glossary_page()
    assert isinstance(at.main.children[0], Title) and isinstance(at.main.children[1], Caption)
    assert [(h.value, h.proto.anchor) for h in at.subheader] == [(term, slug(term)) for term in GLOSSARY]
    shown = [m.value for m in at.markdown]
    assert [text.split("\n\n:small[")[0] for text in shown] == [entry.definition for entry in GLOSSARY.values()]
    # Where to read more and the related terms, small under the definition; a related term links to its entry.
    assert any(":small[:gray[" in text and "[rollout](#rollout)" in text for text in shown)


def test_the_search_box_narrows_the_list():
    at = glossary_page()
    at.text_input(key="glossary_search").input("nucleus").run()
    assert [h.value for h in at.subheader] == ["top-p"]
    at.text_input(key="glossary_search").input("causal").run()
    assert {h.value for h in at.subheader} == {"look-ahead mask", "activation patching"}
    at.text_input(key="glossary_search").input("no such word anywhere").run()
    assert not at.subheader and "No term matches" in at.info[0].value


def test_a_pages_link_opens_the_glossary_with_its_entry_first():
    at = glossary_page(term="nats")
    assert isinstance(at.main.children[2], Block)             # the entry, in a box, above the search box
    assert at.main.children[2].markdown[0].value == "**nats**"
    assert at.main.children[2].markdown[1].value.startswith(GLOSSARY["nats"].definition)
    assert len(at.subheader) == len(GLOSSARY)                 # and the whole list under it
    assert len(glossary_page(term="no-such-term").markdown) == len(GLOSSARY)     # an unknown one: just the list


def test_the_glossary_opens_from_the_navigation():
    at = open_page("glossary.py")
    assert at.title[0].value == "Glossary" and len(at.subheader) == len(GLOSSARY)


def test_links_and_tooltips_come_from_the_glossary():
    assert linked("nats") == "[nats](glossary?term=nats#nats)"
    assert linked("gradient × input", "Gradient × input") == \
        "[Gradient × input](glossary?term=gradient-x-input#gradient-x-input)"
    assert term_help("nats").startswith(GLOSSARY["nats"].definition)
    both = term_help("entropy", "nats")
    assert "**entropy**" in both and GLOSSARY["nats"].definition in both
    with pytest.raises(KeyError, match="not in the glossary"):
        term_help("attentoin")
    with pytest.raises(KeyError):
        linked("attentoin")


def strings(node: ast.AST) -> list[str]:
    """The texts an argument can be: a constant, either branch of `a if test else b`, the items of a (starred)
    list; a name or an expression computed otherwise fails the test (it cannot be checked here)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return strings(node.body) + strings(node.orelse)
    if isinstance(node, ast.Starred):
        return strings(node.value)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [text for item in node.elts for text in strings(item)]
    if isinstance(node, ast.Name) and node.id == "term":     # pages/lesson.py links each step's STEP_TERMS
        from explorer.teaching.lesson_steps import STEP_TERMS
        return [term for terms in STEP_TERMS.values() for term in terms]
    if isinstance(node, ast.Attribute) and node.attr == "metric":    # a corpus Scorer's measure: every registered one
        from explorer.analyses.corpus.corpus_scoring import SCORERS
        return [scorer.metric for scorer in SCORERS.values()]
    if isinstance(node, ast.Attribute) and node.attr == "terms":     # a registered analysis's own terms
        from explorer.analyses.registry import registered
        return [term for analysis in registered().values() for term in analysis.terms]
    raise AssertionError(f"a term the test cannot read: {ast.unparse(node)}")


def test_on_a_server_with_a_token_the_links_carry_it(monkeypatch):
    """A link opens a new tab, a new session: without the token a shared server would ask for it again."""
    monkeypatch.setenv(access.SERVE, "1")
    monkeypatch.setenv(access.TOKEN, "class-token-42")
    access.policy.cache_clear()
    try:
        at = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
        at.query_params.update({"sentence": SENTENCE, "token": "class-token-42"})
        at.run()
        at.switch_page("translation.py")
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("[piece](glossary?term=piece&token=class-token-42#piece)" in c.value for c in at.caption)
    finally:
        monkeypatch.undo()
        access.policy.cache_clear()


def explained_terms(source: str) -> list[str]:
    """The terms a page's source passes to term_help (every argument) and linked (the first), conditional ones
    (`"BLEU" if translates else "perplexity"`) both ways."""
    terms = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("term_help", "linked"):
            arguments = node.args if node.func.id == "term_help" else node.args[:1]
            terms += [text for argument in arguments for text in strings(argument)]
    return terms


def test_every_term_a_page_explains_is_in_the_glossary():
    used = {path.name: explained_terms(path.read_text()) for path in sorted((ROOT / "pages").rglob("*.py"))
            if path.name != "glossary_links.py"}         # the helper itself
    unknown = {page: [t for t in terms if t not in GLOSSARY] for page, terms in used.items()}
    assert not any(unknown.values()), unknown
    # Every page with an intro explains terms through the helper, and most of the glossary is reached from a page.
    pages_with_terms = {page for page, terms in used.items() if terms}
    assert set(INTRODUCED) - {"papers.py"} <= pages_with_terms
    assert len({t for terms in used.values() for t in terms}) >= 60


@pytest.mark.slow
@pytest.mark.parametrize("page", INTRODUCED)
def test_each_page_opens_with_one_sentence_on_how_to_read_it(page):
    at = opened(page)
    children = list(at.main.children.values())
    title = next(i for i, child in enumerate(children) if isinstance(child, Title))
    intro = children[title + 1]
    assert isinstance(intro, (Caption, Markdown)), (page, type(intro).__name__)
    text = intro.value
    assert text.endswith(".") and not re.search(r"[.!?]\s", text[:-1]), (page, text)      # one sentence
    assert "python -m" not in text and "`" not in text


@pytest.mark.slow
@pytest.mark.parametrize("page", INTRODUCED)
def test_no_command_line_outside_an_expander(page):
    at = opened(page)
    texts = [element.value for element in outside_expanders(at.main) if isinstance(element, (Caption, Markdown))]
    assert texts and not [text for text in texts if "python -m" in text], page
    # The command lines are still there, folded under one heading.
    folded = [c.value for e in at.expander if e.label == COMMAND_LINE for c in e.caption]
    assert len(folded) == FOLDED.get(page, 0) and all("`python -m explorer " in text for text in folded), folded


@pytest.mark.parametrize("part", ["Head detectors", "Attention sinks"])
def test_the_heads_tabs_fold_their_command_line(part):
    at = open_page("heads.py", SENTENCE, heads_part=part)
    texts = [element.value for element in outside_expanders(at.main) if isinstance(element, (Caption, Markdown))]
    assert texts and not [text for text in texts if "python -m" in text], part
    folded = [c.value for e in at.expander if e.label == COMMAND_LINE for c in e.caption]
    assert len(folded) == 1 and "`python -m explorer " in folded[0], folded
