"""Results as records (explorer/analyses/corpus/results.py): every shipped analysis reads into its dataclass and writes back
the very JSON it was read from, key for key and in order, so typed readers change nothing on disk."""

import json

import pytest

from explorer.analyses.corpus.results import (
    FaithfulnessSummary,
    HeadRoles,
    ImportanceReport,
    PruningCurve,
    RolesReport,
    TextScores,
    TranslationScores,
    evaluation_from_json,
)
from explorer.analyses.records import Record, RecordError
from tests.conftest import SHIPPED

FILES = {"head_roles.json": RolesReport, "head_importance.json": ImportanceReport,
         "head_pruning_curve.json": PruningCurve}


@pytest.mark.parametrize("heads", sorted(SHIPPED))
@pytest.mark.parametrize("name", sorted(FILES))
def test_a_shipped_analysis_reads_into_fields_and_writes_back_unchanged(heads, name):
    path = SHIPPED[heads] / name
    if not path.is_file():
        pytest.skip(f"{path} is not shipped")
    text = path.read_text(encoding="utf-8")
    document = json.loads(text)
    typed = FILES[name].from_json(document)
    assert json.dumps(typed.to_json(), ensure_ascii=False) == json.dumps(document, ensure_ascii=False)
    assert FILES[name].from_json(typed) is typed                     # a record is taken as it is
    if isinstance(typed, RolesReport):
        first = typed.heads[0]
        assert isinstance(first, HeadRoles) and first.spec == document["heads"][0]["spec"]
        assert first.positional.share == document["heads"][0]["positional"]["share"]
        assert typed.corpus.text.name == document["corpus"]["text"]["name"]
    elif isinstance(typed, ImportanceReport):
        assert typed.metric is None and typed.quality == "BLEU"       # written before reports named their metric
        assert typed.heads[0].measure("bleu_change") == document["heads"][0]["bleu_change"]
    else:
        kind = next(iter(document["kinds"]))
        assert typed.kinds[kind].importance == document["kinds"][kind]["importance"]


def test_optional_and_unknown_keys_are_kept_as_they_came():
    older = {"heads": [], "corpus": {"name": "val.en.gz", "pairs": 3}, "gradient_seconds": 0.1, "seconds": 1.0,
             "distributed": {"workers": 2}}
    report = ImportanceReport.from_json(older)
    assert report.unpruned is None and report.extra == {"distributed": {"workers": 2}}
    assert list(report.to_json()) == list(older) and report.to_json() == older
    assert isinstance(evaluation_from_json({"bleu": 1.0, "chrf": 2.0, "sentences": 3, "skipped": 0}), TranslationScores)
    assert evaluation_from_json({"loss": 1.0, "perplexity": 2.7, "lines": 3}) == TextScores(1.0, 3, perplexity=2.7)
    embedded = evaluation_from_json({"loss": 0.1, "lines": 3, "cosine": 0.9})      # a sentence encoder's
    assert embedded.quality == ("cosine", 0.9) and "perplexity" not in embedded.to_json()
    summary = FaithfulnessSummary.from_json({"sentences": 1, "skipped": {}, "methods": {
        "rollout": {"spearman": 0.5, "sentences": 1}}})
    assert summary.methods["rollout"].spearman_gradient_x_input is None
    with pytest.raises(TypeError):                  # the explorer's own object, malformed: a bug, with its traceback
        TextScores.from_json({"loss": 1.0})
    with pytest.raises(RecordError, match="saved.json: not a TextScores"):    # a person's file: their error
        TextScores.from_json({"loss": 1.0}, source="saved.json")
    assert issubclass(TextScores, Record)
