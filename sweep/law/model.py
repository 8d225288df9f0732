"""The continued-pretraining loss law: how each validation loss moves over its base's as functions of the model's
parameters N, the tokens D, the domain share r and the peak LR, in published forms (docs/ladder.md, "The law").

For each loss, its change relative to the base's (forgetting for the general loss, minus domain_gain for the domain
loss) is, in each of the forms of sweep.law.forms,

    y = (N / N_ref)^-nu * T(peak LR, tokens) * (P + B * h(x)),

- T, how the peak LR and the tokens enter: through S = lr_fraction x lr_mean x D / D_pre, the LR area in the base's
  pretraining tokens D_pre at its max_lr (the forward area S1 of Tissue et al., arXiv:2408.11029, Eq. 1, in the
  saturating response of Wang et al., arXiv:2505.07796, Eq. 3), counted against the area the base's pretraining
  covered so that matched rungs read the same S; or through separate powers of the peak LR and the tokens;
- h, the share's effect: x is the share of the loss's own corpus in the mix (1 - r for the general loss, r for the
  domain loss), in D-CPT Law's term (x + eps)^-gamma (Que et al., arXiv:2406.01375, L3) or 2505.07796's replay
  term exponential in r, taken relative to its value without domain data so the shift vanishes there;
- P is what training moves without any domain data; (N / N_ref)^-nu lets the data say whether larger models
  forget less (the CMR law's critical share growing with N, arXiv:2407.17467 section 5.3) or not (2505.07796
  Appendix E found the shift independent of N at 106M to 1.7B).

The references are the geometric means of the rows the law was fitted to, so the fitted coefficients stay near 1
whatever the scale. A variable that took one value in those rows (one model size, one share, one LR area) fixes
the terms only it could determine, and the law then says so (`spans`) rather than extrapolate along it.
"""

from __future__ import annotations

import enum
import math

import numpy as np
from pydantic import Field, model_validator

from sweep.law.curve import SizeCurve
from sweep.law.forms import FORMS, FormName, Inputs
from train_entry.config import StrictConfig

Values = np.ndarray | float
"""One value, or an array of them that broadcasts with the others."""


class Loss(str, enum.Enum):
    """The two validation losses a law is fitted to."""

    GENERAL = "general"
    """Its change over the base's is forgetting; its own corpus is the general side, share 1 - r."""
    DOMAIN = "domain"
    """Its change over the base's is minus domain_gain; its own corpus is the domain side, share r."""

    def own_share(self, domain_share: Values) -> np.ndarray:
        share = np.asarray(domain_share, dtype=float)
        return 1.0 - share if self is Loss.GENERAL else share

    @property
    def share_without_domain(self) -> float:
        """x0: the loss's own share when the mix holds no domain data."""
        return 1.0 if self is Loss.GENERAL else 0.0


class Spans(StrictConfig):
    """Which of the law's variables varied in the rows it was fitted to; a fixed one fixes its terms."""

    parameters: bool
    """More than one N: the size exponent was fitted (else nu = 0, and no other N is predicted)."""
    lr_area: bool
    """More than one LR area: the area response was fitted (else it is a constant, and no other area is predicted)."""
    lr_fraction: bool
    """More than one peak LR: split-power's LR exponent was fitted."""
    time: bool
    """More than one schedule-weighted token share: split-power's token exponent was fitted."""
    domain_share: bool
    """More than one share: the share response was fitted (else B = 0, and no other share is predicted)."""


class References(StrictConfig):
    """The geometric means of the fitted rows, so that the fitted coefficients stay near 1 whatever the scale."""

    parameters: float = Field(gt=0.0)
    """N_ref."""
    lr_fraction: float = Field(gt=0.0)
    time: float = Field(gt=0.0)
    """Of lr_mean x D / D_pre: the LR area's reference is lr_fraction x time."""

    @property
    def area(self) -> float:
        return self.lr_fraction * self.time


class LossLaw(StrictConfig):
    """The fitted law of one loss's relative change, in one form."""

    loss: Loss
    form: FormName
    values: dict[str, float]
    """The form's parameters by name (sweep.law.forms), each within its bounds."""
    references: References
    spans: Spans
    curve: SizeCurve | None = None
    """g(log N), for the form whose N-dependence is a curve over the rows' sizes (size-curve); None for the others."""

    @model_validator(mode="after")
    def _values_of_the_form(self) -> LossLaw:
        form = FORMS[self.form]
        if set(self.values) != set(form.parameters):
            raise ValueError(f"the {self.form} form's parameters are {list(form.parameters)}, got {list(self.values)}")
        if form.curve != (self.curve is not None):
            raise ValueError(f"the {self.form} form {'needs' if form.curve else 'takes no'} size curve")
        for coordinate in form.coordinates:
            value = self.values[coordinate.name]
            if not (coordinate.low <= value <= coordinate.high):
                raise ValueError(
                    f"{coordinate.name} {value!r} outside its bounds [{coordinate.low:g}, {coordinate.high:g}]"
                )
        return self

    def vector(self) -> np.ndarray:
        """The parameters in the form's order."""
        return np.array([self.values[name] for name in FORMS[self.form].parameters], dtype=float)

    def inputs(self, parameters: Values, lr_fraction: Values, time: Values, domain_share: Values) -> Inputs:
        references = self.references
        return Inputs(
            size=np.asarray(parameters, dtype=float) / references.parameters,
            lr=np.asarray(lr_fraction, dtype=float) / references.lr_fraction,
            time=np.asarray(time, dtype=float) / references.time,
            own=self.loss.own_share(domain_share),
            without=self.loss.share_without_domain,
            area_known=self.spans.lr_area,
            level=None if self.curve is None else self.curve.level(parameters),
        )

    def change(self, parameters: Values, lr_fraction: Values, time: Values, domain_share: Values) -> np.ndarray:
        """y at each (N, lr_fraction, lr_mean x D / D_pre, r): broadcast numpy arrays in, a numpy array out."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return FORMS[self.form].change(self.vector(), self.inputs(parameters, lr_fraction, time, domain_share))

    def formula(self) -> str:
        """The fitted law, written out with its numbers."""
        v = self.values
        return (
            f"{self._size_formula()} x {self._time_formula()} x ({_g(v['offset'])} + {_g(v['shift'])} x "
            f"[{self._share_formula()}])"
        )

    def _size_formula(self) -> str:
        if self.curve is None:
            return f"(N / {_g(self.references.parameters)})^{_g(-self.values['size_exponent'])}"
        knots = ", ".join(
            f"{_g(level)} at N {_g(10.0**size)}" for size, level in zip(self.curve.sizes, self.curve.levels)
        )
        return f"exp(g(log N); g {knots}, a Gaussian process in log N between and beyond)"

    def _time_formula(self) -> str:
        v, refs = self.values, self.references
        if self.form == "split-power":
            return (
                f"(lr / {_g(refs.lr_fraction)})^{_g(v['lr_exponent'])} x (t / {_g(refs.time)})^{_g(v['time_exponent'])}"
            )
        if not self.spans.lr_area:
            return "1"
        return f"(1 - (1 + {_g(v['area_rate'])} S / {_g(refs.area)})^-{_g(v['area_exponent'])})"

    def _share_formula(self) -> str:
        v = self.values
        if self.form == "replay-area":
            return f"(exp({_g(v['replay_rate'])} r) - 1) / {_g(v['replay_rate'])}"
        x = "1 - r" if self.loss is Loss.GENERAL else "r"
        eps, gamma = _g(v["share_offset"]), _g(v["share_exponent"])
        return f"(({x}) + {eps})^-{gamma} - ({_g(self.loss.share_without_domain + v['share_offset'])})^-{gamma}"


class RungResiduals(StrictConfig):
    """How far one rung's rows lie from the law: measured minus fitted, in units of the relative change."""

    rung: str
    rows: int = Field(ge=1)
    mean: float
    rms: float = Field(ge=0.0)


class FitQuality(StrictConfig):
    """How well one loss's law fits its rows."""

    rows: int = Field(ge=1)
    r2: float
    """1 - residual sum of squares / total sum of squares of the relative change."""
    huber: float = Field(ge=0.0)
    """The robust cost the fit minimised, per row."""
    starts_agreeing: int = Field(ge=1)
    """Starts that found the best optimum's basin (sweep.law.fit.BASIN): one alone says it was hard
    to find."""
    rungs: list[RungResiduals]


class Law(StrictConfig):
    """Both losses' laws, fitted to one table."""

    general: LossLaw
    domain: LossLaw
    general_quality: FitQuality
    domain_quality: FitQuality
    rows: int = Field(ge=1)
    trials: int = Field(ge=1)
    rungs: list[str]

    @property
    def form(self) -> FormName:
        return self.general.form

    def forgetting(self, parameters: Values, lr_fraction: Values, time: Values, domain_share: Values) -> np.ndarray:
        return self.general.change(parameters, lr_fraction, time, domain_share)

    def domain_gain(self, parameters: Values, lr_fraction: Values, time: Values, domain_share: Values) -> np.ndarray:
        return -self.domain.change(parameters, lr_fraction, time, domain_share)


def _g(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else str(value)
