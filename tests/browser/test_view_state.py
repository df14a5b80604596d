"""The whole view lives in the URL and in the session: moving between pages never drops a choice, and a link
brings back the page's own choices (the head looked at, the query, the focus token, the open tab)."""

from tests.browser.harness import go_to, open_view, query_parameters, settle, submit_sentence

SENTENCE = "A man in a blue shirt is riding a bicycle down the street."


def visit(page, title: str) -> None:
    go_to(page, title)
    settle(page)


def test_pruned_heads_survive_a_page_change(context, app_url):
    page = open_view(context, app_url, "prune", model="h8", sentence=SENTENCE, pruned="cross.2.*")
    page.get_by_text("8 of 72 heads pruned").wait_for()
    visit(page, "Translation")
    assert query_parameters(page)["pruned"] == "cross.2.0-7" or "cross.2" in query_parameters(page)["pruned"]
    visit(page, "Prune")
    page.get_by_text("8 of 72 heads pruned").wait_for(timeout=10_000)       # on main: "0 of 72 heads pruned"
    assert "cross.2" in query_parameters(page).get("pruned", "")
    # A row of buttons a layer, numbered by head: cross-attention layer 2's button 5 is cross.2.5, shown pressed.
    row = page.get_by_role("toolbar", name="Encoder–decoder cross-attention layer 2: heads pruned")
    assert row.get_by_role("button", name="5", exact=True).get_attribute("aria-pressed") == "true"
    enc = page.get_by_role("toolbar", name="Encoder self-attention layer 0: heads pruned")
    assert enc.get_by_role("button", name="5", exact=True).get_attribute("aria-pressed") == "false"
    assert context.blocked == []


def test_the_head_and_the_tab_a_link_names_stay_across_pages(context, app_url):
    page = open_view(context, app_url, "attention", model="h8", sentence=SENTENCE, head="cross.2.5",
                     view="Head average", part="Scores → softmax")
    page.locator(".token-heatmap", has_text="cross, layer 2, head 5").wait_for()     # on main: encoder, 0, 0
    page.locator(".token-heatmap", has_text="cross, layer 2: average of the 8 heads").wait_for()
    visit(page, "Internals")                        # the same head, looked at from inside
    page.locator(".gtitle", has_text="cross, layer 2, head 5: the model's real numbers").wait_for()
    visit(page, "Decoding")
    visit(page, "Attention")
    page.locator(".token-heatmap", has_text="cross, layer 2: average of the 8 heads").wait_for()
    assert query_parameters(page)["head"] == "cross.2.5" and query_parameters(page)["view"] == "Head average"
    assert context.blocked == []


def test_the_query_and_the_focus_token_are_kept_by_the_url(context, app_url):
    page = open_view(context, app_url, "internals", model="h8", sentence=SENTENCE, head="encoder.1.3", query="5",
                     focus="4", part="Q, K, V walkthrough")
    page.locator(".gtitle", has_text="query ▁shirt: scores over the keys").wait_for()     # on main: the middle
    visit(page, "Compare models")
    assert page.get_by_label("Focus on the source token").first.input_value() == "4: ▁blue"
    visit(page, "Internals")
    page.locator(".gtitle", has_text="query ▁shirt: scores over the keys").wait_for()
    assert query_parameters(page)["query"] == "5" and query_parameters(page)["focus"] == "4"
    assert context.blocked == []


def test_a_newline_in_the_sentence_becomes_a_space(context, app_url):
    page = open_view(context, app_url, "", model="h8", sentence=SENTENCE)
    submit_sentence(page, "A dog runs\non the beach.")
    settle(page)
    assert query_parameters(page)["sentence"] == "A dog runs on the beach."           # on main: "%0A" in the URL
    assert page.get_by_label("English sentence").first.input_value() == "A dog runs on the beach."
    assert context.blocked == []
