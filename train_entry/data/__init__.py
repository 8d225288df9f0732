"""The proxy's data pipeline: corpora to megatron-core indexed datasets to the blended training stream.

corpus reads documents, tokenizer trains and loads the BPE, indexed writes .bin/.idx pairs, blend
builds the training stream and the validation sets; cache keeps each result by content, so every
trial of a sweep shares one tokenizer and one set of indexed corpora. Only indexed and blend import
megatron-core (seconds to import): reading a corpus or catching a CorpusError does not pay for it.
"""

import logging

# megatron-core logs every index it loads or builds at INFO; a trial's log should carry only warnings.
for _name in ("megatron.core.datasets", "megatron.core.tokenizers"):
    logging.getLogger(_name).setLevel(logging.WARNING)
