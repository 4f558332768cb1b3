"""The idioms redis-py users arrive with (issue 29, item 4): a Lock object
acquired and released by hand, acquire() answering True or False,
locked() and owned(), lockd.Timeout a TimeoutError, release() raising the
loss error after a loss, and type hints with a py.typed marker."""

import asyncio
import inspect
import os
import shutil
import subprocess
import sys
import time
import uuid
import zipfile

import pytest

import lockd
import lockd._proto
import lockd.aio
import lockd.client
import lockd.errors
from lockd import aio

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def key(name):
    return f"pyi-{name}-{uuid.uuid4().hex[:8]}"


def until_true(fn, limit=5.0):
    """fn() expected to return True soon (a key just released may stay busy
    a moment for a waiter elsewhere: doc/protocol.md, liveness)."""
    end = time.monotonic() + limit
    while True:
        r = fn()
        if r or time.monotonic() > end:
            return r
        time.sleep(0.05)


def test_redis_py_idioms(ca, cb):
    k = key("idiom")
    lk = ca.lock(k)
    assert lk.locked() is False and lk.owned() is False
    assert lk.acquire() is True
    assert lk.fence > 0
    assert lk.locked() is True and lk.owned() is True

    other = cb.lock(k)
    assert other.locked() is True and other.owned() is False
    assert other.acquire(blocking=False) is False
    t0 = time.monotonic()
    assert other.acquire(timeout=0.2) is False
    assert 0.19 <= time.monotonic() - t0 < 2.2
    with pytest.raises(ValueError):
        other.acquire(blocking=False, timeout=1)

    lk.release()
    assert lk.owned() is False
    lk.release()  # again: a no-op
    assert until_true(lambda: other.acquire(blocking=False)) is True
    assert other.owned()
    other.release()
    # the same Lock again, with a timeout this time
    assert lk.acquire(timeout=5) is True
    fence2 = lk.fence
    lk.release()
    with ca.lock(k, wait=5) as again:
        assert again.fence > fence2


def test_aio_redis_py_idioms(env):
    async def main():
        async with aio.Client(env.a) as c:
            k = key("aidiom")
            lk = c.lock(k)
            assert await lk.acquire() is True
            assert await lk.owned() is True and await lk.locked() is True
            other = c.lock(k)
            assert await other.locked() is True and await other.owned() is False
            assert await other.acquire(blocking=False) is False
            assert await other.acquire(timeout=0.2) is False
            with pytest.raises(TimeoutError):
                async with c.lock(k, wait=0.1):
                    pass
            await lk.release()
            assert await lk.owned() is False
            assert await other.acquire(timeout=5) is True
            await other.release()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_timeout_is_a_timeout_error(ca, cb):
    assert issubclass(lockd.Timeout, TimeoutError)
    assert issubclass(lockd.Timeout, lockd.LockdError)
    k = key("terr")
    with ca.lock(k, wait=5):
        with pytest.raises(TimeoutError) as ei:
            with cb.lock(k, wait=0.1):
                pass
        assert ei.value.code == "TIMEOUT"


def test_release_after_a_loss_raises(ca):
    """A TTL that lapses loses the hold; the release in a finally learns it."""
    lk = ca.lock(key("ttl"), ttl=0.3)
    assert lk.acquire()
    assert lk.lost.wait(3.0)
    with pytest.raises(lockd.LockLost):
        lk.release()
    assert not lk.owned()
    with pytest.raises(lockd.LockLost):
        with ca.lock(key("ttl2"), ttl=0.3) as lk2:
            assert lk2.lost.wait(3.0)


def _functions():
    mods = [lockd, lockd.aio, lockd.client, lockd.errors, lockd._proto]
    seen = set()
    for m in mods:
        for obj in vars(m).values():
            if getattr(obj, "__module__", None) != m.__name__ or id(obj) in seen:
                continue
            seen.add(id(obj))
            if inspect.isfunction(obj):
                yield f"{m.__name__}.{obj.__name__}", obj, False
            elif inspect.isclass(obj):
                for name, f in vars(obj).items():
                    if isinstance(f, property):
                        f = f.fget
                    if isinstance(f, (staticmethod, classmethod)):
                        f, bound = f.__func__, isinstance(f, classmethod)
                    else:
                        bound = True
                    if inspect.isfunction(f):
                        yield f"{m.__name__}.{obj.__name__}.{name}", f, bound and not isinstance(vars(obj)[name], staticmethod)


def test_type_hints_everywhere():
    missing = []
    n = 0
    for name, f, bound in _functions():
        n += 1
        params = list(inspect.signature(f).parameters.values())
        if bound:
            params = params[1:]  # self / cls
        for p in params:
            if p.annotation is inspect.Parameter.empty:
                missing.append(f"{name}({p.name})")
        if "return" not in f.__annotations__:
            missing.append(f"{name} -> ?")
    assert n > 100
    assert not missing, missing


def test_py_typed_is_in_the_package(tmp_path):
    assert os.path.isfile(os.path.join(ROOT, "lockd", "py.typed"))
    src = tmp_path / "src"
    src.mkdir()
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, f), src / f)
    shutil.copytree(os.path.join(ROOT, "lockd"), src / "lockd", ignore=shutil.ignore_patterns("__pycache__"))
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"), str(src)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if r.returncode != 0 and "No module named pip" in r.stderr:
        pytest.skip("no pip to build a wheel with")
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = (tmp_path / "dist").glob("lockd-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    assert "lockd/py.typed" in names, names


def test_mypy_strict_when_present(tmp_path):
    """The hints are checked, not only present, where mypy is installed
    (Debian's mypy; not a dependency of the client)."""
    mypy = shutil.which("mypy")
    if mypy is None:
        pytest.skip("no mypy on this machine")
    r = subprocess.run(
        [mypy, "--strict", "--python-version", "3.9", "--cache-dir", str(tmp_path), "lockd"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert r.returncode == 0, r.stdout + r.stderr
