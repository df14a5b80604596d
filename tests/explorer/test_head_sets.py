import pytest
import torch

from explorer.capture.head_sets import HeadSpec, HeadSpecError, all_heads, format_heads, head_mask, parse_heads
from tests.conftest import tiny_config

CONFIG = tiny_config()  # 2 encoder layers, 2 decoder layers, 4 heads


def test_parse_single_heads_and_wildcards():
    heads = parse_heads("enc.0.3, dec.1.*,cross.1.2", CONFIG)
    assert HeadSpec("encoder", 0, 3) in heads and HeadSpec("cross", 1, 2) in heads
    assert [h for h in heads if h.kind == "decoder"] == [HeadSpec("decoder", 1, h) for h in range(4)]
    assert format_heads(heads) == "cross.1.2,dec.1.0,dec.1.1,dec.1.2,dec.1.3,enc.0.3"
    assert parse_heads(format_heads(heads), CONFIG) == heads
    assert len(parse_heads("enc.*.*", CONFIG)) == 8
    assert parse_heads("", CONFIG) == []


@pytest.mark.parametrize("spec, message", [("enc.0.4", "head must be"), ("enc.2.0", "layer must be"),
                                           ("encoder.0.0", "KIND.LAYER.HEAD"), ("enc.0", "KIND.LAYER.HEAD"),
                                           ("enc.-1.0", "layer must be"), ("cross.a.1", "layer must be")])
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(HeadSpecError, match=message):
        parse_heads(spec, CONFIG)


def test_head_mask_zeroes_exactly_the_named_heads():
    gates = head_mask(parse_heads("enc.1.2,cross.0.*", CONFIG), CONFIG)
    assert gates["encoder"].sum() == 7 and gates["encoder"][1, 2] == 0
    assert torch.equal(gates["cross"][0], torch.zeros(4)) and torch.equal(gates["cross"][1], torch.ones(4))
    assert torch.equal(gates["decoder"], torch.ones(2, 4))
    assert head_mask([], CONFIG) == {}
    assert len(all_heads(CONFIG)) == 3 * 2 * 4
