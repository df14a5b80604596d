"""Head-role statistics (explorer/roles.py) for Hugging Face models: the same tallies, fed from the model's own
tokenizer and attention.

- Rare-token: "rare" means rare in the text the person gives (piece frequencies counted over it; for a
  translation model's decoder, over the model's own translations of it), since a downloaded model's training
  corpus is not at hand.
- Encoder–decoders read each sentence and are fed their own greedy translation back (teacher forcing), as our
  models are; GPT-2 reads the text itself; BERT reads it unmasked.
- Syntax: the piece ↔ word mapping comes from tokenizing each word alone (with the space before it, for byte-level
  BPE) and finding those pieces, in order, in the tokenized sentence; a sentence where they do not line up
  (a tokenizer that merges across words) is skipped and counted as skipped. Works for SentencePiece, WordPiece
  and byte-level BPE.
"""

from __future__ import annotations

from typing import Callable

import torch

from explorer.corpus_scoring import pad_id, pad_rows, presence_mask
from explorer.hugging_face_trace import positions_limit, source_step_limit
from explorer.roles import SHORT_PIECES, SyntaxTally, Tally, _batches, tally_patterns, tally_syntax
from explorer.treebank import Aligned, Tree
from models.hooks import capture
from models.vocabulary import attention_hook


def _real(ids: torch.Tensor, present: torch.Tensor, special: list[int]) -> torch.Tensor:
    """True where a position holds a word piece: present (not padding) and not a special token."""
    return present & ~torch.isin(ids, torch.tensor(special))


def _frequencies(rows: list[list[int]], vocab: int) -> torch.Tensor:
    counts = torch.zeros(vocab, dtype=torch.float64)
    for row in rows:
        counts += torch.bincount(torch.tensor(row, dtype=torch.long), minlength=vocab).double()[:vocab]
    return counts


def _counts(ids: torch.Tensor, real: torch.Tensor, frequencies: torch.Tensor) -> torch.Tensor:
    """Frequency of each key [B, K]; +inf where a key can never be the rarest (specials, padding)."""
    return frequencies[ids].masked_fill(~real, float("inf"))


@torch.no_grad()
def translations(checkpoint, sources: list[list[int]], batch_size: int) -> list[list[int]]:
    """The model's greedy outputs (decoder start, output, end) for each source, in batches."""
    loaded, pad = checkpoint.model, pad_id(checkpoint)
    outputs: list[list[int]] = [[] for _ in sources]
    for chunk in _batches(sources, [len(s) for s in sources], batch_size):
        rows = [sources[i] for i in chunk]
        generated = loaded.model.generate(input_ids=pad_rows(rows, pad), attention_mask=presence_mask(rows),
                                          num_beams=1, do_sample=False,
                                          max_new_tokens=source_step_limit(loaded, max(map(len, rows))))
        for i, row in zip(chunk, generated.tolist()):
            while len(row) > 1 and row[-1] == pad:           # padding after the end token of shorter outputs
                row.pop()
            outputs[i] = row
    return outputs


@torch.no_grad()
def statistics_pass(checkpoint, texts: list[str], kinds: tuple[str, ...], batch_size: int,
                    progress: Callable[[float], None] | None) -> tuple[dict[str, Tally], list[int]]:
    """Positional, rare-token and confidence tallies over plain sentences; also the order they were seen in."""
    loaded, tokenizer = checkpoint.model, checkpoint.tokenizer
    config, vocab, pad = loaded.config, loaded.model.config.vocab_size, pad_id(checkpoint)
    special = sorted(set(tokenizer.all_special_ids))
    sources = [tokenizer(t, truncation=True, max_length=positions_limit(loaded)).input_ids for t in texts]
    encoder_decoder = "cross" in loaded.kinds
    outputs = translations(checkpoint, sources, batch_size) if encoder_decoder else None
    source_frequencies = _frequencies(sources, vocab)
    target_frequencies = _frequencies(outputs, vocab) if outputs else source_frequencies
    tallies = {kind: Tally(config.layers(kind), config.heads) for kind in kinds}
    names = [attention_hook(kind, "*", "pattern") for kind in kinds]
    seen: list[int] = []
    for chunk in _batches(sources, [len(s) for s in sources], batch_size):
        seen.extend(chunk)
        src_rows = [sources[i] for i in chunk]
        src, src_present = pad_rows(src_rows, pad), presence_mask(src_rows).bool()
        inputs = {"input_ids": src, "attention_mask": src_present.long()}
        if encoder_decoder:
            tgt_rows = [outputs[i] for i in chunk]
            tgt, tgt_present = pad_rows(tgt_rows, pad), presence_mask(tgt_rows).bool()
            inputs.update(decoder_input_ids=tgt, decoder_attention_mask=tgt_present.long())
        with capture(loaded.hook_names, names) as cache:
            loaded.model(**inputs)
        src_real = _real(src, src_present, special)
        for kind in kinds:
            patterns = cache.layers(kind, "pattern")
            if kind == "encoder" or not encoder_decoder:      # BERT's encoder, GPT-2's decoder: the text itself
                tally_patterns(tallies[kind], patterns, src_real, src_present,
                               _counts(src, src_real, source_frequencies), True)
            elif kind == "decoder":
                tgt_real = _real(tgt, tgt_present, special)
                tally_patterns(tallies[kind], patterns, tgt_real, tgt_present,
                               _counts(tgt, tgt_real, target_frequencies), True)
            else:                                              # cross: target queries, source keys
                tally_patterns(tallies[kind], patterns, _real(tgt, tgt_present, special), src_present,
                               _counts(src, src_real, source_frequencies), False)
        if progress:
            progress(len(seen) / max(1, len(sources)))
    return tallies, seen


def align_words(words: list[str], tokenizer, limit: int) -> Aligned | None:
    """The sentence's ids (with the tokenizer's special tokens) and each word's piece positions; None when the
    words' own pieces do not appear, in order, in the sentence's tokenization, or it is too long."""
    word_ids = [tokenizer(("" if i == 0 else " ") + word, add_special_tokens=False).input_ids
                for i, word in enumerate(words)]
    if not all(word_ids):
        return None
    flat = [piece for pieces in word_ids for piece in pieces]
    full = tokenizer(" ".join(words)).input_ids
    if len(full) > limit:
        return None
    offset = next((i for i in range(len(full) - len(flat) + 1) if full[i: i + len(flat)] == flat), None)
    if offset is None:
        return None
    positions, start = [], offset
    for pieces in word_ids:
        positions.append(list(range(start, start + len(pieces))))
        start += len(pieces)
    return Aligned(full, positions)


@torch.no_grad()
def syntax_pass(checkpoint, trees: list[Tree], kind: str, batch_size: int,
                progress: Callable[[float], None] | None) -> tuple[SyntaxTally, SyntaxTally, int]:
    """Attention of `kind` (the stack that reads the text) along gold arcs: (all, ≤ SHORT_PIECES pieces, skipped)."""
    loaded, pad = checkpoint.model, pad_id(checkpoint)
    aligned = [(tree, align_words(tree.words, checkpoint.tokenizer, positions_limit(loaded))) for tree in trees]
    usable = [(tree, a) for tree, a in aligned if a is not None]
    every, short = SyntaxTally(), SyntaxTally()
    done = 0
    for chunk in _batches(usable, [len(a.ids) for _, a in usable], batch_size):
        rows = [usable[i][1].ids for i in chunk]
        inputs = {"input_ids": pad_rows(rows, pad), "attention_mask": presence_mask(rows)}
        if "cross" in loaded.kinds:        # the encoder alone reads the sentence
            with capture(loaded.hook_names, attention_hook(kind, "*", "pattern")) as cache:
                loaded.model.get_encoder()(**inputs)
        else:
            with capture(loaded.hook_names, attention_hook(kind, "*", "pattern")) as cache:
                loaded.model(**inputs)
        patterns = cache.layers(kind, "pattern").numpy()
        sentences = [usable[i] for i in chunk]
        tally_syntax(every, patterns, sentences)
        short_rows = [row for row, (_, a) in enumerate(sentences)
                      if sum(map(len, a.word_pieces)) <= SHORT_PIECES]
        tally_syntax(short, patterns[short_rows], [sentences[row] for row in short_rows])
        done += len(chunk)
        if progress:
            progress(done / max(1, len(usable)))
    return every, short, len(trees) - len(usable)
