"""The one model interface: all that explorer/ and pages/ know of a model, whatever family it comes from.

A small core every Transformer has (`AttentionModel`: its attention kinds, layers × heads, a forward with per-call
capture and head gates, its positional information, the output projection), and capabilities a family claims only
when it can do them: what it reads (`TextInput`, `ImageInput`), what it writes (`Translates` and `Continues`, both
`Generates`; `FillsMask`; `Embeds`, a sentence encoder; an `ImageInput` names a class), `Multilingual` (it writes
several languages),
`TrainingSnapshots` (per-epoch weights) and `CachedBeamSearch` (its own, faster beam search). `ExplorerModel` is a
model of text: the core and `TextInput`.

Our checkpoints (checkpoint.py) and each Hugging Face layout (hf_encoder_decoder.py, hf_encoder.py, hf_decoder.py,
t5.py, m2m100.py, ...) implement it; loader.py alone knows which family a folder holds. Code above models/ branches
on what a model can do (`has("cross")`, `isinstance(model, Generates)`), never on what it is, and never compares
a task string: `task` is a label for people and JSON. The *source* is what the person typed, as the encoder (or a
decoder-only model) reads it; the *output* is what the model produced; the *target* is the decoder's input: its
prefix (start token) + output, or the prompt + continuation. Hooks and head gates are per call (hooks.py:
`model_run`, `capture`), never state on the shared model. Beam search and sampling over any model that generates
live beside decoding (generation.py), not in the interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .decoding import BeamResult
from .errors import ExplorerError
from .hooks import ActivationCache, capture
from .tokenizer import Encoded  # encode()'s answer, for every family
from .vocabulary import Kind

TRANSLATE, CONTINUE, FILL_MASK, EMBED, CLASSIFY = "translate", "continue", "fill-mask", "embed", "classify"


class ModelError(ExplorerError):
    """A model that cannot be opened or used: the one error the interface raises for a folder, whatever its family
    (each family's own error is a kind of it), so that nothing above models/ names a family's error."""


@dataclass
class Aligned:
    ids: list[int]                  # a sentence given as words, as the model reads it
    word_pieces: list[list[int]]    # the positions of each word's pieces


@dataclass
class Batch:
    ids: torch.Tensor       # [rows, longest] token ids, padded; an image model's pixels [rows, height, width]
    present: torch.Tensor   # [rows, positions] bool: True on a real token

    @classmethod
    def of(cls, rows: list[list[int]], pad_id: int) -> Batch:
        width = max(len(row) for row in rows)
        return cls(torch.tensor([row + [pad_id] * (width - len(row)) for row in rows], dtype=torch.long),
                   torch.tensor([[True] * len(row) + [False] * (width - len(row)) for row in rows]))


@dataclass(frozen=True)
class Architecture:
    """How a family builds its blocks, as the Internals page and the Lesson describe them."""
    # "sinusoidal", "sinusoidal-halves", "learned" (a vector added to the input), "relative" (a bias added to every
    # score, T5) or "rotary" (RoPE: each layer rotates q and k by an angle proportional to the position, so q·k
    # depends on the offset; Llama, Qwen2, Mistral)
    positional: str
    # Where each block's layer norm sits: "pre" (before the sublayer, inside the residual branch), "post" (after
    # the residual sum, as in Vaswani et al.), "" when the family does not say. The Lesson names the difference.
    norm_placement: str = ""
    # The three labels of the embedding figure: what is embedded, what is added, what layer 0 reads.
    embedding_steps: tuple[str, str, str] = ("token embedding", "+ position", "= input to layer 0")
    # Rotary only: θ_i, the angle per position of each rotated pair of q/k dimensions (the model's own inv_freq);
    # position p turns pair i by p·θ_i.
    rotary_frequencies: tuple[float, ...] = ()


class AttentionModel(ABC):
    """The core: what every Transformer has, whatever it reads. At most 20 members (tests/test_model_contract.py)."""
    path: Path
    folder: Path | None = None          # where its files are when `path` names it otherwise (a cached hub id)
    info: dict                          # what the folder says of itself (description, training, scores)
    hook_names: list[str]               # every hook point, e.g. encoder.layers.0.self_attn.pattern
    kinds: tuple[Kind, ...]             # its attention kinds (models/vocabulary.py)
    heads: int
    d_model: int
    d_k: int
    max_positions: int                  # the longest input it takes
    architecture: Architecture          # its positional information, norm placement, embedding
    if TYPE_CHECKING:                   # every family keeps its torch module as .model (device, loader.place);
        model: torch.nn.Module          # declared for the type checker alone, not one of the core's members

    @abstractmethod
    def layers(self, kind: str) -> int: """Layers of one attention kind; 0 for a kind it does not have."""

    @property
    def device(self) -> torch.device:
        """Where its weights are (models/loader.py puts them there): every forward, capture and analysis runs there."""
        weights = next(self.model.parameters(), None)
        return weights.device if weights is not None else torch.device("cpu")

    def has(self, kind: str) -> bool:
        return kind in self.kinds

    @property
    def name(self) -> str:
        return self.path.name

    @abstractmethod
    def forward(self, source: Batch | None = None, target: Batch | None = None) -> torch.Tensor | None:
        """Logits [rows, positions, vocab] at the target's positions (the source's, for a masked language model
        and an image classifier, whose class token's row is its prediction). With no target, an encoder–decoder
        runs its encoder alone and returns None. A sentence encoder (Embeds), which predicts no token, returns its
        last layer's states [rows, positions, d_model]."""

    def run_with_cache(self, source: Batch | None = None, target: Batch | None = None, names: str | list[str] = "*",
                       head_mask: dict | None = None) -> tuple[torch.Tensor | None, ActivationCache]:
        """forward, and the values at the hook points matching names (glob patterns); no gradients."""
        with torch.no_grad(), capture(self.hook_names, names, head_mask=head_mask) as cache:
            logits = self.forward(source, target)
        return logits, cache

    @abstractmethod
    def attention_scaling(self, kind: str, layer: int) -> float: """The factor on q·k (1/√d_k; 1 for T5)."""

    @abstractmethod
    def attention_output_weights(self, kind: str, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """W_O [d_model, heads × d_k] (stored [out, in], as nn.Linear) and its bias, of one attention block."""

    def position_bias(self, kind: str, queries: int, keys: int) -> torch.Tensor | None:
        """[heads, queries, keys] added to the scores before softmax (T5's relative bias); None for most."""
        return None

    @abstractmethod
    def unembed(self, stack: str, hidden: torch.Tensor) -> torch.Tensor:
        """Logits [..., vocab] from a residual stream [..., d_model] of the stack whose output the model predicts
        from (the decoder; an encoder-only model's encoder): what forward applies after its last layer (final norm,
        output projection, and whatever the family adds). The logit lens (nostalgebraist 2020) reads every layer
        through it. ValueError for the other stack, and for a model that reads out no vocabulary (Embeds)."""


class TextInput(ABC):
    """A model that reads text as pieces of a vocabulary."""
    pad_id: int
    unk_id: int | None = None           # what a piece the vocabulary lacks is read as
    mask_id: int | None = None          # a masked language model's fill-in token
    special_ids: frozenset[int]         # never a word: padding, start/end, [CLS], [SEP] …
    token_frequencies: dict[str, list[int]] | None = None   # "source"/"target" piece counts of its training data
    # Its training text is written in sentence case (the bundled translators' captions): the app feeds a sentence
    # typed all in capitals or all in lower case in sentence case, and says so. Any other model reads it as typed.
    reads_sentence_case: bool = False

    @abstractmethod
    def encode(self, text: str) -> Encoded: """The source as the model reads it, cut to its maximum."""

    @abstractmethod
    def encode_reference(self, text: str) -> list[int]: """A reference output's ids, ending with end_id."""

    @abstractmethod
    def pieces(self, ids: list[int]) -> list[str]: """ids → labels for the figures."""

    @abstractmethod
    def detokenize(self, ids: list[int]) -> str: """ids → text, special tokens left out."""

    @abstractmethod
    def align_words(self, words: list[str], space_after: list[bool] | None = None) -> Aligned | None:
        """The sentence the words make (a space after each word unless space_after says not), tokenized once, with
        each word's pieces (models/word_alignment.py); None when words and pieces do not line up or it is too long."""

    def unknown_characters(self, text: str) -> list[str]:
        """The text the vocabulary has no piece for; [] when it cannot tell."""
        return []

    def word_starts(self, ids: list[int]) -> list[bool]:
        """True where a piece begins a new whitespace-separated word. SentencePiece and byte-level BPE mark a
        piece after a space with ▁ in their labels (pieces()); WordPiece marks a piece inside a word with ##
        instead. A special token is a word of its own, so the piece after it begins one too."""
        marks_spaces = any(label.startswith("▁") for label in self.pieces(self.encode("a a").ids))
        starts, after_special = [], True
        for token, label in zip(ids, self.pieces(ids)):
            special = token in self.special_ids
            marked = label.startswith("▁") if marks_spaces else not label.startswith("##")
            starts.append(special or after_special or marked)
            after_special = special
        return starts

    def pad(self, rows: list[list[int]]) -> Batch:
        return Batch.of(rows, self.pad_id)


class Generates(ABC):
    """A model that writes a sequence, one token a step: a translation, or a prompt's continuation. Only a model
    that can do it claims it: code above models/ asks `isinstance(model, Generates)` before it decodes."""
    start_id: int | None                # the decoder's first input
    end_id: int | None                  # the token that ends an output
    target_language: str = ""           # "German", or a multilingual model's code among its target languages
    generation_batch: int = 1           # sources generate() decodes together, sorted by length

    @abstractmethod
    def generate(self, sources: list[list[int]], beam_size: int = 1, alpha: float = 0.6) -> list[list[int]]:
        """Each source's output ids (no prefix, no end token): greedy, or beam search with length penalty alpha."""

    @abstractmethod
    def step_limit(self, source_length: int) -> int: """At most this many decoding steps for such a source."""

    def step_limit_rule(self, source_length: int) -> str:
        return f"the explorer's limit of {self.step_limit(source_length)} new tokens"

    def decoder_prefix(self) -> list[int]:
        """What an encoder–decoder's decoder reads before the output (M2M100: + the target language's token)."""
        assert self.start_id is not None, "an encoder–decoder's decoder starts from a token"
        return [self.start_id]

    def decoder_input(self, source_ids: list[int], output_ids: list[int]) -> tuple[list[int], int]:
        """(target ids, the target position whose logits chose output token 0)."""
        assert isinstance(self, AttentionModel)      # a capability: what claims it is a model
        if self.has("encoder"):
            prefix = self.decoder_prefix()
            return prefix + list(output_ids), len(prefix) - 1
        return list(source_ids) + list(output_ids), len(source_ids) - 1


# What a model's output is. Each model claims exactly one of these (an image classifier: ImageInput); what a task
# string used to select — the output's title, how a corpus scores it, what "output" means to a person — hangs on
# the capability (here, and in explorer/analyses/corpus/corpus_scoring.py's registry of scorers).

class Translates(Generates):
    """Writes the source in another language; a corpus scores it against reference translations (BLEU)."""
    task = TRANSLATE

    @property
    def output_title(self) -> str:
        """What its output is called on the pages: the target language."""
        return self.target_language or "Translation"


class Continues(Generates):
    """Continues a prompt (a decoder-only language model); a corpus scores it by next-token loss."""
    task = CONTINUE
    output_title = "Continuation"


class FillsMask(ABC):  # noqa: B024  a capability a model claims by subclassing; its members have defaults
    """Predicts the pieces behind its mask token (a masked language model); it writes no sequence."""
    task = FILL_MASK
    output_title = "Predictions for [MASK]"
    gives = "fills in masked tokens (the app's Decoding page hides a word and shows what it predicts)"


class Embeds(ABC):
    """Turns a sentence into one vector, its embedding (a sentence encoder such as all-MiniLM-L6-v2: the mean of
    its last layer over the real tokens, scaled to length 1, as it was trained); two sentences are compared by the
    cosine of their embeddings. It predicts no token: no mask token, no vocabulary read-out."""
    task = EMBED
    output_title = "Sentence embedding"
    gives = "turns a sentence into one vector, its embedding (the app's Translation page shows it)"

    @abstractmethod
    def embed(self, source: Batch) -> torch.Tensor:
        """[rows, d_model] unit-length embeddings of a batch, with the call's head gates (differentiable in them)."""


class ImageInput(ABC):
    """A model that reads an image as a grid of square patches, one token each, after a class token (ViT), and
    names its class."""
    task = CLASSIFY
    output_title = "Class"
    gives = "names the class of an image (the app's Images page shows it)"
    image_shape: tuple[int, int]        # (height, width) in pixels, values 0 … 1
    patch_size: int                     # a token is a patch_size × patch_size square of pixels
    class_names: tuple[str, ...]        # what each output logit stands for

    @property
    def grid(self) -> tuple[int, int]:
        """(rows, columns) of patches: token 1 + row × columns + column is that patch."""
        return self.image_shape[0] // self.patch_size, self.image_shape[1] // self.patch_size

    def token_labels(self) -> list[str]:
        """The tokens' labels for the figures: the class token, then each patch by its row and column."""
        rows, columns = self.grid
        return ["[CLS]"] + [f"r{row}c{column}" for row in range(rows) for column in range(columns)]

    def image_batch(self, images: torch.Tensor) -> Batch:
        """Images [rows, height, width] (0 … 1) as a batch the forward reads: every token present."""
        images = torch.as_tensor(images, dtype=torch.float32)
        if images.dim() == 2:
            images = images[None]
        if tuple(images.shape[1:]) != tuple(self.image_shape):
            raise ModelError(f"an image of {images.shape[1]}×{images.shape[2]} pixels; this model reads "
                             f"{self.image_shape[0]}×{self.image_shape[1]}")
        rows, columns = self.grid
        return Batch(images, torch.ones(len(images), 1 + rows * columns, dtype=torch.bool))


class ExplorerModel(AttentionModel, TextInput, ABC):
    """A model of text: the core and text in. What comes out is a capability of its own (Translates, Continues,
    FillsMask, Embeds), claimed by each family."""


class Multilingual(ABC):
    """A model that writes into several languages, one at a time."""
    target_languages: tuple[str, ...]

    @abstractmethod
    def for_target_language(self, language: str) -> ExplorerModel:
        """The same weights translating into another language."""


class TrainingSnapshots(ABC):
    """A model whose folder keeps its training's per-epoch weights (epoch-N.safetensors), for head evolution."""

    @abstractmethod
    def with_weights(self, snapshot: Path) -> ExplorerModel: """A copy with a snapshot's weights."""


class CachedBeamSearch(ABC):
    """A model with a beam search of its own (a key/value cache), faster than generation.beam_search's default."""

    @abstractmethod
    def beam_search(self, source_ids: list[int], beam_size: int, alpha: float = 0.6) -> BeamResult:
        """Every live beam of every step (the beam tree), GNMT length penalty."""


def target_languages(model: AttentionModel) -> tuple[str, ...]:
    """The languages a model can be asked to write: () for all but a multilingual one."""
    return model.target_languages if isinstance(model, Multilingual) else ()
