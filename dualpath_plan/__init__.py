"""dualpath-plan: size prefill/decode-disaggregated LLM clusters that load KV-Cache from storage.

The pipeline runs one way: ``profiles`` (strict loading, SI units) -> ``bandwidth`` (closed-form
link loads, numeric twin of ``symbolic``) -> ``lp`` (throughput bounds) -> ``fluid`` (the
scheduler played on the cluster) -> ``report`` (tables and JSON) <- ``cli`` (parse, call, render).
"""

__version__ = "0.1.0"
