"""Where an image comes from: a held-out digit by its number (`digits:17`), a .npy array of the model's size, or a
picture file (PNG, JPEG …) made grey and scaled to the model's size. Every failure is an InputError naming the
input."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from explorer.capture.inputs import InputError
from explorer.models.digits import held_out
from explorer.models.interface import ImageInput

HELD_OUT_PREFIX = "digits:"


def held_out_digit(number: int) -> tuple[np.ndarray, str]:
    """The held-out split's image `number` and its description ("held-out image no. 17, a 3": the number is the
    image's place in the split, not the digit it shows)."""
    digits = held_out()
    if not 0 <= number < len(digits.labels):
        raise InputError(f"{HELD_OUT_PREFIX}{number}: the held-out split has digits 0 to {len(digits.labels) - 1}")
    return digits.images[number], f"held-out image no. {number}, a {digits.labels[number]}"


def picture(path: Path, shape: tuple[int, int]) -> np.ndarray:
    """A picture file as the model's grey image: ink 1, paper 0 (a dark-on-light picture is inverted)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as opened:
            grey = opened.convert("L").resize((shape[1], shape[0]), Image.Resampling.BOX)
    except (UnidentifiedImageError, OSError) as error:
        raise InputError(f"{path}: not a picture this explorer can read ({error.__class__.__name__})") from None
    pixels = np.asarray(grey, dtype=np.float32) / 255.0
    return 1.0 - pixels if pixels.mean() > 0.5 else pixels


def read_image(spec: str, model: ImageInput) -> tuple[np.ndarray, str]:
    """(pixels [height, width] in 0 … 1, a description) of `digits:N`, FILE.npy or a picture file."""
    if spec.startswith(HELD_OUT_PREFIX):
        number = spec[len(HELD_OUT_PREFIX):]
        if not number.isdigit():
            raise InputError(f"{spec}: give a held-out digit's number, e.g. {HELD_OUT_PREFIX}17")
        return held_out_digit(int(number))
    path = Path(spec).expanduser()
    if not path.is_file():
        raise InputError(f"{spec}: no such file (give {HELD_OUT_PREFIX}N for a held-out digit, a .npy array or a "
                         "picture)")
    if path.suffix == ".npy":
        try:
            pixels = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as error:
            raise InputError(f"{spec}: not a plain numpy array ({str(error).splitlines()[0]})") from None
        return np.asarray(pixels, dtype=np.float32), f"the array in {path.name}"
    return picture(path, model.image_shape), f"the picture {path.name}"
