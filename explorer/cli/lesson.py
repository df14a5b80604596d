"""`python -m explorer lesson`: the Lesson on one sentence (or one image) as one HTML file that opens offline, every
step's title, paragraph, numbers and figure (explorer/teaching/handout.py), as the Lesson page's "⬇ Lesson as a
handout" button writes it."""

from __future__ import annotations

import argparse
from pathlib import Path

from explorer.cli.arguments import with_casing, with_model_path

HELP = ("the Lesson on one sentence (or image) as one HTML file that opens offline and prints: every step's text, "
        "numbers and figure")


def add_options(sub: argparse.ArgumentParser) -> None:
    with_model_path(sub)
    source = sub.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help="the text the model reads: a sentence to translate, a prompt to continue, a "
                                       "sentence with a mask to fill or a sentence to embed")
    source.add_argument("--image", help="for an image model: digits:N (the held-out split's digit N), FILE.npy or a "
                                        "picture file")
    sub.add_argument("--out", required=True, type=Path, help="FILE.html")
    with_casing(sub)


def run(args: argparse.Namespace) -> None:
    from explorer.capture.input_kinds import IMAGE, input_kind
    from explorer.capture.inputs import InputError
    from explorer.cli.inputs import opened
    from explorer.teaching.handout import write_handout

    if args.out.suffix.lower() not in (".html", ".htm"):
        raise InputError(f"{args.out}: the handout is a web page; its name must end in .html")
    if not args.out.parent.is_dir():
        raise InputError(f"{args.out.parent}: no such folder for the handout")
    model = opened(args, images=True)
    if args.image is not None or input_kind(model) is IMAGE:
        from explorer.capture.image_inputs import read_image
        from explorer.capture.image_trace import trace_image

        if input_kind(model) is not IMAGE:
            raise InputError(f"--image: {args.model} reads {input_kind(model).reads}; give it --text")
        if args.image is None:
            raise InputError(f"{args.model} reads images; give one with --image (e.g. --image digits:17)")
        pixels, description = read_image(args.image, model)
        trace = trace_image(model, pixels, description=description)
    else:
        from explorer.capture.trace import trace_sentence

        trace = trace_sentence(model, args.text, fix_casing=args.recase)
    path = write_handout(model, trace, args.out)
    print(f"{path}: the Lesson on {args.image or args.text!r}, {path.stat().st_size / 1e6:.1f} MB")
