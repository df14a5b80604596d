"""The glossary (explorer/teaching/glossary.py): every definition written, every anchor unique, the terms a student meets."""

import pytest

from explorer.teaching.glossary import GLOSSARY, entry, matching, slug

# The terms issue 29 names: each must have an entry.
REQUIRED = [
    "attention weight", "head", "layer", "query, key, value", "d_model", "d_k", "scaled dot-product attention",
    "softmax", "mask", "padding mask", "look-ahead mask", "positional encoding", "embedding", "residual stream",
    "layer norm", "W_O", "z", "encoder", "decoder", "cross-attention", "self-attention", "greedy decoding",
    "beam search", "teacher forcing", "logits", "nats", "entropy", "KL divergence", "logit lens", "rollout",
    "attention flow", "leave-one-out", "gradient × input", "Spearman ρ", "faithfulness", "attention sink",
    "induction head", "previous-token head", "positional head", "syntactic head", "rare-token head",
    "head importance", "pruning", "activation patching", "BLEU", "chrF", "perplexity", "piece",
    "norm-based attention", "dependency relation", "Multi30k", "sampling", "temperature", "top-k", "top-p",
    # issue 46: the lecture's training step
    "one-hot", "cross-entropy", "loss", "argmax",
    # issue 45: a sentence encoder's output
    "sentence embedding", "cosine similarity",
]


def test_every_required_term_has_a_written_definition():
    assert not [term for term in REQUIRED if term not in GLOSSARY]
    for term, (definition, see, related) in GLOSSARY.items():
        assert definition.strip() and definition.endswith("."), term
        sentences = definition.count(". ") + 1
        assert sentences <= 4 and len(definition) <= 420, (term, sentences, len(definition))
        assert isinstance(see, str) and all(other in GLOSSARY and other != term for other in related), term


def test_slugs_are_unique_anchors_in_alphabetical_order():
    slugs = [slug(term) for term in GLOSSARY]
    assert len(set(slugs)) == len(slugs)
    assert all(s and s == s.lower() and s.replace("-", "").isalnum() and s.isascii() for s in slugs)
    assert slugs == sorted(slugs)
    assert slug("gradient × input") == "gradient-x-input" and slug("Spearman ρ") == "spearman-rho"
    assert slug("query, key, value") == "query-key-value" and slug("W_O") == "w-o"


def test_lookup_and_search():
    assert entry("nats") is GLOSSARY["nats"]
    with pytest.raises(KeyError, match="'natz' is not in the glossary"):
        entry("natz")
    assert matching("") == list(GLOSSARY)
    assert matching("NUCLEUS") == ["top-p"]                       # any case, in the definition
    assert "look-ahead mask" in matching("causal")
    assert matching("voita heads") and all("Voita" in GLOSSARY[t].see for t in matching("voita heads"))
    assert matching("spearman-rho") == ["Spearman ρ"]             # by its anchor too


@pytest.mark.parametrize("query, term", [("FFN", "feed-forward layer"), ("Add & norm", "layer norm"),
                                         ("encoder-decoder attention", "cross-attention"), ("layernorm", "layer norm"),
                                         ("linear layer", "linear layer"), ("inductive bias", "inductive bias"),
                                         ("Bahdanau", "Bahdanau attention")])
def test_a_student_finds_the_lectures_words_as_typed(query, term):
    """The words of the lecture's slides and the Lesson's buttons, typed as a student types them (issue 61)."""
    assert term in matching(query)
