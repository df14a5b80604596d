"""Does input casing or punctuation break the model? The 1,000 test_2016_flickr sentences upper-cased,
lower-cased and without final punctuation, against the translations of the sentences as written.

    .venv/bin/python -m benchmarks.casing [--model en-de-h8] [--limit N]

Per variant it prints, for the model fed the text as written and for what the explorer feeds it (all-caps and
all-lower-case sentences put in sentence case, explorer.capture.inputs.sentence_case): outputs with a run of ≥ 5
identical characters (target 0; the old models wrote `WAAAAAAAAAAAAAAAAAAA.` for `THE DOG IS RUNNING.`), chrF of
the variant's translations against the translations of the original sentences, case-insensitive (both lower-cased:
an all-caps input may rightly give an all-caps German output) and as written (target ≥ 60), and BLEU against the
references put in the same variant.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import sacrebleu

import explorer.settings as settings
from explorer.capture.translation import translate
from explorer.models.checkpoint import load_checkpoint
from explorer.models.data import VARIANTS, pair_variant, read_parallel

ROOT = Path(__file__).resolve().parents[1]

MULTI30K = settings.MULTI30K
RUN = re.compile(r"(.)\1{4,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "en-de-h8")
    parser.add_argument("--limit", type=int, default=1000)
    args = parser.parse_args()
    checkpoint = load_checkpoint(args.model)
    sources, references = read_parallel(MULTI30K / "test_2016_flickr.en.gz", MULTI30K / "test_2016_flickr.de.gz")
    sources, references = sources[: args.limit], references[: args.limit]
    plain = translate(checkpoint, sources, fix_casing=False)
    print(f"{checkpoint.name}, {len(sources)} test_2016_flickr sentences")
    print(f"{'variant':<22} {'input fed':<14} {'runs ≥5':>7} {'chrF vs plain, lower-cased':>27} {'as written':>10} "
          f"{'BLEU vs ref':>11} {'s':>6}")
    for variant in VARIANTS:
        pairs = [pair_variant(s, r, variant) for s, r in zip(sources, references)]
        for fix_casing, fed in ((False, "as written"), (True, "by explorer")):
            started = time.perf_counter()
            if variant == "original" and not fix_casing:
                outputs = plain
            else:
                outputs = translate(checkpoint, [s for s, _ in pairs], fix_casing=fix_casing)
            runs = sum(bool(RUN.search(o)) for o in outputs)
            lowered = sacrebleu.corpus_chrf([o.lower() for o in outputs], [[p.lower() for p in plain]]).score
            written = sacrebleu.corpus_chrf(outputs, [plain]).score
            bleu = sacrebleu.corpus_bleu(outputs, [[r for _, r in pairs]]).score
            print(f"{variant:<22} {fed:<14} {runs:>7} {lowered:>27.1f} {written:>10.1f} {bleu:>11.2f} "
                  f"{time.perf_counter() - started:>6.1f}")


if __name__ == "__main__":
    main()
