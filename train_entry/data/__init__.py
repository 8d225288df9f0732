"""The proxy's data pipeline: corpora to megatron-core indexed datasets to the blended training stream.

corpus names a corpus (files, shards, Megatron prefixes) and counts what reading it found; corpus_formats holds
the formats (JSONL, plain text, Parquet), one module each behind one interface, and recognises a shard's format by
its name, checked by its bytes (shard_bytes: codecs and magic numbers); documents counts what a format's parser
reads and skips; shards and sample cut a corpus into strata and read them in an order spread over it; fingerprint keys the cache without reading a corpus
whole; tokenizer trains and loads the BPE; indexed writes a sample's .bin/.idx pair; megatron_prefix reads the
full run's own prefixes; blend builds the training stream and the validation sets; cache keeps each result by
key, so every trial of a sweep shares one tokenizer and one set of samples. Only indexed, megatron_prefix and
blend import megatron-core (seconds to import): reading a corpus or catching a CorpusError does not pay for it.
"""

import logging

# megatron-core logs every index it loads or builds at INFO; a trial's log should carry only warnings.
for _name in ("megatron.core.datasets", "megatron.core.tokenizers"):
    logging.getLogger(_name).setLevel(logging.WARNING)
