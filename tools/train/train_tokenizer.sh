#!/bin/sh
# Train the strata-tiny SentencePiece BPE tokenizer (byte fallback, 4096 pieces) with Debian's spm_train.
# Usage: train_tokenizer.sh WORK   (reads WORK/corpus/spm_input.txt, writes WORK/tok/spm.model, spm.vocab)
set -eu
WORK=${1:?work dir}
mkdir -p "$WORK/tok"
nice -n 19 spm_train \
  --input="$WORK/corpus/spm_input.txt" \
  --model_prefix="$WORK/tok/spm" \
  --model_type=bpe \
  --vocab_size=4096 \
  --byte_fallback=true \
  --character_coverage=0.9995 \
  --split_digits=true \
  --normalization_rule_name=identity \
  --add_dummy_prefix=true \
  --remove_extra_whitespaces=false \
  --allow_whitespace_only_pieces=true \
  --max_sentence_length=16384 \
  --input_sentence_size=0 \
  --shuffle_input_sentence=false \
  --num_threads=1 \
  --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 \
  --unk_piece='<unk>' --bos_piece='<s>' --eos_piece='</s>' \
  --user_defined_symbols='<|im_start|>,<|im_end|>'
