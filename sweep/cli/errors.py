"""The errors that mean "fix your input": the CLI prints them on one line and exits with code 2."""

from sweep.address import AddressError
from sweep.best import NoBestSummary
from sweep.config_file import SpecError
from sweep.files import CorruptFile
from sweep.ladder_law.law_table import LawInputError
from sweep.ladder_record import LadderMismatch
from sweep.promote.errors import PromotionError
from sweep.rundir import RunDirError
from sweep.storage import StorageError
from sweep.study import StudyMismatch
from sweep.tracking import TrackingError
from train_entry.data.corpus import CorpusError
from train_entry.hf_dir import HfDirError

EXIT_INPUT_ERROR = 2

INPUT_ERRORS = (
    SpecError,
    CorpusError,
    HfDirError,
    RunDirError,
    StorageError,
    CorruptFile,
    NoBestSummary,
    TrackingError,
    PromotionError,
    AddressError,
    StudyMismatch,
    LadderMismatch,
    LawInputError,
)
