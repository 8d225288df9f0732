"""The errors that mean "fix your input": the CLI prints them and exits with code 2."""

from sweep.address import AddressError
from sweep.best import NoBestSummary
from sweep.files import CorruptFile
from sweep.promote.errors import PromotionError
from sweep.rundir import RunDirError
from sweep.spec import SpecError
from sweep.storage import StorageError
from sweep.tracking import TrackingError
from train_entry.data.corpus import CorpusError

INPUT_ERRORS = (
    SpecError,
    CorpusError,
    RunDirError,
    StorageError,
    CorruptFile,
    NoBestSummary,
    TrackingError,
    PromotionError,
    AddressError,
)
