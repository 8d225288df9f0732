"""The errors that mean "fix your input": the CLI prints them on one line and exits with code 2."""

from sweep.address import AddressError
from sweep.choice.best import NoBestSummary
from sweep.files.config_file import SpecError
from sweep.files.outputs import OutputError
from sweep.files.records import CorruptFile
from sweep.files.rundir import RunDirError
from sweep.files.storage_url import StorageError
from sweep.ladder.record import LadderMismatch
from sweep.ladder.tokenizers import TokenizersDiffer
from sweep.law.table import LawInputError
from sweep.promote.errors import PromotionError
from sweep.run.tracking import TrackingError
from sweep.run.trial_slots import ClusterTooSmall
from sweep.study.study import StudyMismatch
from sweep.target.errors import TargetError
from train_entry.data.corpus import CorpusError
from train_entry.downstream.harness import HarnessMissing
from train_entry.hf_dir import HfDirError

EXIT_INPUT_ERROR = 2
MOST_LINE_CHARACTERS = 1000
"""An error line is read by a person: a value from a file (a name, a log line) that makes it longer is cut here, with
its full length said, whatever message carried it."""

INPUT_ERRORS = (
    SpecError,
    CorpusError,
    HfDirError,
    RunDirError,
    StorageError,
    CorruptFile,
    OutputError,
    NoBestSummary,
    TrackingError,
    PromotionError,
    TargetError,
    AddressError,
    StudyMismatch,
    LadderMismatch,
    LawInputError,
    ClusterTooSmall,
    HarnessMissing,
    TokenizersDiffer,
)


def readable(message: str) -> str:
    """`message` with each of its lines cut to MOST_LINE_CHARACTERS."""
    return "\n".join(
        line if len(line) <= MOST_LINE_CHARACTERS else f"{line[:MOST_LINE_CHARACTERS]}... ({len(line):,} characters)"
        for line in message.splitlines() or [""]
    )
