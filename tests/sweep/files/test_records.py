"""Files written whole: a process killed mid-write leaves the old file or the new one, never half."""

import signal
import subprocess
import sys
import time

from sweep.files.records import write_whole

NEW_BYTES = 64 * 2**20

WRITER = f"""
import sys
from pathlib import Path
from sweep.files.records import write_whole
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
