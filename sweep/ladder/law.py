"""The continued-pretraining loss law: how each validation loss moves over its base's as functions of the model's
parameters N, the tokens D, the domain share r and the peak LR, in published forms (docs/ladder.md, "The law").

For each loss, its change relative to the base's (forgetting for the general loss, minus domain_gain for the domain
loss) is

    y(N, S, r) = (N / N_ref)^-nu * (1 - (1 + E * S / S_ref)^-beta) * (P + B * psi(x)),
    psi(x) = (x + eps)^-gamma - (x0 + eps)^-gamma,

- S = lr_fraction x lr_mean x D / D_pre, the LR area in the base's pretraining tokens D_pre at its max_lr: the
  forward area S1 through which the LR schedule enters the loss (Tissue et al., arXiv:2408.11029, Eq. 1), and the
  saturating power law of it that describes continued pretraining's distribution shift (Wang et al.,
  arXiv:2505.07796, Eq. 3), counted against the area the base's pretraining covered, so that a proxy and a target
  whose continued pretraining is the same share of their pretraining (matched rungs) read the same S;
- x is the share of the loss's own corpus in the mix (1 - r for the general loss, r for the domain loss), in D-CPT
  Law's term C / (x + eps)^gamma (Que et al., arXiv:2406.01375, its parameterisation L3), taken relative to its
  value without domain data (x0 = 1 general, 0 domain), so the shift vanishes there as in 2505.07796 Eq. 8;
- P is what training moves without any domain data; (N / N_ref)^-nu lets the data say whether larger models
  forget less (the CMR law's critical share growing with N, arXiv:2407.17467 section 5.3) or not (2505.07796
  Appendix E found the shift independent of N at 106M to 1.7B).

N_ref and S_ref are the geometric means of the rows the law was fitted to, so the fitted coefficients stay near 1
whatever the scale. A variable that took one value in those rows (one model size, one share, one LR area) fixes
the terms only it could determine, and the law then says so (`spans`) rather than extrapolate along it.
"""

from __future__ import annotations

import enum
import math

import numpy as np
from pydantic import Field

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


PARAMETERS = ("offset", "shift", "size_exponent", "share_offset", "share_exponent", "area_rate", "area_exponent")
"""LossLaw's fitted parameters, in the order `change` takes them."""


def change(
    values: np.ndarray, size: np.ndarray, area: np.ndarray | None, own: np.ndarray, without: float
) -> np.ndarray:
    """The law's relative change from its parameters (PARAMETERS' order), N / N_ref, S / S_ref (None: the rows had
    one area, whose response P and B carry), the loss's own share x and its share without domain data x0. A plain
    function of arrays: the fit evaluates it tens of thousands of times."""
    offset, shift, size_exponent, eps, gamma, rate, exponent = values
    time = 1.0 - (1.0 + rate * area) ** -exponent if area is not None else 1.0
    share = (own + eps) ** -gamma - (without + eps) ** -gamma
    return size**-size_exponent * time * (offset + shift * share)


def change_gradient(
    values: np.ndarray, size: np.ndarray, area: np.ndarray | None, own: np.ndarray, without: float
) -> np.ndarray:
    """d change / d parameter, one column per parameter in PARAMETERS' order: the fit's Jacobian, exact where
    finite differences cost seven more evaluations per step and lose digits near the bounds."""
    offset, shift, size_exponent, eps, gamma, rate, exponent = values
    scale = size**-size_exponent
    own_base, without_base = own + eps, without + eps
    share = own_base**-gamma - without_base**-gamma
    level = offset + shift * share
    if area is None:
        time, d_rate, d_exponent = 1.0, np.zeros_like(own), np.zeros_like(own)
    else:
        base = 1.0 + rate * area
        time = 1.0 - base**-exponent
        d_rate = scale * level * exponent * area * base ** (-exponent - 1.0)
        d_exponent = scale * level * np.log(base) * base**-exponent
    d_eps = scale * time * shift * -gamma * (own_base ** (-gamma - 1.0) - without_base ** (-gamma - 1.0))
    d_gamma = (
        scale * time * shift * (-np.log(own_base) * own_base**-gamma + np.log(without_base) * without_base**-gamma)
    )
    columns = (
        scale * time,
        scale * time * share,
        -np.log(size) * scale * time * level,
        d_eps,
        d_gamma,
        d_rate,
        d_exponent,
    )
    return np.column_stack([np.broadcast_to(column, np.shape(own)) for column in columns])


class Spans(StrictConfig):
    """Which of the law's variables varied in the rows it was fitted to; a fixed one fixes its terms."""

    parameters: bool
    """More than one N: the size exponent was fitted (else nu = 0, and no other N is predicted)."""
    lr_area: bool
    """More than one LR area: the area response was fitted (else it is 1, and no other area is predicted)."""
    domain_share: bool
    """More than one share: the share response was fitted (else B = 0, and no other share is predicted)."""


class LossLaw(StrictConfig):
    """The fitted law of one loss's relative change."""

    loss: Loss
    offset: float
    """P: the change with no domain data mixed in, at N_ref and a saturated LR area."""
    shift: float
    """B: the coefficient of the share term; positive when domain data raises the general loss or lowers the
    domain loss."""
    size_exponent: float
    """nu: the change scales as N^-nu (positive: larger models change less)."""
    share_offset: float = Field(gt=0.0)
    """eps of D-CPT Law's (x + eps)^-gamma."""
    share_exponent: float = Field(gt=0.0)
    """gamma of D-CPT Law's (x + eps)^-gamma."""
    area_rate: float = Field(gt=0.0)
    """E of 2505.07796 Eq. 3, per reference area: how soon the shift saturates."""
    area_exponent: float = Field(gt=0.0)
    """beta of 2505.07796 Eq. 3."""
    reference_parameters: float = Field(gt=0.0)
    """N_ref: the geometric mean N of the fitted rows."""
    reference_area: float = Field(gt=0.0)
    """S_ref: the geometric mean LR area of the fitted rows."""
    spans: Spans

    def change(self, parameters: Values, lr_area: Values, domain_share: Values) -> np.ndarray:
        """y at each (N, S, r): broadcast numpy arrays in, a numpy array out."""
        return change(
            self.values(),
            np.asarray(parameters, dtype=float) / self.reference_parameters,
            np.asarray(lr_area, dtype=float) / self.reference_area if self.spans.lr_area else None,
            self.loss.own_share(domain_share),
            self.loss.share_without_domain,
        )

    def values(self) -> np.ndarray:
        """The parameters in PARAMETERS' order."""
        return np.array([getattr(self, name) for name in PARAMETERS], dtype=float)

    def formula(self) -> str:
        """The fitted law, written out with its numbers."""
        x = "1 - r" if self.loss is Loss.GENERAL else "r"
        x0 = self.loss.share_without_domain
        eps, gamma = _g(self.share_offset), _g(self.share_exponent)
        share = f"(({x}) + {eps})^-{gamma} - ({_g(x0 + self.share_offset)})^-{gamma}"
        size = f"(N / {_g(self.reference_parameters)})^{_g(-self.size_exponent)}"
        time = (
            f"(1 - (1 + {_g(self.area_rate)} S / {_g(self.reference_area)})^-{_g(self.area_exponent)})"
            if self.spans.lr_area
            else "1"
        )
        return f"{size} x {time} x ({_g(self.offset)} + {_g(self.shift)} x [{share}])"


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
    """Starts that found the best optimum's basin (sweep.ladder.law_fit.BASIN): one alone says it was hard
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

    def forgetting(self, parameters: Values, lr_area: Values, domain_share: Values) -> np.ndarray:
        return self.general.change(parameters, lr_area, domain_share)

    def domain_gain(self, parameters: Values, lr_area: Values, domain_share: Values) -> np.ndarray:
        return -self.domain.change(parameters, lr_area, domain_share)


def _g(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else str(value)
