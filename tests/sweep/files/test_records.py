"""Files written whole: a process killed mid-write leaves the old file or the new one, never half; read back, a
refused value is named by the file's own keys."""

import json
import signal
import subprocess
import sys
import time

import pytest

from sweep.files.records import CorruptFile, read_model, write_whole
from train_entry.config import StrictConfig

NEW_BYTES = 64 * 2**20

WRITER = f"""
import sys
from pathlib import Path
from sweep.files.records import write_whole
from train_entry.config import StrictConfig
print("writing", flush=True)
write_whole(Path(sys.argv[1]), b"n" * {NEW_BYTES})
"""


def test_a_writer_killed_mid_write_leaves_the_old_file_whole(tmp_path):
    target = tmp_path / "best.json"
    write_whole(target, b'{"optimum": 5}')
    old = target.read_bytes()
    for delay in (0.0, 0.01, 0.05):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE)
        assert writer.stdout.readline() == b"writing\n"
        time.sleep(delay)
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        assert target.read_bytes() in (old, b"n" * NEW_BYTES)
        write_whole(target, old)


def test_a_value_a_union_refuses_is_named_by_the_files_own_keys(tmp_path):
    """pydantic reports it once per member of the union: the message named the first member's internals
    (`space.lr_fraction.function-after[_ordered(), LRFractionRange]: Input should be an object`)."""
    from sweep.space import SearchSpace

    class Holder(StrictConfig):
        space: SearchSpace

    path = tmp_path / "holder.json"
    path.write_text(json.dumps({"space": {"lr_fraction": [0.05, "high"], "mix": ["1:1"]}}))
    with pytest.raises(CorruptFile) as raised:
        read_model(path, Holder, fmt=None, what="holder")
    message = str(raised.value)
    assert message.startswith(f"{path} is not a holder cpt-sweep wrote: space.lr_fraction.1: ")
    assert "[" not in message.split(": ")[1] and "'high'" in message
