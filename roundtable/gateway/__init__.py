"""The owner's gateway: the one way out of a supervised session (`gateway.Gateway`).

A session's socket serves its model API (the operator's credential added here, never in the
sandbox; usage measured on the wire, budgets enforced before forwarding) and a forward proxy for
the hosts the configuration allows. `http11` frames HTTP/1.1 on a connection, `meter` reads usage
from the model API's answers. The package sits above the runtime (it writes through internal
operations) and below the supervisor, which opens and closes each session's grant.
"""

from roundtable.gateway.gateway import Gateway, GatewayGrant, StopHandler, StopRequest

__all__ = ["Gateway", "GatewayGrant", "StopHandler", "StopRequest"]
