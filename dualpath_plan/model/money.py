"""Money: what a node costs to buy (USD) or to rent (USD per hour), and what its throughput costs.

A question is priced on one basis, never a mix of the two:

* **purchase**: a hardware profile's ``price_per_node_usd``, overridden by ``--price NAME=USD``
  (``--node-cost`` is the same flag); a budget is ``--budget-usd``; a cluster costs USD and its
  throughput ``cost / X`` USD per turn/s.
* **rent**: a profile's ``rent_per_node_hour_usd`` (an on-demand cloud price, sourced and dated in
  the profile), overridden by ``--rent NAME=USD``; a budget is ``--budget-usd-per-hour``; a
  cluster costs USD per hour, and a turn ``rent / (3,600 s/h * X)`` USD, printed per million turns.

A rent is not a price spread over some years: it also pays for the provider's power, space,
network and margin, so the two bases answer different questions ("what do I buy", "what do I
rent") and a command names the basis it used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.fmt import has
from dualpath_plan.model.profiles import Hardware

SECONDS_PER_HOUR = 3600.0
MILLION = 1e6


@dataclass(frozen=True)
class Basis:
    """One way to price a node: its unit, the profile field and the flags that set it."""

    name: str
    unit: str  # what a cluster costs: "USD" or "USD/h"
    field: str  # the Hardware attribute holding a node's price on this basis
    budget_flag: str
    price_flag: str  # as messages name it (purchase: --node-cost, whose other name is --price)
    per_turn_label: str  # the tables' column
    per_turn_key: str  # the JSON key (SI: USD per turn/s, or USD per turn)
    noun: str  # what a node's price on this basis is called: "purchase price" or "rent"
    price_flags: str = ""  # every name of the price flag, as a refused value's message names it

    @property
    def price_flag_names(self) -> str:
        return self.price_flags or self.price_flag

    def price(self, hw: Hardware) -> float | None:
        """One ``hw`` node's price on this basis (None: the profile gives none)."""
        return getattr(hw, self.field)

    def per_turn(self, cost: float | None, turns_per_s: float) -> float | None:
        """What the throughput costs: USD per turn/s bought, or USD per turn rented (None: nothing served or no price)."""
        if cost is None or not turns_per_s > 0:
            return None
        return cost / turns_per_s if self.name == "purchase" else cost / (SECONDS_PER_HOUR * turns_per_s)

    def per_turn_shown(self, cost: float | None, turns_per_s: float) -> float | None:
        """:meth:`per_turn` in the tables' unit (per million turns when rented)."""
        value = self.per_turn(cost, turns_per_s)
        return value if value is None or self.name == "purchase" else value * MILLION


PURCHASE = Basis("purchase", "USD", "price_per_node_usd", "--budget-usd", "--node-cost", "USD per turn/s", "usd_per_turn_per_s", "purchase price",
                 "--node-cost/--price")
RENT = Basis("rent", "USD/h", "rent_per_node_hour_usd", "--budget-usd-per-hour", "--rent", "USD per 1M turns", "usd_per_turn", "rent")
BASES = {b.name: b for b in (PURCHASE, RENT)}


def money_basis(budget_kind: str | None, prices: Sequence[str], rents: Sequence[str], hardware: Sequence[Hardware] = (),
                every: bool = True) -> Basis:
    """The basis a question is priced on: its money budget's or price flag's, else purchase when every node type in
    ``hardware`` has a purchase price, else rent when every one has a rent, else purchase (counted in nodes). With
    ``every`` False (a table that prices the types it can), rent when some type has a rent and none a purchase price."""
    bought = bool(prices) or budget_kind == "usd"
    rented = bool(rents) or budget_kind == "usd_per_hour"
    if bought and rented:
        raise PlanError("--price/--budget-usd and --rent/--budget-usd-per-hour were both given; price a question on one basis, "
                        "purchase or rent", 2)
    if bought or rented:
        return PURCHASE if bought else RENT
    test = all if every else any
    priced = lambda basis: bool(hardware) and test(basis.price(hw) is not None for hw in hardware)  # noqa: E731
    return RENT if priced(RENT) and not priced(PURCHASE) else PURCHASE


def check_energy(prices: dict[str, float], hardware: Sequence[Hardware], basis: Basis, usd_per_kwh: float, chosen: bool) -> None:
    """Whether ``--electricity-usd-per-kwh`` can be added to the rents of ``hardware`` (each side's node type after its
    ``--set``): what running a node costs an hour when its rent does not include power (a colocation or a lease; a
    cloud's on-demand rent already does; ``PlanRequest.price`` adds it per side). A purchase price is paid once and power
    by the hour, so the purchase basis is refused (``chosen``: by a flag, ``--price`` or ``--budget-usd``; else, with no
    rent anywhere, the flag asks for one); a priced node type without ``node_power_W`` too."""
    if basis is not RENT and not chosen and not prices and all(RENT.price(hw) is None for hw in hardware):  # no rent to add power to
        names = list(dict.fromkeys(hw.name for hw in hardware))
        raise PlanError(f"--electricity-usd-per-kwh = {usd_per_kwh:g} USD/kWh adds power to rents, and {', '.join(names)} "
                        f"{has(names)} no rent: give "
                        f"--rent {hardware[0].name}=USD/h (or --budget-usd-per-hour with rents)", 2)
    if basis is not RENT:
        raise PlanError(f"--electricity-usd-per-kwh = {usd_per_kwh:g} USD/kWh is not allowed on the purchase basis; power is paid by the "
                        "hour: price on rent (--rent or --budget-usd-per-hour) to add it", 2)
    for hw in hardware:
        if prices.get(hw.name, basis.price(hw)) is not None and hw.node_power_W is None:
            raise PlanError(f"--electricity-usd-per-kwh needs node_power_W for every priced node type; {hw.name} has none: add it to the "
                            "profile (or --set node_power_W=W)", 2)
