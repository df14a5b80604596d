"""Example sentences in the bundled models' domain (image captions), each with a German reference written for
this project, so a test can check that the model translates every one of them well (chrF ≥ 50).

Two are about pronouns: one the 8-head model resolves, one it gets wrong (labelled so, and a test keeps the
labels true) — both worth looking at on the Decoding page (its cross-attention at the pronoun's step).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    english: str
    german: str          # our reference translation
    note: str = ""       # what to look at, shown beside the example


EXAMPLES = [
    Example("A man in a blue shirt is riding a bicycle down the street.",
            "Ein Mann in einem blauen Hemd fährt mit dem Fahrrad die Straße entlang."),
    Example("Two young girls are playing with a ball in the park.",
            "Zwei junge Mädchen spielen im Park mit einem Ball."),
    Example("A dog is running through the snow.", "Ein Hund rennt durch den Schnee."),
    Example("A group of people are standing in front of a building.",
            "Eine Gruppe von Menschen steht vor einem Gebäude."),
    Example("The woman is holding her baby in her arms.", "Die Frau hält ihr Baby in den Armen."),
    Example("A boy throws the ball and the dog catches it.", "Ein Junge wirft den Ball und der Hund fängt ihn.",
            "pronoun the model resolves: “it” → “ihn” (der Ball); see the Decoding page at that step"),
    Example("A man is walking his dog and it is wearing a red collar.",
            "Ein Mann geht mit seinem Hund spazieren und er trägt ein rotes Halsband.",
            "pronoun the model gets wrong: “it” (the dog, der Hund) comes out as “es”"),
]

# The sentences alone, as the sidebar offers them and the Prune page translates them.
SENTENCES = [example.english for example in EXAMPLES]


def label(example: Example) -> str:
    return f"{example.english} — {example.note}" if example.note else example.english
