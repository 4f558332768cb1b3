"""Pure helpers shared by the async and sync clients: what may be sent
(keys, values, numbers), how addresses are written, how replies parse.
Nothing here does I/O."""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple, Union

from .errors import InvalidArgument, LockdError

MAX_MS = 2**31 - 1
EVENTS = ("LOST", "ELECTED", "NOLEADER")


def check_word(s: object, what: str, max_len: int) -> str:
    """A key, value, id or password: 1..max_len printable ASCII bytes
    (0x21-0x7E). Anything else could split the request line or reach lockd
    as another option (a key "k WAIT" must never be sent)."""
    if not isinstance(s, str):
        raise InvalidArgument(f"{what} must be a str, not {type(s).__name__}")
    if not s:
        raise InvalidArgument(f"{what} is empty")
    if len(s) > max_len:
        raise InvalidArgument(f"{what} is longer than {max_len} bytes")
    for ch in s:
        if not "\x21" <= ch <= "\x7e":
            raise InvalidArgument(
                f"{what} {s[:40]!r} has a byte lockd does not accept "
                f"({ch!r}: only printable ASCII without blanks)"
            )
    return s


def seconds_to_ms(v: object, what: str, minimum: int) -> int:
    """Seconds (int or float) to whole milliseconds, rounded up so a wait is
    never shorter than asked; minimum is 0 for waits, 1 for leases."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InvalidArgument(f"{what} must be a number of seconds")
    if math.isnan(v) or v < 0:
        raise InvalidArgument(f"{what} must not be negative")
    ms = math.ceil(v * 1000)
    if ms < minimum or ms > MAX_MS:
        raise InvalidArgument(f"{what} must be {minimum} to {MAX_MS} ms")
    return ms


def check_count(n: object, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1 or n > MAX_MS:
        raise InvalidArgument(f"{what} must be an int from 1 to {MAX_MS}")
    return n


def parse_addresses(spec: Union[str, Sequence[str]]) -> List[Tuple[str, str, Optional[int]]]:
    """"h:p", "unix:/path", "h1:p,h2:p", "[::1]:p" or a list of them, to a
    list of ("tcp", host, port) / ("unix", path, None)."""
    if isinstance(spec, str):
        items = [x.strip() for x in spec.split(",")]
    else:
        items = list(spec)
    out: List[Tuple[str, str, Optional[int]]] = []
    for a in items:
        if not isinstance(a, str) or not a:
            raise InvalidArgument(f"bad address {a!r}")
        if a.startswith("unix:"):
            out.append(("unix", a[5:], None))
            continue
        host, port_s = a, "7390"
        if a.startswith("["):
            end = a.find("]")
            if end < 0:
                raise InvalidArgument(f"bad address {a!r}")
            host, rest = a[1:end], a[end + 1 :]
            if rest:
                if not rest.startswith(":"):
                    raise InvalidArgument(f"bad address {a!r}")
                port_s = rest[1:]
        elif ":" in a:
            host, port_s = a.rsplit(":", 1)
        try:
            port = int(port_s)
        except ValueError:
            raise InvalidArgument(f"bad port in address {a!r}") from None
        if not 0 < port < 65536 or not host:
            raise InvalidArgument(f"bad address {a!r}")
        out.append(("tcp", host, port))
    if not out:
        raise InvalidArgument("no address")
    return out


def lock_line(cmd: str, key: str, wait_ms: Optional[int], ttl_ms: Optional[int], shared: bool, permits: Optional[int]) -> str:
    parts = [cmd, key]
    if shared:
        parts.append("SHARED")
    if permits is not None:
        parts += ["PERMITS", str(permits)]
    if wait_ms is not None:
        parts += ["WAIT", str(wait_ms)]
    if ttl_ms is not None:
        parts += ["TTL", str(ttl_ms)]
    return " ".join(parts)


class Status:
    """A parsed STATUS reply. state is "FREE", "HELD", "SHARED" or
    "PERMITS"; the other fields are those the reply carries (else None)."""

    __slots__ = ("state", "ttl_ms", "waiters", "holders", "held", "permits")

    def __init__(self, line: str) -> None:
        w = line.split()
        self.state: str = w[0]
        self.ttl_ms: Optional[int] = None
        self.waiters: Optional[int] = None
        self.holders: Optional[int] = None
        self.held: Optional[int] = None
        self.permits: Optional[int] = None
        if w[0] == "HELD":
            self.ttl_ms, self.waiters = int(w[1]), int(w[2])
        elif w[0] == "SHARED":
            self.holders, self.ttl_ms, self.waiters = int(w[1]), int(w[2]), int(w[3])
        elif w[0] == "PERMITS":
            self.held, self.permits, self.waiters = int(w[1]), int(w[2]), int(w[3])

    @property
    def free(self) -> bool:
        return self.state == "FREE" or (self.state == "PERMITS" and self.held == 0)

    def __repr__(self) -> str:
        f = ", ".join(f"{k}={getattr(self, k)}" for k in self.__slots__ if getattr(self, k) is not None)
        return f"Status({f})"


# -- WHO (protocol 1.4) ------------------------------------------------

def _digits(s: str, what: str, line: str) -> int:
    """A decimal number as lockd writes it: digits only (int() would also
    take a sign, blanks or underscores)."""
    if not s or not s.isascii() or not s.isdigit():
        raise LockdError("PROTOCOL", f"bad {what} {s!r} in WHO reply line {line!r}")
    return int(s)


class _Frozen:
    """A value object: fields set once in __init__, compared and hashed by
    value, shown by repr. (Not a dataclass: its generated methods carry no
    type hints, which tests/test_idioms.py asks of every function.)"""

    __slots__: Tuple[str, ...] = ()

    def _set(self, **fields: object) -> None:
        for k, v in fields.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _values(self) -> Tuple[object, ...]:
        return tuple(getattr(self, k) for k in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        f = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"{type(self).__name__}({f})"


class Holder(_Frozen):
    """One `HOLDER fence kind lockd=NAME [client=ADDR] [session=ID]
    [held_ms=N]` line of a WHO reply.

    kind is "exclusive", "shared" or "permit" (then permit is i and
    permits is n, or None when lockd wrote `permit=i/-`: n unknown).
    lockd is the holding lockd's name ("-" when no master knows it).
    client, session and held_ms are None when the line does not carry them
    (the hold is on another lockd than the one asked); client "-" means the
    session is detached, session "-" that it is not resumable."""

    __slots__ = ("fence", "kind", "lockd", "permit", "permits", "client", "session", "held_ms")
    fence: int
    kind: str
    lockd: str
    permit: Optional[int]
    permits: Optional[int]
    client: Optional[str]
    session: Optional[str]
    held_ms: Optional[int]

    def __init__(
        self,
        fence: int,
        kind: str,
        lockd: str,
        permit: Optional[int] = None,
        permits: Optional[int] = None,
        client: Optional[str] = None,
        session: Optional[str] = None,
        held_ms: Optional[int] = None,
    ) -> None:
        self._set(
            fence=fence, kind=kind, lockd=lockd, permit=permit, permits=permits, client=client, session=session, held_ms=held_ms
        )


class Delayed(_Frozen):
    """A WHO reply's `DELAYED ms_left fence`: the key is in a lock-delay
    for ms_left more milliseconds; fence is the key's latest."""

    __slots__ = ("ms_left", "fence")
    ms_left: int
    fence: int

    def __init__(self, ms_left: int, fence: int) -> None:
        self._set(ms_left=ms_left, fence=fence)


class Who(_Frozen):
    """A parsed WHO reply: holders (a tuple of Holder, in lockd's order)
    and delayed (a Delayed, or None). A free key has neither."""

    __slots__ = ("holders", "delayed")
    holders: Tuple[Holder, ...]
    delayed: Optional[Delayed]

    def __init__(self, holders: Sequence[Holder] = (), delayed: Optional[Delayed] = None) -> None:
        self._set(holders=tuple(holders), delayed=delayed)

    @property
    def free(self) -> bool:
        """Nobody holds the key and it is in no lock-delay."""
        return not self.holders and self.delayed is None


def _extras(words: Sequence[str], line: str) -> Dict[str, str]:
    """The word=value tokens of a line; a later version may add words
    (ignored by the caller), but a token without '=' is not one."""
    out: Dict[str, str] = {}
    for w in words:
        name, eq, value = w.partition("=")
        if not eq or not name:
            raise LockdError("PROTOCOL", f"bad token {w!r} in WHO reply line {line!r}")
        out.setdefault(name, value)
    return out


def parse_holder(line: str) -> Holder:
    w = line.split(" ")
    if len(w) < 4 or w[0] != "HOLDER":
        raise LockdError("PROTOCOL", f"bad WHO reply line {line!r}")
    fence = _digits(w[1], "fence", line)
    kind, permit, permits = w[2], None, None
    if kind.startswith("permit="):
        i, slash, n = kind[7:].partition("/")
        if not slash:
            raise LockdError("PROTOCOL", f"bad kind {kind!r} in WHO reply line {line!r}")
        permit = _digits(i, "permit", line)
        permits = None if n == "-" else _digits(n, "permit count", line)
        kind = "permit"
    elif kind not in ("exclusive", "shared"):
        raise LockdError("PROTOCOL", f"unknown kind {kind!r} in WHO reply line {line!r}")
    x = _extras(w[3:], line)
    if "lockd" not in x or not x["lockd"]:
        raise LockdError("PROTOCOL", f"no lockd= in WHO reply line {line!r}")
    held = x.get("held_ms")
    return Holder(
        fence,
        kind,
        x["lockd"],
        permit=permit,
        permits=permits,
        client=x.get("client"),
        session=x.get("session"),
        held_ms=None if held is None else _digits(held, "held_ms", line),
    )


def parse_who(lines: Sequence[str]) -> Who:
    """The lines of a WHO reply before its END: HOLDER lines and at most
    one DELAYED line. Anything else is LockdError("PROTOCOL")."""
    holders: List[Holder] = []
    delayed: Optional[Delayed] = None
    for line in lines:
        word = line.split(" ", 1)[0]
        if word == "HOLDER":
            holders.append(parse_holder(line))
        elif word == "DELAYED":
            w = line.split(" ")
            if len(w) < 3 or delayed is not None:
                raise LockdError("PROTOCOL", f"bad WHO reply line {line!r}")
            _extras(w[3:], line)
            delayed = Delayed(_digits(w[1], "ms_left", line), _digits(w[2], "fence", line))
        else:
            raise LockdError("PROTOCOL", f"unexpected WHO reply line {line!r}")
    return Who(tuple(holders), delayed)
