"""Sets this Python process's wall clock ``CLOCK_SKEW_S`` seconds off (a test aid).

The cluster chaos test puts this directory first on ``PYTHONPATH`` for one
replica, so the interpreter imports this module before the daemon's own code:
``time.time()``, ``time.time_ns()`` and ``datetime.now()`` / ``utcnow()`` /
``today()`` (through a subclass put in place of ``datetime.datetime``) then
run ahead or behind by the skew, as on a machine whose clock is wrong. The
monotonic clock, which timeouts use, is left alone, as NTP leaves it. A C
library shim such as libfaketime would reach further, but it deadlocks
Python's timed waits on condition variables.
"""

from __future__ import annotations

import datetime as _datetime
import os
import time as _time

_SKEW_S = float(os.environ.get("CLOCK_SKEW_S", "0"))


def _install(skew_s: float) -> None:
    real_time, real_time_ns = _time.time, _time.time_ns
    skew = _datetime.timedelta(seconds=skew_s)
    skew_ns = int(skew_s * 1_000_000_000)

    def time() -> float:
        return real_time() + skew_s

    def time_ns() -> int:
        return real_time_ns() + skew_ns

    real = _datetime.datetime

    class _AnyDatetime(type):
        # Every datetime (the real class's too) passes isinstance() checks made
        # against the name, as the code that imported it expects.
        def __instancecheck__(cls, value: object) -> bool:
            return isinstance(value, real)

        def __subclasscheck__(cls, klass: type) -> bool:
            return issubclass(klass, real)

    class SkewedDatetime(real, metaclass=_AnyDatetime):  # type: ignore[misc,valid-type]
        # Times read from the clock are instances of the real class; no slots
        # keep the instance layout the one C extensions expect.
        __slots__ = ()

        @classmethod
        def now(cls, tz: _datetime.tzinfo | None = None) -> _datetime.datetime:
            return real.now(tz) + skew

        @classmethod
        def utcnow(cls) -> _datetime.datetime:
            return real.utcnow() + skew

        @classmethod
        def today(cls) -> _datetime.datetime:
            return real.today() + skew

    _time.time, _time.time_ns = time, time_ns
    _datetime.datetime = SkewedDatetime  # type: ignore[misc]


if _SKEW_S:
    _install(_SKEW_S)
