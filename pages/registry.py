"""Every page of the app, once: its script, its name in the sidebar, its icon, its group and its address.

pages/app.py builds the navigation from PAGES; the screenshot scripts, the browser harness, the AppTests and the
benchmarks read the same list, so a new page is one entry here (and its script). No streamlit import: scripts and
tests read this without starting the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LEARN, RESEARCH = "Learn", "Research"


@dataclass(frozen=True)
class Page:
    file: str               # the script, in pages/
    title: str              # its name in the sidebar, the browser's tab and (as a rule) its heading
    icon: str               # a Material Symbols name: drawn with the font inside Streamlit (emoji need a font)
    group: str              # LEARN or RESEARCH
    default: bool = False   # the page the app opens on, served at the root
    # What the page is about: "text" (a sentence's tokens), "image", or "any" (it adapts, or reads no model). The
    # names of explorer/capture/input_kinds.py's kinds: a model that reads images is sent from a text page to the
    # image page, and the contract test opens every text page on every family of text.
    reads: str = "text"

    @property
    def name(self) -> str:
        """The slug Streamlit derives from the file name: the page's URL path, unless it is the default."""
        return Path(self.file).stem

    @property
    def url_path(self) -> str:
        """Its address under the app's root, as st.Page's url_path: empty for the default page."""
        return "" if self.default else self.name

    @property
    def material_icon(self) -> str:
        return f":material/{self.icon}:"


# Learn: the pages a student needs, in the order of a first visit; Research: the instruments. The sidebar's order.
PAGES = (
    Page("lesson.py", "Lesson", "school", LEARN, default=True, reads="any"),
    Page("translation.py", "Translation", "translate", LEARN),
    Page("attention.py", "Attention", "grid_on", LEARN),
    Page("images.py", "Images", "image", LEARN, reads="image"),
    Page("compare.py", "Compare models", "compare", LEARN),
    Page("prune.py", "Prune", "content_cut", LEARN),
    Page("glossary.py", "Glossary", "dictionary", LEARN, reads="any"),
    Page("internals.py", "Internals", "calculate", RESEARCH),
    Page("decoding.py", "Decoding", "account_tree", RESEARCH),
    Page("heads.py", "Heads", "hub", RESEARCH),
    Page("faithfulness.py", "Faithfulness", "fact_check", RESEARCH),
    Page("patching.py", "Patching", "healing", RESEARCH),
    Page("atlas.py", "Atlas", "scatter_plot", RESEARCH),
    Page("papers.py", "Papers", "menu_book", RESEARCH, reads="any"),
)
DEFAULT = next(page for page in PAGES if page.default)


def page(key: str) -> Page:
    """A page by its file ("compare.py") or its name ("compare")."""
    found = [p for p in PAGES if key in (p.file, p.name)]
    if not found:
        raise KeyError(f"{key}: no such page in pages/registry.py")
    return found[0]


def pages_reading(kind: str) -> list[Page]:
    """The pages that show a model reading this kind of input ("text", "image"), those that adapt included."""
    return [each for each in PAGES if each.reads in (kind, "any")]


def groups() -> dict[str, list[Page]]:
    """The pages by group, each in the sidebar's order: what st.navigation takes."""
    grouped: dict[str, list[Page]] = {}
    for each in PAGES:
        grouped.setdefault(each.group, []).append(each)
    return grouped
