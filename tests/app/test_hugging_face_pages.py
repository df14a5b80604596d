"""The app on Hugging Face models opened from a folder: every page runs on every family, with the model's own
numbers (Translation, Attention), its positions and walkthrough (Internals), steps or masked-token view
(Decoding), roles (Heads), pruning (Prune) and beside other models (Compare). Tiny random models of every family:
Marian, BART, GPT-2, BERT, T5 and M2M100 (tests/hugging_face_models.py)."""

import json
import re

import numpy as np
import pytest

from explorer.analyses.sentence.positional import bias_by_offset
from explorer.analyses.sentence.sentence_similarity import PAIR_SENTENCE, embed_texts
from explorer.capture.head_sets import HeadSpec
from explorer.capture.trace import trace_sentence
from explorer.models.interface import FILL_MASK, Embeds
from explorer.models.loader import open_model
from explorer.models.vocabulary import attention_hook
from explorer.pages.components.session import OWN
from tests.app.conftest import open_page, open_part, prune_on_page, token_heatmaps
from tests.app.test_pages import traces_of
from tests.explorer.test_token_heatmap import heatmap_cells
from tests.hugging_face_models import FAMILIES, SENTENCE, saved_model


@pytest.fixture(scope="module", params=list(FAMILIES))
def folder(request, tmp_path_factory):
    return saved_model(request.param, tmp_path_factory)


@pytest.mark.slow
def test_translation_and_attention_show_the_models_own_numbers(folder):
    loaded = open_model(folder)
    expected = trace_sentence(loaded, SENTENCE)           # as the pages trace it: the sentence recased
    at = open_page("translation.py", SENTENCE, model=OWN, own_model=str(folder))
    if isinstance(loaded, Embeds):          # one vector, drawn; the second sentence's cosine, recomputed here
        embedding = embed_texts(loaded, [expected.text])[0]
        bars = traces_of(json.loads(at.get("plotly_chart")[0].proto.spec))[0]
        np.testing.assert_allclose(np.array(bars["y"], dtype=float), embedding, atol=1e-6)
        second = embed_texts(loaded, [PAIR_SENTENCE])[0]
        assert at.metric[0].value == f"{float(embedding @ second):.3f}"
        assert len(table_with(at, "caption")) == 5 and expected.output_text == ""     # the 5 nearest captions
    elif loaded.task == FILL_MASK:                                     # no output text: says so, and where to look
        assert "fills in masked tokens" in at.text[0].value and expected.output_text == ""
    else:
        assert at.text[0].value == expected.output_text.strip()     # st.text drops a byte-level BPE's leading space
    assert any("Hugging Face" in c.value for c in at.caption)
    at = open_page("attention.py", SENTENCE, model=OWN, own_model=str(folder))
    kinds = at.radio(key="attention_kind").options
    assert len(kinds) == len(loaded.kinds)                           # only the kinds the model has
    kind = loaded.kinds[0]
    heatmap = heatmap_cells(token_heatmaps(at)[0])
    # every token, or (more than a projector's column labels: GPT-2's pieces) a window of them, named by position
    rows, columns = heatmap["queries"], heatmap["keys"]
    assert rows[0] == columns[0] == 0
    assert [int(label.split(" ", 1)[0]) for label in heatmap["columns"]] == columns
    np.testing.assert_allclose(heatmap["weights"], expected.pattern(kind)[0, 0][np.ix_(rows, columns)], atol=1e-5)


@pytest.mark.slow
def test_internals_and_decoding_draw_every_family(folder):
    model = open_model(folder)
    at = open_part(open_page("internals.py", SENTENCE, model=OWN, own_model=str(folder)), "Q, K, V walkthrough")
    assert any("scores over the keys" in json.loads(chart.proto.spec)["layout"]["title"]["text"]
               for chart in at.get("plotly_chart"))
    # the heads' z concatenated: heads × d_k numbers (T5's need not be d_model), then W_O makes d_model of them
    assert any(f"= {model.heads * model.d_k} numbers) times W_O" in m.value and f"({model.d_model} numbers)" in m.value
               for m in at.markdown)
    open_part(at, "Positions")
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    titles = [spec["layout"]["title"]["text"] for spec in specs]
    if model.architecture.positional == "relative":        # no position table: each head's bias by offset, the model's own
        spec, stack = next((spec, title.split()[0]) for spec, title in zip(specs, titles)
                           if "bias by relative offset" in title)           # "decoder self-attention: each head's…"
        trace = trace_sentence(model, SENTENCE)
        length = len(trace.source_ids if stack == "encoder" else trace.target_ids)
        _, expected = bias_by_offset(model.position_bias(stack, length, length).numpy())
        np.testing.assert_allclose(np.array(traces_of(spec)[0]["z"], dtype=float), expected, atol=1e-6)
    else:
        assert any("position" in title.lower() for title in titles)
    at = open_page("decoding.py", SENTENCE, model=OWN, own_model=str(folder))

    def titles() -> list[str]:
        return [json.loads(chart.proto.spec)["layout"]["title"]["text"] for chart in at.get("plotly_chart")]
    if isinstance(model, Embeds):           # nothing to decode: it says so in a sentence, and draws nothing
        assert titles() == [] and any("do not apply to it" in i.value for i in at.info)
    elif model.task == FILL_MASK:
        assert any(re.search(r"masked \d+: hid ", block.proto.body) for block in at.get("html"))    # its candidates
        assert any("Heads behind" in t for t in titles())
    else:                                   # a tab at a time: every step and one step, then beam search
        assert any('class="decoding-steps"' in block.proto.body for block in at.get("html"))    # HTML bars
        assert not any("beam" in t.lower() for t in titles())
        open_part(at, "Beam search", "decoding_part")
        assert any("beam" in t.lower() for t in titles())


CONLLU = """# text = a dog runs in the snow
1	a	a	DET	_	_	2	det	_	_
2	dog	dog	NOUN	_	_	3	nsubj	_	_
3	runs	run	VERB	_	_	0	root	_	_
4	in	in	ADP	_	_	6	case	_	_
5	the	the	DET	_	_	6	det	_	_
6	snow	snow	NOUN	_	_	3	obl	_	_

"""


def reading_scores(model, sentences: list[str]) -> dict[str, dict]:
    """Each head of the stack that reads the text (the encoder; a decoder-only model's decoder): the scores behind
    its roles, by Voita et al.'s definitions (explorer/analyses/corpus/roles.py's docstring), from the model's own forward one
    sentence at a time. Queries and the rarest-piece candidates are word pieces (no special token); confidence: the
    mean of each query's largest weight; offset share: the share of queries peaking at the head's most frequent offset
    (−7 … +7); rare rate: the share of sentences whose mean over queries peaks on the rarest piece (counted over these
    sentences), and its chance: the share of candidates that are (tied) rarest."""
    kind = "encoder" if model.has("encoder") else "decoder"
    rows = [model.encode(text).ids for text in sentences]
    counts = np.bincount(np.concatenate(rows), minlength=max(map(max, rows)) + 1)
    confidence, offsets = np.zeros((model.layers(kind), model.heads)), np.zeros((model.layers(kind), model.heads, 17))
    hits, chance, usable, queries = 0.0, 0.0, 0, 0
    for ids in rows:
        batch = model.pad([ids])
        _, cache = model.run_with_cache(batch if kind == "encoder" else None, batch if kind == "decoder" else None,
                                        attention_hook(kind, "*", "pattern"))
        pattern = cache.layers(kind, "pattern")[0].double().numpy()                  # [layers, heads, query, key]
        words = np.array([token not in model.special_ids for token in ids])
        real = pattern[:, :, words]
        confidence += real.max(-1).sum(-1)
        peaks = np.clip(real.argmax(-1) - np.flatnonzero(words), -8, 8)            # key − query of each peak
        for offset in range(-8, 9):
            offsets[..., offset + 8] += (peaks == offset).sum(-1)
        queries += int(words.sum())
        frequency = np.where(words, counts[ids], np.inf)
        if words.sum() >= 2:
            usable += 1
            hits = hits + (frequency[real.mean(2).argmax(-1)] == frequency.min())
            chance += np.mean(frequency[words] == frequency.min())
    return {str(HeadSpec(kind, layer, head)): {"confidence": confidence[layer, head] / queries,
                                                "share": offsets[layer, head, 1:-1].max() / queries,
                                                "rate": hits[layer, head] / usable, "chance": chance / usable}
            for layer, head in np.ndindex(confidence.shape)}


def splitting(values: list[float]) -> float:
    """A threshold between the values, near their median and far from each (no score rounded to 4 places crosses
    it): some heads above, some below."""
    ordered = sorted(values)
    gaps = [(abs(i - len(ordered) / 2), (low + high) / 2) for i, (low, high) in enumerate(zip(ordered, ordered[1:]), 1)
            if high - low > 1e-3]
    return min(gaps)[1] if gaps else ordered[-1] + 0.01


@pytest.mark.slow
def test_heads_page_computes_roles_for_the_kinds_the_model_has(folder, tmp_path):
    treebank = tmp_path / "tiny.conllu"
    treebank.write_text(CONLLU * 3)
    text = tmp_path / "tiny.txt"              # a few lines, not the bundled 1,014 (tiny random models)
    lines = [SENTENCE, "A man is riding a bicycle.", "Two dogs play in the snow."] * 2
    text.write_text("\n".join(lines) + "\n")
    at = open_page("heads.py", SENTENCE, model=OWN, own_model=str(folder), heads_recompute=True)
    # Thresholds that split the reading stack's heads, so that roles are given to some and not others.
    scores = reading_scores(open_model(folder), lines)
    positional, rare = splitting([h["share"] for h in scores.values()]), splitting([h["rate"] for h in scores.values()])
    for name, value in (("positional", positional), ("rare_rate", rare), ("rare_over_chance", 0.0)):
        at.number_input(key=f"threshold_{name}").set_value(value)
    # A few lines hold fewer than 500 distinct tokens, every one among the 500 most frequent: the rare-token filter
    # (Voita et al.'s §5.3) would leave no sentence, so it is switched off here, as reading_scores counts.
    at.number_input(key="heads_rare_common_top").set_value(0)
    at.text_input(key="heads_text_path").input(str(text)).run()
    at.text_input(key="heads_treebank_path").input(str(treebank)).run()
    at.button(key="heads_compute_roles").click().run()
    assert not at.exception and not at.error
    kinds = open_model(folder).kinds
    role_maps = [block for block in at.get("html") if 'class="role-map"' in block.proto.body]
    assert len(role_maps) == len(kinds)
    table = table_with(at, "roles")
    assert len(table) == 2 * 4 * len(kinds)      # every head of the tiny model: 2 layers × 4 heads
    # The reading stack's roles and confidence as computed here (syntactic roles need 100 arcs: three trees give none).
    roles = {spec: ", ".join(["positional"] * bool(h["share"] >= positional) + ["rare-token"] * bool(h["rate"] >= rare))
             for spec, h in scores.items()}
    assert [table.loc[spec, "roles"] for spec in scores] == list(roles.values())
    assert 0 < sum("positional" in role for role in roles.values()) < len(roles)      # some heads have it, some not
    np.testing.assert_allclose([table.loc[spec, "confidence"] for spec in scores],
                               [h["confidence"] for h in scores.values()], atol=1e-4)   # shown to 4 places


def table_with(at, column):
    return next(frame.value for frame in at.dataframe if column in frame.value.columns)


@pytest.mark.slow
def test_prune_page_prunes_a_hugging_face_model(folder):
    loaded = open_model(folder)
    kind = "cross" if loaded.has("cross") else loaded.kinds[0]
    layer_heads = [HeadSpec(kind, 1, head) for head in range(loaded.heads)]
    at = open_page("prune.py", SENTENCE, model=OWN, own_model=str(folder))
    assert [len(row.options) for row in at.main.pills] == [4] * 2 * len(loaded.kinds)     # a row of heads a layer
    for spec in layer_heads:
        prune_on_page(at, folder.name, str(spec))
    assert not at.exception
    if isinstance(loaded, Embeds):          # how far the pruned embedding moved, recomputed here
        layer_heads += [HeadSpec(kind, 0, head) for head in range(loaded.heads)]     # every head: a visible move
        for spec in layer_heads:
            prune_on_page(at, folder.name, str(spec))
        whole, pruned = (embed_texts(loaded, [SENTENCE.capitalize()], heads)[0] for heads in ([], layer_heads))
        metric = next(m for m in at.metric if m.label == "Cosine, pruned vs whole model")
        assert metric.value == f"{float(whole @ pruned):.3f}" and float(metric.value) < 0.999
        return
    if loaded.task == FILL_MASK:
        assert any("masked language model has no output text" in c.value for c in at.caption)
        return
    pruned = trace_sentence(loaded, SENTENCE, pruned=layer_heads)
    assert [t.value for t in at.text][1] == pruned.output_text.strip()


@pytest.mark.slow
def test_compare_page_sets_any_models_side_by_side(folder, h8):
    at = open_page("compare.py", SENTENCE)
    at.text_area(key="compare_others").input(str(folder)).run()
    at.multiselect(key="compare_models").set_value(["8 heads (en-de-h8)", str(folder)]).run()
    assert not at.exception and not at.error
    assert any("different tokens" in c.value for c in at.caption)       # no shared focus token across tokenizers
    kind = at.radio(key="compare_kind").value
    loaded = open_model(folder)
    charts = at.get("plotly_chart")
    assert len(charts) == 1 + loaded.has(kind) and h8.has(kind)      # a figure of heads per model that has the kind
    # h8's figure first: its first panel is layer 0's head 0, the pattern traced here
    first = np.array(traces_of(json.loads(charts[0].proto.spec))[0]["z"], dtype=float)
    # the app feeds a bundled translator the all-lower-case sentence in sentence case (app_casing), others as typed
    np.testing.assert_allclose(first, trace_sentence(h8, SENTENCE, fix_casing=True).pattern(kind)[0, 0], atol=1e-6)
    if loaded.has(kind):
        drawn = np.array(traces_of(json.loads(charts[1].proto.spec))[0]["z"], dtype=float)
        np.testing.assert_allclose(drawn, trace_sentence(loaded, SENTENCE).pattern(kind)[0, 0], atol=1e-6)


@pytest.mark.slow
def test_a_recompute_sent_to_a_bad_ray_address_says_so(folder, tmp_path):
    treebank = tmp_path / "tiny.conllu"
    treebank.write_text(CONLLU)
    at = open_page("heads.py", SENTENCE, model=OWN, own_model=str(folder), heads_recompute=True)
    at.text_input(key="heads_ray_address").input("127.0.0.1:1").run()
    at.text_input(key="heads_treebank_path").input(str(treebank)).run()
    at.button(key="heads_compute_roles").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == ["Could not compute on Ray: Ray address 127.0.0.1:1: no Ray cluster "
                                           "answers there (Connection refused); start one with `ray start --head` "
                                           "and give the address it prints"]
