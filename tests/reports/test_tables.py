"""What `sweep base` and `sweep trial` print: corpora with their skipped lines, the base manifest."""

from __future__ import annotations

from sweep.cli import main


def test_sweep_base_prints_corpora_skips_and_the_manifest(write_tiny_spec, capsys):
    messy = write_tiny_spec().parent / "messy.jsonl"
    good = (write_tiny_spec().parent / "corpora" / "ecommerce" / "train.jsonl").read_bytes()
    messy.write_bytes(good + b"\xff\xfe\n{broken\n" + b'{"text": "   "}\n')
    path = write_tiny_spec(
        "messy.yaml", data={"domain": {"train": "messy.jsonl", "valid": "corpora/ecommerce/valid.jsonl"}}
    )

    assert main(["base", str(path)]) == 0
    out = capsys.readouterr().out
    domain_row = next(line for line in out.splitlines() if "domain.train" in line)
    cells = [cell.strip() for cell in domain_row.split("│")[1:-1]]
    assert cells[0] == "domain.train" and cells[3:6] == ["1", "1", "1"], cells
    assert "final.general_loss" in out and "builtin:tiny-llama" in out
