"""Tiny random Hugging Face models of every family the explorer opens, with tokenizers built here (no network):
SentencePiece for Marian, T5 and M2M100, byte-level BPE for BART, GPT-2 and Llama, WordPiece for BERT, each trained on
a thousand Multi30k captions per language: a caption is 10-20 pieces, as with a real vocabulary (with 40 pieces it
was 60, and every decoding test ran to its step limit 3-4x slower)."""

import gzip
import json
from pathlib import Path

import sentencepiece as spm
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

import explorer.settings as settings

TEXT = ["a dog runs in the snow", "two men play football on a field", "a girl reads a book under a tree",
        "the cat sleeps on the warm sofa", "people walk down a busy street"] * 20
SENTENCE = "a dog plays in the snow"
MULTI30K = settings.MULTI30K        # the corpora the project ships
CAPTIONS = 1000
OWN_MAX_LENGTH = 16         # the encoder–decoders' generation_config.json max_length (saved_model)


def corpus() -> list[str]:
    """TEXT and the first CAPTIONS English and German training captions."""
    lines = list(TEXT)
    for language in ("en", "de"):
        with gzip.open(MULTI30K / f"train.{language}.gz", "rt", encoding="utf-8") as file:
            lines += [next(file).strip() for _ in range(CAPTIONS)]
    return lines


def marian(folder):
    model_file = _sentencepiece(folder, bos_id=-1, eos_id=-1, unk_id=0)
    processor = spm.SentencePieceProcessor(model_file=str(model_file))
    pieces = [processor.id_to_piece(i) for i in range(1, processor.get_piece_size())]
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2, **{p: i + 3 for i, p in enumerate(pieces)}}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    tokenizer = transformers.MarianTokenizer(source_spm=str(model_file), target_spm=str(model_file),
                                             vocab=str(folder / "vocab.json"))
    config = transformers.MarianConfig(
        vocab_size=len(vocab), decoder_vocab_size=len(vocab), d_model=16, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32,
        max_position_embeddings=64, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    return transformers.MarianMTModel(config), tokenizer


def gpt2(folder):
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(corpus(), trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>"],
                                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = transformers.GPT2TokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>",
                                               bos_token="<|endoftext|>", unk_token="<|endoftext|>")
    config = transformers.GPT2Config(vocab_size=backend.get_vocab_size(), n_embd=16, n_layer=2, n_head=4, n_positions=64,
                                     eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.eos_token_id)
    return transformers.GPT2LMHeadModel(config), tokenizer


def _byte_level_with_start(start: str, end: str, unknown: str) -> Tokenizer:
    """Byte-level BPE that puts a start token before every text, as Llama's tokenizers do."""
    from tokenizers.processors import TemplateProcessing

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(corpus(), trainers.BpeTrainer(vocab_size=600, special_tokens=[start, end, unknown],
                                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    backend.post_processor = TemplateProcessing(single=f"{start} $A", special_tokens=[(start, 0)])
    return backend


def llama(folder, config_class=transformers.LlamaConfig, model_class=transformers.LlamaForCausalLM, end="</s>"):
    """Rotary positions and grouped-query attention: 4 query heads share 2 key/value heads, head_dim 8 (not
    d_model / heads), so the Positions tab has 4 rotated pairs. Qwen2 and Mistral are built the same way (end: the
    end token by the name the family's own tokenizer class expects, so that it adds no token of its own)."""
    backend = _byte_level_with_start("<s>", end, "<unk>")     # Llama 2's three special tokens
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token=end,
                                                     unk_token="<unk>")
    config = config_class(vocab_size=backend.get_vocab_size(), hidden_size=16, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=8, intermediate_size=32,
                          max_position_embeddings=64, bos_token_id=0, eos_token_id=1)
    return model_class(config), tokenizer


def bart(folder):
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(corpus(), trainers.BpeTrainer(vocab_size=600, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    from tokenizers.processors import TemplateProcessing
    backend.post_processor = TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tokenizer = transformers.BartTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>",
                                               pad_token="<pad>", unk_token="<unk>")
    config = transformers.BartConfig(
        vocab_size=backend.get_vocab_size(), d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_bos_token_id=None)
    return transformers.BartForConditionalGeneration(config), tokenizer


def _bert_parts():
    backend = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.train_from_iterator(corpus(), trainers.WordPieceTrainer(
        vocab_size=400, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    tokenizer = transformers.BertTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                               cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    config = transformers.BertConfig(vocab_size=backend.get_vocab_size(), hidden_size=16, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=32, max_position_embeddings=64)
    return config, tokenizer


def bert(folder):
    config, tokenizer = _bert_parts()
    return transformers.BertForMaskedLM(config), tokenizer


def sentence_bert(folder, pooling: str = "mean"):
    """A sentence-transformers folder, as all-MiniLM-L6-v2's: the bare BertModel, mean pooling, then Normalize."""
    config, tokenizer = _bert_parts()
    # Weights far from BERT's 0.02 initialisation, so that the heads move the embedding: pruning every head of the
    # default tiny model leaves its cosine with the whole model's at 1.000, and pruning would show nothing.
    config.initializer_range = 0.5
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": config.hidden_size, "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": pooling == "max"}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    return transformers.BertModel(config), tokenizer


def _sentencepiece(folder, **options):
    text = folder / "corpus.txt"
    text.write_text("\n".join(corpus()))
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(folder / "spm"), vocab_size=400,
                                   model_type="unigram", hard_vocab_limit=False, minloglevel=2, **options)
    return folder / "spm.model"


def t5(folder):
    model_file = _sentencepiece(folder, pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    processor = spm.SentencePieceProcessor(model_file=str(model_file))
    vocab = [(processor.id_to_piece(i), processor.get_score(i)) for i in range(processor.get_piece_size())]
    tokenizer = transformers.T5Tokenizer(vocab=vocab, extra_ids=0)
    config = transformers.T5Config(vocab_size=len(tokenizer), d_model=16, d_kv=8, d_ff=32, num_layers=2,
                                   num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8,
                                   relative_attention_max_distance=16, pad_token_id=0, eos_token_id=1,
                                   decoder_start_token_id=0)
    return transformers.T5ForConditionalGeneration(config), tokenizer


def m2m100(folder):
    model_file = _sentencepiece(folder, bos_id=-1, eos_id=-1, unk_id=0)
    processor = spm.SentencePieceProcessor(model_file=str(model_file))
    pieces = [processor.id_to_piece(i) for i in range(1, processor.get_piece_size())]
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, **{p: i + 4 for i, p in enumerate(pieces)}}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    tokenizer = transformers.M2M100Tokenizer(vocab_file=str(folder / "vocab.json"), spm_file=str(model_file),
                                             src_lang="en", tgt_lang="de", language_codes="wmt21")
    config = transformers.M2M100Config(
        # the language tokens come after the pieces
        vocab_size=len(tokenizer) + len(tokenizer.lang_code_to_id), d_model=16, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, scale_embedding=True)
    return transformers.M2M100ForConditionalGeneration(config), tokenizer


FAMILIES = {"marian": marian, "bart": bart, "gpt2": gpt2, "bert": bert, "sentence-bert": sentence_bert, "t5": t5,
            "m2m100": m2m100, "llama": llama}

# The families whose output is a distribution over their vocabulary (all but a sentence encoder's embedding), and
# those that write a sequence with it.
PREDICTS_TOKENS = [family for family in FAMILIES if family != "sentence-bert"]
GENERATES = [family for family in PREDICTS_TOKENS if family != "bert"]

_SAVED: dict[tuple[str, int], Path] = {}


def saved_model(family: str, tmp_path_factory):
    """The folder of a tiny random model of this family, saved with save_pretrained (safetensors): built once a
    test session (38 callers; building trains a tokenizer) and only read after, never written to."""
    key = (family, id(tmp_path_factory))
    if key not in _SAVED:
        torch.manual_seed(0)
        folder = tmp_path_factory.mktemp(family)
        model, tokenizer = FAMILIES[family](folder)
        if model.config.is_encoder_decoder:
            # A random model never chooses its end token, so it translates to its length limit: 2 × source + 10,
            # ~40 steps a caption. A limit of its own, as a real checkpoint's generation_config.json may set,
            # keeps every test's translation at 15 steps (the explorer honours it: hf_encoder_decoder.py).
            model.generation_config.max_length = OWN_MAX_LENGTH
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        _SAVED[key] = folder
    return _SAVED[key]


def eager_attentions(model, folder, source, target) -> dict:
    """transformers' own eager attention weights for the explorer's batches, by our kind names: the independent
    reference for the captured patterns (the same weights, loaded again with attn_implementation="eager")."""
    theirs = type(model.model).from_pretrained(folder, attn_implementation="eager").eval()
    reading = source if source is not None else target
    arguments = {"input_ids": reading.ids, "attention_mask": reading.present.long()}
    if model.has("cross"):
        arguments.update(decoder_input_ids=target.ids, decoder_attention_mask=target.present.long())
    with torch.no_grad():
        output = theirs(**arguments, output_attentions=True)
    if model.has("cross"):
        return {"encoder": output.encoder_attentions, "decoder": output.decoder_attentions,
                "cross": output.cross_attentions}
    return {model.kinds[0]: output.attentions}
