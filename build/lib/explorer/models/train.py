"""Train an English→German Transformer on Multi30k.

    python -m explorer.models.train --data explorer/data/multi30k --heads 8 --out models/en-de-h8

Trains until validation BLEU stops improving, then anneals: linear warm-up, learning rate ∝ 1/√step until
validation BLEU has not improved for --patience epochs, then a linear decay to zero over --decay-fraction of
the epochs trained so far, then stop (or --epochs, a ceiling). Each epoch a share of the pairs is upper-cased,
lower-cased or stripped of final punctuation on both sides.

Resumable: after every epoch the full training state (fp32 weights, Adam moments, counters) and an fp16
snapshot of the weights are written to the state folder (outside the repository, ~/.cache by default) in
safetensors + JSON; running the same command again continues from there. At the end the best, on validation
BLEU, of {best epoch, average of the epochs up to it, average of the last epochs} becomes
OUT/model.safetensors, scored on the test set when the data folder has one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from .checkpoint import save_checkpoint
from .data import VARIANTS, choose_variants, make_training_batch, pair_variant, read_parallel, token_batches
from .decoding import translate_ids
from .tokenizer import PAD, Tokenizer, clean_text
from .transformer import Transformer, TransformerConfig
from .weights_file import read_weights, write_weights


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m explorer.models.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="folder with train/val(/test_2016_flickr).{en,de}.gz")
    parser.add_argument("--out", required=True, type=Path, help="checkpoint folder to write (and resume from)")
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--d-ff", type=int, default=1024)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--tokenizer", type=Path, help="reuse this SentencePiece model instead of training one")
    parser.add_argument("--state-dir", type=Path,
                        help="resume state and per-epoch snapshots (default: ~/.cache/attention-explorer/training/...)")
    parser.add_argument("--epochs", type=int, default=100, help="ceiling on epochs; --patience usually stops first")
    parser.add_argument("--patience", type=int, default=4,
                        help="start the final decay when validation BLEU has not improved for this many epochs "
                             "(0: never)")
    parser.add_argument("--min-improvement", type=float, default=0.3,
                        help="a val BLEU gain smaller than this is not an improvement (BLEU on ~1,000 sentences "
                             "wavers by about this much)")
    parser.add_argument("--decay-fraction", type=float, default=0.2,
                        help="the final linear decay to zero lasts this fraction of the epochs before it (0: none, "
                             "stop at once)")
    parser.add_argument("--max-tokens", type=int, default=3500, help="padded tokens per batch")
    parser.add_argument("--lr", type=float, default=7e-4, help="peak learning rate")
    parser.add_argument("--warmup", type=int, default=400, help="linear warm-up steps")
    parser.add_argument("--schedule", choices=("inverse-sqrt", "cosine"), default="inverse-sqrt",
                        help="after warm-up: lr ∝ 1/√step (open-ended, as Vaswani et al.) or cosine to 5%% at --epochs")
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--casing-share", type=float, default=0.15,
                        help="share of pairs trained upper-cased, lower-cased or without final punctuation")
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--average", type=int, default=5, help="also try averages of N epoch snapshots")
    parser.add_argument("--limit", type=int, help="use only the first N training pairs (tests, smoke runs)")
    parser.add_argument("--val-limit", type=int, help="use only the first N validation pairs")
    parser.add_argument("--no-test", action="store_true", help="skip the final test-set scoring")
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True,
                        help="bfloat16 autocast for matrix products (about 1.8x faster on AVX-512 CPUs)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: one per core)")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args(argv)


def learning_rate(step: int, total: int, peak: float, warmup: int, schedule: str = "cosine") -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    if schedule == "inverse-sqrt":
        return peak * math.sqrt(warmup / (step + 1))
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))


def corpus_bleu(hypotheses: list[str], references: list[str]) -> float:
    import sacrebleu

    return round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2)


class TrainingState:
    """Everything needed to resume: weights, Adam moments and counters, in OUT/training/."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.tensors, self.meta = folder / "state.safetensors", folder / "state.json"

    def exists(self) -> bool:
        return self.tensors.is_file() and self.meta.is_file()

    def save(self, model: Transformer, optimizer: torch.optim.Optimizer, meta: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tensors = {f"model.{k}": v for k, v in model.state_dict().items() if not k.startswith(("encoder.emb", "decoder.emb"))}
        names = {id(p): n for n, p in model.named_parameters()}
        for group in optimizer.param_groups:
            for parameter in group["params"]:
                for key, value in optimizer.state.get(parameter, {}).items():
                    if torch.is_tensor(value) and value.dim() > 0:
                        tensors[f"adam.{key}.{names[id(parameter)]}"] = value
        meta = dict(meta, adam_step=int(optimizer.state[next(iter(model.parameters()))].get("step", 0)))
        write_weights(tensors, str(self.tensors) + ".tmp")
        os.replace(str(self.tensors) + ".tmp", self.tensors)   # never leave a half-written state behind
        self.meta.write_text(json.dumps(meta, indent=2))

    def load(self, model: Transformer, optimizer: torch.optim.Optimizer) -> dict:
        tensors = read_weights(self.tensors)
        model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, strict=False)
        meta = json.loads(self.meta.read_text())
        for name, parameter in model.named_parameters():
            average = tensors.get(f"adam.exp_avg.{name}")
            if average is not None:
                optimizer.state[parameter] = {"step": torch.tensor(float(meta["adam_step"])), "exp_avg": average,
                                              "exp_avg_sq": tensors[f"adam.exp_avg_sq.{name}"]}
        return meta


def evaluate(model: Transformer, tokenizer: Tokenizer, sources: list[str], references: list[str],
             beam_size: int = 1) -> float:
    model.eval()
    ids = [tokenizer.encode(s, model.config.max_len).ids for s in sources]
    outputs = translate_ids(model, ids, beam_size=beam_size)
    return corpus_bleu([tokenizer.decode(o) for o in outputs], references)


@torch.no_grad()
def validation_loss(model: Transformer, pairs: list, max_tokens: int) -> float:
    model.eval()
    total, count = 0.0, 0
    for indices in token_batches(pairs, max_tokens, seed=0):
        src, tgt_in, tgt_out = make_training_batch(pairs, indices)
        logits = model(src, tgt_in)
        total += F.cross_entropy(logits.view(-1, logits.shape[-1]), tgt_out.view(-1), ignore_index=PAD,
                                 reduction="sum").item()
        count += int((tgt_out != PAD).sum())
    return total / count


def average_snapshots(paths: list[Path]) -> dict[str, torch.Tensor]:
    total: dict[str, torch.Tensor] = {}
    for path in paths:
        for name, tensor in read_weights(path).items():
            total[name] = total.get(name, 0) + tensor.float() / len(paths)
    return total


def default_state_dir(out: Path) -> Path:
    """Outside the repository, one folder per output path, so resume state is never committed."""
    key = hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:8]
    return Path.home() / ".cache" / "attention-explorer" / "training" / f"{out.name}-{key}"


def tokenizer_corpus(sources: list[str], targets: list[str], share: float, seed: int) -> list[str]:
    """The training text plus upper-cased copies of a share of it, so frequent words get all-caps pieces."""
    rng = random.Random(seed)
    extra = [s.upper() for s in sources + targets if rng.random() < share]
    return sources + targets + extra


def encode_variants(tokenizer: Tokenizer, sources: list[str], targets: list[str], max_pieces: int):
    """Token ids of every training pair in every variant: variants[v][i] = (source ids, target ids)."""
    variants = []
    for name in VARIANTS:
        texts = [pair_variant(s, t, name) for s, t in zip(sources, targets)]
        src_ids = tokenizer.sp.encode([source for source, _ in texts])
        tgt_ids = tokenizer.sp.encode([target for _, target in texts])
        variants.append([(s[:max_pieces], t[:max_pieces]) for s, t in zip(src_ids, tgt_ids)])
    return variants


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    train_dir = args.state_dir or default_state_dir(args.out)
    train_dir.mkdir(parents=True, exist_ok=True)
    print(f"training state: {train_dir}", flush=True)
    started = time.time()

    train_src, train_tgt = read_parallel(args.data / "train.en.gz", args.data / "train.de.gz")
    val_src, val_tgt = read_parallel(args.data / "val.en.gz", args.data / "val.de.gz")
    train_src, train_tgt = train_src[: args.limit], train_tgt[: args.limit]
    val_src, val_tgt = val_src[: args.val_limit], val_tgt[: args.val_limit]

    tokenizer_path = train_dir / "tokenizer.model"
    if not tokenizer_path.is_file():
        if args.tokenizer:
            tokenizer_path.write_bytes(args.tokenizer.read_bytes())
        else:
            Tokenizer.train(tokenizer_corpus(train_src, train_tgt, args.casing_share, args.seed), tokenizer_path,
                            args.vocab_size)
    tokenizer = Tokenizer(tokenizer_path)
    config = TransformerConfig(vocab_size=tokenizer.vocab_size, d_model=args.d_model, heads=args.heads,
                               encoder_layers=args.layers, decoder_layers=args.layers, d_ff=args.d_ff,
                               dropout=args.dropout)
    max_pieces = config.max_len - 2
    variant_pairs = encode_variants(tokenizer, [clean_text(s) for s in train_src], [clean_text(t) for t in train_tgt],
                                    max_pieces)
    val_pairs = [(tokenizer.encode_ids(s)[:max_pieces], tokenizer.encode_ids(t)[:max_pieces])
                 for s, t in zip(val_src, val_tgt)]

    model = Transformer(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    state = TrainingState(train_dir)
    meta = {"epoch": 0, "step": 0, "history": [], "seconds": 0.0}
    if state.exists():
        meta = state.load(model, optimizer)
        print(f"resuming {args.out} after epoch {meta['epoch']} (step {meta['step']})", flush=True)
    steps_per_epoch = len(token_batches(variant_pairs[0], args.max_tokens, seed=args.seed))
    total_steps = steps_per_epoch * args.epochs
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16)

    for epoch in range(meta["epoch"], args.epochs):
        if meta.get("decay") is None and converged(meta["history"], args.patience, args.min_improvement):
            if args.decay_fraction <= 0:
                break
            # Validation stopped improving at this learning rate: anneal it to zero (warm-up, stable, decay).
            # Annealing is what a fixed cosine budget gets at its end; here it starts when the data says so.
            meta["decay"] = {"start_epoch": epoch, "start_step": meta["step"],
                             "epochs": max(2, round(args.decay_fraction * epoch)),
                             "start_lr": learning_rate(meta["step"], total_steps, args.lr, args.warmup, args.schedule)}
            print(f"validation BLEU stopped improving: decaying the learning rate to 0 over "
                  f"{meta['decay']['epochs']} epochs", flush=True)
        decay = meta.get("decay")
        if decay and epoch >= decay["start_epoch"] + decay["epochs"]:
            break
        epoch_started = time.time()
        model.train()
        chosen = choose_variants(len(train_src), args.casing_share, seed=args.seed * 1000 + epoch)
        pairs = [variant_pairs[v][i] for i, v in enumerate(chosen)]
        batches = token_batches(pairs, args.max_tokens, seed=args.seed * 1000 + epoch)
        torch.manual_seed(args.seed * 1000 + epoch)
        progress = tqdm(batches, desc=f"epoch {epoch + 1}/{args.epochs}", file=sys.stdout, mininterval=10,
                        disable=None)
        running = 0.0
        for indices in progress:
            for group in optimizer.param_groups:
                if decay:
                    done = (meta["step"] - decay["start_step"]) / (decay["epochs"] * steps_per_epoch)
                    group["lr"] = decay["start_lr"] * max(0.0, 1.0 - done)
                else:
                    group["lr"] = learning_rate(meta["step"], total_steps, args.lr, args.warmup, args.schedule)
            src, tgt_in, tgt_out = make_training_batch(pairs, indices)
            with autocast:
                logits = model(src, tgt_in)
            loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tgt_out.view(-1),
                                   ignore_index=PAD, label_smoothing=args.label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            meta["step"] += 1
            running = loss.item() if running == 0 else 0.98 * running + 0.02 * loss.item()
            progress.set_postfix(loss=f"{running:.3f}", refresh=False)
        train_seconds = time.time() - epoch_started
        val_loss = validation_loss(model, val_pairs, args.max_tokens)
        val_bleu = evaluate(model, tokenizer, val_src, val_tgt)
        meta["epoch"] = epoch + 1
        meta["seconds"] += time.time() - epoch_started
        record = {"epoch": epoch + 1, "step": meta["step"], "lr": round(optimizer.param_groups[0]["lr"], 7),
                  "train_loss": round(running, 4), "val_loss": round(val_loss, 4), "val_bleu": val_bleu,
                  "epoch_seconds": round(train_seconds, 1)}
        meta["history"].append(record)
        print(json.dumps(record), flush=True)
        write_weights({k: v.to(torch.float16) for k, v in model.state_dict().items()
                       if not k.startswith(("encoder.emb", "decoder.emb"))}, train_dir / f"epoch-{epoch + 1}.safetensors")
        state.save(model, optimizer, meta)

    finish(args, train_dir, model, tokenizer, tokenizer_path, config, meta, train_src, train_tgt, val_src, val_tgt,
           steps_per_epoch, started)
    return 0


def converged(history: list[dict], patience: int, min_improvement: float = 0.0) -> bool:
    """True when the last `patience` epochs brought no validation BLEU at least `min_improvement` above the
    best before them (smaller gains are within the noise of BLEU on a thousand sentences)."""
    if patience <= 0 or len(history) <= patience:
        return False
    best_bleu, best_epoch = float("-inf"), 0
    for record in history:
        if record["val_bleu"] >= best_bleu + min_improvement:
            best_bleu, best_epoch = record["val_bleu"], record["epoch"]
    return history[-1]["epoch"] - best_epoch >= patience


def finish(args, train_dir, model, tokenizer, tokenizer_path, config, meta, train_src, train_tgt, val_src, val_tgt,
           steps_per_epoch, started) -> None:
    """Pick the best snapshot or snapshot average on val BLEU, score it, write the checkpoint."""
    history = meta["history"]
    best = max(history, key=lambda r: r["val_bleu"])
    snapshot = lambda epoch: train_dir / f"epoch-{epoch}.safetensors"  # noqa: E731
    candidates = {f"epoch {best['epoch']}": read_weights(snapshot(best["epoch"]))}
    epochs = [r["epoch"] for r in history]
    for _label, window in (("up to the best", epochs[: epochs.index(best["epoch"]) + 1][-args.average:]),
                           ("last", epochs[-args.average:])):
        name = f"average of epochs {window[0]}-{window[-1]}" if window else ""
        if args.average > 1 and len(window) > 1 and name not in candidates and all(snapshot(e).is_file() for e in window):
            candidates[name] = average_snapshots([snapshot(e) for e in window])
    scored = {}
    for label, weights in candidates.items():
        model.load_state_dict({k: v.float() for k, v in weights.items()}, strict=False)
        scored[label] = evaluate(model, tokenizer, val_src, val_tgt)
        print(f"val BLEU of {label}: {scored[label]}", flush=True)
    chosen = max(scored, key=scored.get)
    model.load_state_dict({k: v.float() for k, v in candidates[chosen].items()}, strict=False)
    model.eval()

    scores = {"val": {"bleu_greedy": scored[chosen]}}
    test_src_path, test_ref_path = args.data / "test_2016_flickr.en.gz", args.data / "test_2016_flickr.de.gz"
    if not args.no_test and test_src_path.is_file():
        test_src, test_ref = read_parallel(test_src_path, test_ref_path)
        scores["test_2016_flickr"] = {"bleu_greedy": evaluate(model, tokenizer, test_src, test_ref),
                                      "bleu_beam5": evaluate(model, tokenizer, test_src, test_ref, beam_size=5)}
        # The casing variants: an upper-cased test set against upper-cased references.
        upper = [pair_variant(s, t, "upper") for s, t in zip(test_src, test_ref)]
        scores["test_2016_flickr_upper"] = {"bleu_greedy": evaluate(model, tokenizer, *map(list, zip(*upper)))}
        print(f"scores: {scores}", flush=True)
    info = {
        "name": args.out.name,
        "description": f"English→German Transformer, {config.heads} head{'' if config.heads == 1 else 's'}, "
                       "trained on Multi30k task 1",
        "data": {"train": str(args.data / "train.{en,de}.gz"), "train_pairs": len(train_src),
                 "validation": str(args.data / "val.{en,de}.gz"), "validation_pairs": len(val_src)},
        "training": {"epochs": meta["epoch"], "steps": meta["step"], "steps_per_epoch": steps_per_epoch,
                     "max_tokens_per_batch": args.max_tokens, "peak_lr": args.lr, "warmup_steps": args.warmup,
                     "schedule": f"linear warm-up, then {args.schedule}; when val BLEU stalls for the patience, "
                                 "linear decay to 0 over the decay fraction of the epochs so far",
                     "optimizer": "Adam(0.9, 0.98)", "decay": meta.get("decay"),
                     "patience_epochs": args.patience, "min_improvement_bleu": args.min_improvement,
                     "decay_fraction": args.decay_fraction,
                     "max_epochs": args.epochs, "dropout": args.dropout,
                     "casing_share": args.casing_share, "casing_variants": list(VARIANTS[1:]),
                     "label_smoothing": args.label_smoothing, "bf16_autocast": args.bf16, "seed": args.seed,
                     "candidates_val_bleu": scored, "selected": chosen, "history": history},
        "hardware": {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
                     "torch": torch.__version__},
        "wall_seconds": {"training": round(meta["seconds"], 1), "this_run": round(time.time() - started, 1)},
        "scores": scores,
        "bleu_signature": "sacreBLEU corpus_bleu, 13a tokenization, cased, detokenized",
    }
    frequencies = {"source": tokenizer.piece_frequencies(train_src), "target": tokenizer.piece_frequencies(train_tgt)}
    save_checkpoint(args.out, model, tokenizer_path, info, frequencies)
    print(f"wrote {args.out}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
