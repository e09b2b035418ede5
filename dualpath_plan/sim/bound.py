"""The LP bound for exactly the turns a fluid run serves (``lp`` module, DESIGN section 5).

The LP takes per-turn means; the runner serves a concrete set of turns. So the bound is solved for
the served turns themselves: their mean hit, miss and generated tokens (bytes on every link are
linear in them, so the means are exact), and their exact mean prefill FLOP ``miss * F(hit)`` and
saturated pass seconds (neither is linear in the context, so the mean turn's would be wrong). The runner never
caps decode batches by the TPOT SLO; offline neither does the bound, while online the bound counts only the decode
tokens made within the SLO (its batch cap), so an online run can exceed that part of the bound, and its measured
TPOT then says it broke the SLO to do so.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dualpath_plan.bounds.decode import DecodeOptions
from dualpath_plan.bounds.lp import Bound, BoundOptions, Limits, limits_of, solve
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.bounds.compute import prefill_pass, resolve_dtype
from dualpath_plan.sim.layout import prefill_flops, prefill_seconds
from dualpath_plan.sim.rules import FEATURES, PolicyName
from dualpath_plan.model.workload import Trajectories

OFFLINE = BoundOptions(decode=DecodeOptions(tpot_slo_s=float("inf")))  # no TPOT cap on decode batches, as the offline runner


def turns_limits(scenario: Scenario, hit: np.ndarray, miss: np.ndarray, gen: np.ndarray, turns_per_agent: float,
                 options: BoundOptions = OFFLINE) -> Limits:
    """The LP data for the turns with these hit, miss and generated token counts."""
    if not hit.size or not hit.sum() > 0:
        raise PlanError("no served turn has a KV hit (every context is empty); the bound needs hit tokens", 1)
    ctx, app = float(hit.mean()), float(miss.mean())
    work = replace(scenario.workload, context_tokens=ctx, append_tokens=app, gen_tokens=float(gen.mean()),
                   hit_rate=ctx / (ctx + app), turns=turns_per_agent)
    lim = limits_of(replace(scenario, workload=work), options, turns_per_agent)
    flops = float(prefill_flops(scenario.model, hit, miss).mean())
    if lim.prefill_flops_per_gpu == 0:
        return replace(lim, flops_per_turn=flops)
    # The served turns' own FLOP and saturated pass seconds (F and the pass time are not linear in the context).
    dtype = resolve_dtype(scenario.model, options.dtype)
    seconds = float(prefill_seconds(prefill_pass(scenario.model, scenario.pe_hw, dtype, scenario.P), scenario.model, hit, miss).mean())
    return replace(lim, flops_per_turn=flops, prefill_flops_per_gpu=flops / seconds)


def bound_limits(scenario: Scenario, traj: Trajectories, options: BoundOptions = OFFLINE) -> Limits:
    """The LP data of every turn of ``traj``."""
    if not traj.context_tokens.sum() > 0:
        raise PlanError(f"{traj.source}: every trajectory has one round, so no turn loads KV-Cache from storage and "
                        "there is nothing for the read paths to carry; give trajectories of two or more rounds", 1)
    return turns_limits(scenario, traj.context_tokens, traj.append_tokens, traj.gen_tokens, traj.n_rounds / traj.n_agents, options)


def bound_for(scenario: Scenario, traj: Trajectories, policy: PolicyName, options: BoundOptions = OFFLINE) -> Bound:
    """The LP bound (the mode of the policy, ``policies.FEATURES``) for every turn of ``traj``."""
    return solve(bound_limits(scenario, traj, options), FEATURES[policy].lp_mode)
