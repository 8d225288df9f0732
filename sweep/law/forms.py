"""The published-style forms a loss law can take (docs/ladder.md, "The forms"): each is

    change = (N / N_ref)^-nu  x  T(peak LR, tokens)  x  (P + B h(share))

with its own share term h and its own response T to the LR and the tokens. No single form is known to hold for a
team's corpora (D-CPT Law chose among five parameterisations, arXiv:2406.01375 Table 1; 2505.07796 and the CMR law,
arXiv:2407.17467, write others), so every table is fitted with each, and cross-validation says which to believe
(sweep.law.select).

- `dcpt-area` (today's form): D-CPT Law's share term (x + eps)^-gamma (arXiv:2406.01375, parameterisation L3) in the
  saturating response to the LR area S = lr_fraction x lr_mean x D / D_pre of Wang et al. (arXiv:2505.07796, Eq. 3).
- `replay-area`: 2505.07796's own pair, the same LR-area response with a replay term exponential in the share of the
  other corpus (its Eq. 8): h = (exp(k u) - 1) / k, u the domain share, linear in u as k -> 0.
- `split-power`: D-CPT's share term with separate power laws in the peak LR and the schedule-weighted tokens,
  (lr_fraction / lr_ref)^a x (lr_mean D / D_pre / t_ref)^b, as D-CPT writes D^beta apart from the rest, instead of
  one LR area: it reduces to a power of the area when a = b.
- `size-curve`: the form that bends. dcpt-area's share and LR-area terms, but N enters as a free level at each
  model size of the rows, exp(g(log N)), carried between and beyond the sizes by a Gaussian process in log N with a
  linear trend (sweep.law.curve): where a power law holds, g is its straight line; where the rungs bend away from
  one, g follows them, and beyond the largest its uncertainty grows with the distance.

Each form is a plain function of arrays and its exact Jacobian: the fit evaluates it tens of thousands of times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

FormName = Literal["dcpt-area", "replay-area", "split-power", "size-curve"]
FORM_NAMES: tuple[FormName, ...] = ("dcpt-area", "replay-area", "split-power", "size-curve")
SpanName = Literal["parameters", "lr_area", "lr_fraction", "time", "domain_share"]
SMALL_RATE = 1e-6
"""|k| below this reads the replay term as its limit u: expm1(k u) / k loses every digit there."""


@dataclass(frozen=True)
class Coordinate:
    """One fitted parameter: its bounds, whether it is fitted on its log, and what fixes it when its variable never
    varied in the rows (the span without which it is not determined, and its value then)."""

    name: str
    low: float
    high: float
    log: bool
    fixed_without: SpanName | None
    value_without: float


@dataclass(frozen=True)
class Inputs:
    """The rows as a form reads them: N / N_ref, lr_fraction / lr_ref, schedule-weighted tokens over pretraining
    tokens / t_ref, the loss's own share x and its share without domain data x0."""

    size: np.ndarray
    lr: np.ndarray
    time: np.ndarray
    own: np.ndarray
    without: float
    area_known: bool = True
    """The rows' LR area varied: else the area response is the constant 1 (P and B carry it), as the rows cannot
    say how it moves."""
    level: np.ndarray | None = None
    """For a form whose N-dependence is a curve (size-curve): each row's log size factor g(log N), its model size's
    fitted level in a fit, the curve's value at a prediction. None for the power-law forms."""

    @property
    def area(self) -> np.ndarray:
        return self.lr * self.time

    @property
    def other(self) -> np.ndarray:
        """The domain share for either loss: how far the mix is from no domain data."""
        return np.abs(self.own - self.without)


_LEVEL = (
    Coordinate("offset", -10.0, 10.0, False, None, 0.0),
    Coordinate("shift", -10.0, 10.0, False, "domain_share", 0.0),
)
"""P and B, in every form. The bounds lie far outside anything a loss curve gives (a relative change of 10 is a
loss eleven times the base's) and keep a start from running off to infinity."""
_COMMON = _LEVEL + (Coordinate("size_exponent", -3.0, 3.0, False, "parameters", 0.0),)
"""P, B and nu: the forms whose N-dependence is a power."""
_DCPT = (
    Coordinate("share_offset", 1e-4, 1e2, True, "domain_share", 1.0),
    Coordinate("share_exponent", 1e-3, 10.0, True, "domain_share", 1.0),
)
_REPLAY = (Coordinate("replay_rate", -30.0, 30.0, False, "domain_share", 0.0),)
_AREA = (
    Coordinate("area_rate", 1e-6, 1e6, True, "lr_area", 1.0),
    Coordinate("area_exponent", 1e-3, 10.0, True, "lr_area", 1.0),
)
_POWER = (
    Coordinate("lr_exponent", -2.0, 5.0, False, "lr_fraction", 0.0),
    Coordinate("time_exponent", -2.0, 5.0, False, "time", 0.0),
)
LINEAR = ("offset", "shift")
"""The form is linear in P and B: a start solves them by least squares for its other parameters."""


@dataclass(frozen=True)
class Form:
    name: FormName
    coordinates: tuple[Coordinate, ...]
    citation: str
    curve: bool = False
    """N enters as a curve over the rows' model sizes (Inputs.level), not as a fitted power of N."""

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(coordinate.name for coordinate in self.coordinates)

    def change(self, values: np.ndarray, inputs: Inputs) -> np.ndarray:
        offset, shift = values[:2]
        share, _ = self._share(values, inputs)
        time, _ = self._time(values, inputs)
        return self._scale(values, inputs) * time * (offset + shift * share)

    def gradient(self, values: np.ndarray, inputs: Inputs) -> np.ndarray:
        """d change / d parameter, one column per parameter in `parameters`' order (a curve's levels are the
        caller's: d change / d level is the change itself)."""
        offset, shift = values[:2]
        share, d_share = self._share(values, inputs)
        time, d_time = self._time(values, inputs)
        scale = self._scale(values, inputs)
        level = offset + shift * share
        columns = [scale * time, scale * time * share]
        if not self.curve:
            columns.append(-np.log(inputs.size) * scale * time * level)
        columns += [scale * time * shift * column for column in d_share]
        columns += [scale * level * column for column in d_time]
        gradient = np.empty((len(inputs.own), len(columns)))
        for index, column in enumerate(columns):
            gradient[:, index] = column  # a scalar column (a term constant over the rows) broadcast down it
        return gradient

    def _scale(self, values: np.ndarray, inputs: Inputs) -> np.ndarray:
        if self.curve:
            if inputs.level is None:
                raise ValueError(f"the {self.name} form reads each row's size level, and none was given")
            return np.exp(inputs.level)
        return inputs.size ** -values[2]

    def _share(self, values: np.ndarray, inputs: Inputs) -> tuple[np.ndarray, list[np.ndarray]]:
        first = 2 if self.curve else 3
        if self.name == "replay-area":
            return _replay(values[first], inputs.other)
        return _dcpt(values[first], values[first + 1], inputs.own, inputs.without)

    def _time(self, values: np.ndarray, inputs: Inputs) -> tuple[np.ndarray, list[np.ndarray]]:
        rest = values[len(self.coordinates) - 2 :]
        if self.name == "split-power":
            return _power(rest[0], rest[1], inputs.lr, inputs.time)
        if not inputs.area_known:
            ones = np.ones_like(inputs.own)
            return ones, [0.0 * ones, 0.0 * ones]
        return _area(rest[0], rest[1], inputs.area)


def _dcpt(eps: float, gamma: float, own: np.ndarray, without: float) -> tuple[np.ndarray, list[np.ndarray]]:
    own_base, without_base = own + eps, without + eps
    share = own_base**-gamma - without_base**-gamma
    d_eps = -gamma * (own_base ** (-gamma - 1.0) - without_base ** (-gamma - 1.0))
    d_gamma = -np.log(own_base) * own_base**-gamma + np.log(without_base) * without_base**-gamma
    return share, [d_eps, d_gamma]


def _replay(rate: float, other: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    if abs(rate) < SMALL_RATE:
        return other + 0.0, [other**2 / 2.0]
    grown = np.expm1(rate * other)
    d_rate = (rate * other * (grown + 1.0) - grown) / rate**2
    return grown / rate, [d_rate]


def _area(rate: float, exponent: float, area: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    base = 1.0 + rate * area
    time = 1.0 - base**-exponent
    return time, [exponent * area * base ** (-exponent - 1.0), np.log(base) * base**-exponent]


def _power(lr_exponent: float, time_exponent: float, lr: np.ndarray, time: np.ndarray):
    value = lr**lr_exponent * time**time_exponent
    return value, [np.log(lr) * value, np.log(time) * value]


FORMS: dict[FormName, Form] = {
    "dcpt-area": Form(
        "dcpt-area",
        _COMMON + _DCPT + _AREA,
        "D-CPT Law's share term (arXiv:2406.01375, L3) in 2505.07796's LR-area response (Eq. 3)",
    ),
    "replay-area": Form(
        "replay-area",
        _COMMON + _REPLAY + _AREA,
        "2505.07796's LR-area response (Eq. 3) with its replay term exponential in the share (Eq. 8)",
    ),
    "split-power": Form(
        "split-power",
        _COMMON + _DCPT + _POWER,
        "D-CPT Law's share term with separate power laws in the peak LR and the tokens",
    ),
    "size-curve": Form(
        "size-curve",
        _LEVEL + _DCPT + _AREA,
        "dcpt-area's share and LR-area terms with N as a Gaussian process in log N over the rows' model sizes",
        curve=True,
    ),
}
