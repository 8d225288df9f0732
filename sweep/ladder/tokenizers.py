"""A ladder's rungs tokenize text alike.

The loss law compares losses per token and counts tokens across rungs, and both mean the same only under one
tokenizer: a model family's sizes share theirs (Qwen2.5 0.5B to 72B; Llama 3.2 1B and 3B and Llama 3.1 8B to 405B).
Rungs of two families would fit one law to numbers in two units. Each Hugging Face rung's tokenizer is held against
the first one's before anything is written: the same vocabulary, and the same tokens for a probe text of prose, code,
digits and other scripts. Built-in rungs share the tokenizer the tool trains for them.
"""

from __future__ import annotations

from pathlib import Path

from sweep.ladder.rungs import RungSpec

PROBE = (
    "Continued pretraining moves a base model toward its domain: 12,345.67 units shipped on 2024-03-01.\n"
    "def forgetting(general_loss, base_loss):\n    return general_loss / base_loss - 1  # ≥ 0\n"
    "Der Preis beträgt 19,99 €. 价格是十九元。 Цена: 20 рублей. 価格は二十円です。"
)


class TokenizersDiffer(ValueError):
    """Two rungs of one ladder tokenize text differently."""


def check_one_tokenizer(rungs: list[RungSpec]) -> None:
    """TokenizersDiffer naming the first rung whose tokenizer splits text unlike the first Hugging Face rung's."""
    from train_entry.data.tokenizer import load_tokenizer  # transformers: imported only for Hugging Face rungs

    first: tuple[str, Path, dict[str, int], list[int]] | None = None
    for rung in rungs:
        base = rung.spec.base
        if base.builtin is not None:
            continue
        directory = Path(base.tokenizer or base.model)
        tokenizer = load_tokenizer(directory)
        vocab, probe = tokenizer.get_vocab(), tokenizer.encode(PROBE, add_special_tokens=False)
        if first is None:
            first = (rung.name, directory, vocab, probe)
            continue
        name, first_dir, first_vocab, first_probe = first
        if vocab != first_vocab:
            how = f"a vocabulary of {len(vocab):,} tokens where rung {name}'s has {len(first_vocab):,}"
            if len(vocab) == len(first_vocab):
                how = f"another vocabulary of {len(vocab):,} tokens than rung {name}'s"
        elif probe != first_probe:
            how = f"the vocabulary of rung {name}'s but splits a probe text into other tokens"
        else:
            continue
        raise TokenizersDiffer(
            f"ladder rung {rung.name}: its tokenizer ({directory}) has {how} ({first_dir}); the law compares "
            "losses per token across rungs, which needs one tokenizer: build the ladder from one model family"
        )
