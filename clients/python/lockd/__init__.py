"""lockd: a client for lockd, the Redlock lock broker.

    import lockd
    c = lockd.Client("127.0.0.1:7390")
    with c.lock("nightly-report", wait=5.0) as lk:
        lk.fence      # pass it to the resource you protect
        lk.check()    # raises lockd.LockLost once the lock is lost

lockd.aio.Client is the same API for asyncio. See README.md.
"""

from . import aio
from ._proto import Delayed, Holder, Status, Who
from .client import Client, Leadership, Lock, Observer
from .errors import (
    ConnectionError,
    InvalidArgument,
    LockdError,
    LockLost,
    QuorumError,
    Timeout,
)

__version__ = "0.2.0"
__all__ = [
    "Client",
    "Lock",
    "Leadership",
    "Observer",
    "Status",
    "Who",
    "Holder",
    "Delayed",
    "LockdError",
    "Timeout",
    "QuorumError",
    "LockLost",
    "ConnectionError",
    "InvalidArgument",
    "aio",
]
