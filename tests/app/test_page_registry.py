"""pages/registry.py is the one list of pages: it names every page script, and the app's navigation is built
from it (so the scripts and tests that read it see the pages a person sees)."""

import subprocess
import sys
from pathlib import Path

import streamlit
from streamlit.testing.v1 import AppTest

from explorer.pages.registry import DEFAULT, LEARN, PAGES, RESEARCH, groups, page
from tests.conftest import ROOT

# The scripts in pages/ that are not pages: the entry (navigation and sidebar), what start.sh runs, the list itself.
NOT_PAGES = {"__init__.py", "app.py", "launch.py", "registry.py", "streamlit_offline.py"}


def test_the_registry_names_every_page_script_and_nothing_else():
    scripts = {path.name for path in (ROOT / "pages").glob("*.py")} - NOT_PAGES
    assert sorted(entry.file for entry in PAGES) == sorted(scripts)
    assert len({entry.title for entry in PAGES}) == len({entry.url_path for entry in PAGES}) == len(PAGES)
    assert [entry for entry in PAGES if entry.default] == [DEFAULT] and DEFAULT.url_path == ""
    assert {entry.group for entry in PAGES} == {LEARN, RESEARCH}
    # One group after the other, as the sidebar shows them: no page of Learn among Research's.
    assert [entry for pages in groups().values() for entry in pages] == list(PAGES)
    assert page("compare.py") is page("compare") and page("compare").title == "Compare models"


def test_the_registry_reads_without_streamlit():
    """Scripts and benchmarks read the list without paying for Streamlit's import."""
    code = "import sys, explorer.pages.registry; assert 'streamlit' not in sys.modules, 'streamlit imported'"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_the_app_builds_its_navigation_from_the_registry(monkeypatch):
    """What pages/app.py passes to st.navigation, page by page, is the registry's: the script, title, icon,
    address, group and default. The run stops there: the pages themselves are the other AppTests' business."""
    built = []

    def navigation(pages, **options):
        built.append((pages, options))
        streamlit.stop()

    monkeypatch.setattr(streamlit, "navigation", navigation)
    at = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    (pages, options), = built
    assert options["position"] == "sidebar" and options["expanded"]
    assert list(pages) == list(groups())
    drawn = [(group, Path(entry._page).relative_to(ROOT / "pages").as_posix(), entry.title, entry.icon,
              entry.url_path, entry._default) for group, entries in pages.items() for entry in entries]
    assert drawn == [(entry.group, entry.file, entry.title, entry.material_icon, entry.url_path, entry.default)
                     for entry in PAGES]
