"""The LP bound for exactly the turns a fluid run serves (``lp`` module, DESIGN section 5), solved in closed form
(``closed_bound.solve_closed``, which a property test holds equal to HiGHS), so a run does not import the solver.

The LP takes per-turn means; the runner serves a concrete set of turns. So the bound is solved for
the served turns themselves (``lp.limits_of`` with the run's ``TurnSet``): their mean hit, miss and
generated tokens (bytes on every link are linear in them, so the means are exact), and their exact mean
prefill FLOP ``miss * F(hit)`` and saturated pass seconds (neither is linear in the context). The runner never
caps decode batches by the TPOT SLO; offline neither does the bound, while online the bound counts only the decode
tokens made within the SLO (its batch cap), so an online run can exceed that part of the bound, and its measured
TPOT then says it broke the SLO to do so.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.bounds.decode import DecodeOptions
from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import Bound, BoundOptions, Limits, limits_of
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.sim.rules import FEATURES, PolicyName
from dualpath_plan.model.workload import Trajectories, TurnSet

OFFLINE = BoundOptions(decode=DecodeOptions(tpot_slo_s=float("inf")))  # no TPOT cap on decode batches, as the offline runner


def turns_limits(scenario: Scenario, hit: np.ndarray, miss: np.ndarray, gen: np.ndarray, turns_per_agent: float,
                 options: BoundOptions = OFFLINE) -> Limits:
    """The LP data for the turns with these hit, miss and generated token counts."""
    return limits_of(scenario, options, TurnSet(hit, miss, gen, turns_per_agent))


def bound_limits(scenario: Scenario, traj: Trajectories, options: BoundOptions = OFFLINE) -> Limits:
    """The LP data of every turn of ``traj``."""
    if not traj.context_tokens.sum() > 0:
        raise PlanError(f"{traj.source}: every trajectory has one round, so no turn loads KV-Cache from storage and "
                        "there is nothing for the read paths to carry; give trajectories of two or more rounds", 1)
    return limits_of(scenario, options, TurnSet.of(traj))


def bound_for(scenario: Scenario, traj: Trajectories, policy: PolicyName, options: BoundOptions = OFFLINE) -> Bound:
    """The LP bound (the mode of the policy, ``policies.FEATURES``) for every turn of ``traj``."""
    return solve_closed(bound_limits(scenario, traj, options), FEATURES[policy].lp_mode)
