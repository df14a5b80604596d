"""What a model reads, answered in one place: every model claims one input capability (models/interface.py:
TextInput, ImageInput), and each is registered here once with what a person gives it and how it is named. The
capture, the Lesson, the sidebar and the command line ask `input_kind(model)` and dispatch on the answer; nothing
else asks whether a model reads images or text. A new modality (speech, say) registers its kind here, next to its
capability in models/."""

from __future__ import annotations

from dataclasses import dataclass

from explorer.models.interface import AttentionModel, ImageInput, TextInput


@dataclass(frozen=True)
class InputKind:
    name: str               # "text", "image": also the command line's option (--text, --image)
    capability: type        # the interface's capability a model claims to read it
    what: str               # what a person gives it, in words: "a sentence", "an image"
    reads: str              # what a model of this kind reads, for messages: "text", "images"
    token: str              # what one token of it is: "piece", "patch"


INPUT_KINDS: list[InputKind] = []


def register_input_kind(kind: InputKind) -> InputKind:
    INPUT_KINDS.append(kind)
    return kind


TEXT = register_input_kind(InputKind("text", TextInput, "a sentence", "text", "piece"))
IMAGE = register_input_kind(InputKind("image", ImageInput, "an image", "images", "patch"))


def input_kind(model: AttentionModel) -> InputKind:
    """The kind of input the model reads: the first registered kind whose capability it claims."""
    for kind in INPUT_KINDS:
        if isinstance(model, kind.capability):
            return kind
    raise TypeError(f"{model.name} claims no input capability ({', '.join(k.name for k in INPUT_KINDS)})")
