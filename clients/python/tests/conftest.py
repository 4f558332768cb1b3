"""Fixtures: the real masters and two real lockd of clients/testenv.sh,
started once per test session in a temp dir and always stopped."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
TESTENV = os.path.join(ROOT, "..", "testenv.sh")

import lockd  # noqa: E402


class Env:
    def __init__(self, d):
        self.dir = d
        self.vars = {}
        with open(os.path.join(d, "env")) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                if k:
                    self.vars[k] = v
        self.a = self.vars["LOCKD_A"]
        self.b = self.vars["LOCKD_B"]
        self.a_sock = "unix:" + self.vars["LOCKD_A_SOCK"]
        self.lease = int(self.vars["LEASE_MS"]) / 1000.0

    def run(self, *args):
        subprocess.run([TESTENV, args[0], self.dir, *args[1:]], check=True, timeout=60)

    def raw(self, addr, line, timeout=3.0):
        """One request on a fresh connection; the first reply line."""
        host, port = addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=timeout) as s:
            s.sendall(line.encode() + b"\r\n")
            f = s.makefile("rb")
            return f.readline().decode().rstrip("\r\n")

    def wait_grants(self, limit=20.0):
        """Poll until both lockd grant a probe lock (masters healthy)."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            try:
                if all(self.raw(x, "TRYLOCK ~probe TTL 100").startswith("OK") for x in (self.a, self.b)):
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("lockd did not grant again in time")

    def speaks(self, line):
        """False when lockd answers ERR PROTOCOL (an older protocol)."""
        return not self.raw(self.a, line).startswith("ERR PROTOCOL")


@pytest.fixture(scope="session")
def env():
    d = tempfile.mkdtemp(prefix="lockd-py-")
    try:
        subprocess.run([TESTENV, "start", d], check=True, timeout=120)
        yield Env(d)
    finally:
        subprocess.run([TESTENV, "stop", d], timeout=60)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def need_12(env):
    if not env.speaks("SESSION"):
        print("lockd does not speak 1.2/1.3 yet")
        pytest.skip("lockd does not speak 1.2/1.3 yet")


@pytest.fixture
def need_13(env):
    if not env.speaks("LEADER x"):
        print("lockd does not speak 1.2/1.3 yet")
        pytest.skip("lockd does not speak 1.2/1.3 yet")


@pytest.fixture
def ca(env):
    c = lockd.Client(env.a)
    yield c
    c.close()


@pytest.fixture
def cb(env):
    c = lockd.Client(env.b)
    yield c
    c.close()
