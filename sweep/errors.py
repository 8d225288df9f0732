"""The errors that mean "fix your input": the CLI prints them and exits with code 2."""

from sweep.address import AddressError
from sweep.promote.errors import PromotionError
from sweep.rundir import NotARunDirectory
from sweep.spec import SpecError
from sweep.tracking import TrackingError
from train_entry.data.corpus import CorpusError

INPUT_ERRORS = (SpecError, CorpusError, NotARunDirectory, TrackingError, PromotionError, AddressError)
