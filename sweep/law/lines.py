"""A law fit report in words, as `sweep law fit`, `sweep run` of a ladder, `sweep status` and the ladder report print
it: the forms side by side (weight, cross-validated error, fit against the replicates' noise, each form's own
optimum), the best form written out, the answer by the pick's rule beside the mean-constrained point, the trend,
and the folds. Every figure is read from the report it describes.
"""

from __future__ import annotations

from sweep.law.discrepancy import Discrepancy, LossDiscrepancy
from sweep.law.model import Law
from sweep.law.noise import MISFIT
from sweep.law.prediction import AtEdge, Intervals, TargetPrediction
from sweep.law.runs import LawFitReport, Trend
from sweep.law.select import Laws
from sweep.law.validate import LeaveOneRungOut


def report_lines(report: LawFitReport) -> list[str]:
    """The report as the command prints it."""
    laws = report.laws
    fitted = f"{laws.rows} evaluations of {laws.trials} trials on {len(laws.rungs)} rung(s) ({', '.join(laws.rungs)})"
    lines = [f"law: fitted to {fitted} from {report.source}", f"  {laws.noise.line()}"]
    lines += form_lines(laws, report.prediction)
    lines += _law_lines(laws.best.law)
    lines += discrepancy_lines(laws.discrepancy)
    lines += prediction_lines(report.prediction) + carried_lines(report.prediction, laws.discrepancy)
    return lines + _trend_lines(report.trend) + _validation_lines(report.validation)


def form_lines(laws: Laws, prediction: TargetPrediction) -> list[str]:
    """One line a form: its stacking weight, its cross-validated RMS errors, its worst rung against the noise, and
    its own mean-constrained optimum at the target."""
    answers = {answer.form: answer for answer in prediction.forms}
    lines = [
        (
            f"  forms (weights by stacking their predictions of held-out rungs and trials; a form fits when no rung's "
            f"residual exceeds {MISFIT:g} x the noise, and carries what it misses as its error):"
        )
    ]
    for fit in laws.forms:
        score, answer = fit.score, answers.get(fit.form)
        rung = "-" if score.rung_rmse is None else f"{score.rung_rmse[0]:.2g} / {score.rung_rmse[1]:.2g}"
        trial = "-" if score.trial_rmse is None else f"{score.trial_rmse[0]:.2g} / {score.trial_rmse[1]:.2g}"
        optimum = "-"
        if answer is not None:
            point = answer.optimum
            optimum = "none" if point is None else f"lr_fraction {point.lr_fraction:.3g}, mix {point.mix}"
            optimum += " (outside the box)" if answer.toward else ""
            optimum += f"; {answer.refits} refits"
        fits = "fits" if fit.misfit.fits else "does NOT fit"
        lines.append(
            f"    {fit.form}: weight {fit.weight:.2f}; CV rmse forgetting / domain_gain by rung {rung}, by trial "
            f"{trial}; R2 {fit.law.general_quality.r2:.4f} / {fit.law.domain_quality.r2:.4f}; worst rung "
            f"{fit.misfit.ratio:.2g} x noise ({fits}); its optimum {optimum}"
        )
    return lines


def _law_lines(law: Law) -> list[str]:
    lines = [f"  best form {law.form}:"]
    for name, loss, quality in (
        ("forgetting", law.general, law.general_quality),
        ("-domain_gain", law.domain, law.domain_quality),
    ):
        lines.append(f"    {name} = {loss.formula()}")
        lines.append(
            f"      R2 {quality.r2:.4f} over {quality.rows} rows; residual by rung (mean / rms): "
            + ", ".join(f"{r.rung} {r.mean:+.2g} / {r.rms:.2g}" for r in quality.rungs)
        )
    lines.append(
        "    (N: non-embedding parameters; S: lr_fraction x mean LR x tokens / pretraining tokens; lr: lr_fraction; "
        "t: mean LR x tokens / pretraining tokens; r: domain share)"
    )
    return lines


def discrepancy_lines(discrepancy: Discrepancy) -> list[str]:
    """The stacked law's error beyond the replicates' noise, at each rung fitted and held out, and its growth."""
    lines = [
        "  form error beyond the replicates' noise (relative to the law's values; at each rung fitted / held out):"
    ]
    for loss in (discrepancy.forgetting, discrepancy.domain_gain):
        rungs = ", ".join(
            f"{rung.rung} {rung.fitted:.2g} / {'-' if rung.held_out is None else f'{rung.held_out:.2g}'}"
            for rung in loss.rungs
        )
        growth = "unknown (too few sizes)" if loss.growth is None else f"{loss.growth:.2g} a decade"
        lines.append(f"    {loss.loss}: {loss.within:.2g} at the rungs ({rungs}); growing {growth} beyond them")
    return lines


def _error(loss: LossDiscrepancy, carried: float, distance: float, parameters: float) -> str:
    growth = "unknown" if loss.growth is None else f"{loss.growth:.2g} a decade"
    return (
        f"sd {carried:.2g} ({loss.within:.2g} at the rungs, growing {growth} over {distance:.1f} decades, and "
        f"{loss.bend(parameters):.2g} for how far the rungs' levels may bend from a power of N)"
    )


def carried_lines(prediction: TargetPrediction, discrepancy: Discrepancy) -> list[str]:
    """The form's error the answer carries at its target, and the share of each interval's variance that the noise,
    the spread between forms and that error make."""
    carried, target = prediction.discrepancy, prediction.target
    if carried is None:
        return []
    forgetting = _error(discrepancy.forgetting, carried.forgetting, carried.distance, target.parameters)
    gain = _error(discrepancy.domain_gain, carried.domain_gain, carried.distance, target.parameters)
    lines = [
        (
            f"form error carried at {target.name} (each refit times exp(e), e a smooth draw over the space): "
            f"forgetting {forgetting}; domain_gain {gain}"
        )
    ]
    if prediction.intervals is not None:
        lines.append(
            f"what makes each interval (shares of its variance: noise / form spread / form error): {sources_line(prediction.intervals)}"
        )
    return lines


def sources_line(intervals: Intervals) -> str:
    """Each interval's shares of variance, in one line."""

    def shares(name: str) -> str:
        sources = getattr(intervals, name).sources
        if sources is None:
            return f"{name} not measured"
        return f"{name} {sources.noise:.0%} / {sources.forms:.0%} / {sources.discrepancy:.0%}"

    return ", ".join(shares(name) for name in ("lr_fraction", "domain_share", "domain_gain", "forgetting"))


def prediction_lines(prediction: TargetPrediction) -> list[str]:
    target, box, pick = prediction.target, prediction.box, prediction.pick
    searched = (
        f"lr_fraction {box.lr_fraction[0]:g} to {box.lr_fraction[1]:g}, domain share {box.domain_share[0]:.3g} to "
        f"{box.domain_share[1]:.3g}"
    )
    scale = (
        f"N {target.parameters:.4g}, {target.tokens:.4g} tokens after {target.pretrain_tokens:.4g} of pretraining, "
        f"mean LR {target.lr_mean:.3g} of the peak"
    )
    lines = [
        f"target {target.name}: {scale}; forgetting budget {prediction.forgetting_budget:.4g}; searched {searched}"
    ]
    intervals = prediction.intervals

    def span(value: float, name: str, digits: str) -> str:
        interval = getattr(intervals, name) if intervals else None
        return f"{value:{digits}}" + (f" [{interval.low:{digits}}, {interval.high:{digits}}]" if interval else "")

    point = prediction.optimum
    rule = f"highest lower-confidence domain_gain with P(forgetting <= budget) >= {pick.min_probability:g}"
    if point is None:
        lines.append(f"chance-constrained optimum ({rule}): none")
    else:
        lines.append(
            f"chance-constrained optimum ({rule}; the answer): lr_fraction {point.lr_fraction:.4g}, mix {point.mix} "
            f"(domain share {point.domain_share:.3g}); at it domain_gain {span(point.domain_gain, 'domain_gain', '.4g')} "
            f"(lower bound {prediction.lower_gain:.4g}), forgetting {span(point.forgetting, 'forgetting', '.4g')}, "
            f"P(forgetting <= budget) {prediction.within_budget:.2f}"
        )
    lines += _at_edge_lines(prediction.at_edge)
    mean = prediction.mean_optimum
    if mean is not None:
        probability = "unknown" if prediction.mean_within_budget is None else f"{prediction.mean_within_budget:.2f}"
        lines.append(
            f"mean-constrained optimum (predicted forgetting at most the budget; never promoted): lr_fraction "
            f"{mean.lr_fraction:.4g}, mix {mean.mix}; at it domain_gain {mean.domain_gain:.4g}, forgetting "
            f"{mean.forgetting:.4g}, P(forgetting <= budget) {probability}"
        )
    if prediction.refits:
        drawn = ", ".join(f"{answer.form} {answer.refits}" for answer in prediction.forms if answer.refits)
        where = (
            f"the optimum's lr_fraction [{intervals.lr_fraction.low:.3g}, {intervals.lr_fraction.high:.3g}], domain "
            f"share [{intervals.domain_share.low:.3g}, {intervals.domain_share.high:.3g}]; "
            if intervals
            else ""
        )
        lines.append(
            f"{_level(intervals)} intervals over {prediction.refits} bootstrap refits ({drawn or 'none fitted'}): "
            f"{where}{prediction.refits_outside} put the optimum outside the box, {prediction.refits_without} found none"
        )
    if prediction.refusal is not None:
        lines.append(f"refused ({prediction.refusal.kind}): {prediction.refusal.message}")
    return lines


def _at_edge_lines(edge: AtEdge | None) -> list[str]:
    """Why the answer is the best point inside the box when the rule's own point lay beyond it."""
    if edge is None:
        return []
    more = f"{edge.gains_more:.2g} more" if edge.gains_more > 0.0 else "no more"
    return [
        f"  the best point inside the searched box: the rule's own point lies beyond it (lr_fraction "
        f"{edge.beyond.lr_fraction:.4g}, mix {edge.beyond.mix}) and gains {more} lower-confidence domain_gain, "
        f"within the {edge.material:.2g} the noise and the form's error account for"
    ]


def _level(intervals) -> str:
    return f"{intervals.level:.0%}" if intervals else "no"


def _trend_lines(trend: Trend) -> list[str]:
    shares = ", ".join(
        f"{entry.share:.3g} at N {entry.parameters:.3g}"
        if entry.share is not None
        else f"none at N {entry.parameters:.3g}"
        for entry in trend.shares
    )
    return [
        f"critical domain share with N (at LR area {trend.lr_area:.4g}): {trend.direction} ({shares})",
        f"  published: {trend.published}",
    ]


def _validation_lines(validation: LeaveOneRungOut | None) -> list[str]:
    if validation is None:
        return []
    refused = sum(fold.predicted.refusal is not None for fold in validation.folds)
    lines = [
        f"leave-one-rung-out: {validation.covered} of {len(validation.folds)} folds covered by their intervals"
        + (f" ({refused} of them refused, their intervals shown all the same)" if refused else "")
    ]
    for fold in validation.folds:
        predicted, own, intervals = fold.predicted.optimum, fold.own, fold.predicted.intervals
        said = f"lr_fraction {predicted.lr_fraction:.3g}, share {predicted.domain_share:.3g}" if predicted else "none"
        if intervals is not None:
            said += (
                f" (90 % intervals: lr_fraction {intervals.lr_fraction.low:.3g} to {intervals.lr_fraction.high:.3g}, "
                f"share {intervals.domain_share.low:.3g} to {intervals.domain_share.high:.3g})"
            )
        mine = f"lr_fraction {own.lr_fraction:.3g}, share {own.domain_share:.3g}" if own else "no optimum"
        mine += " (outside the box)" if fold.own_toward else ""
        lines.append(f"  {fold.rung}: predicted {said}; its own trials' law {mine}; covered {fold.coverage.complete}")
        if fold.predicted.refusal is not None:
            lines.append(f"    refused: {fold.predicted.refusal.message}")
    return lines
