"""A TCP proxy for the tests, in a thread of its own: 127.0.0.1:PORT ->
a lockd. cut() makes it a network that drops everything: nothing is
forwarded any more, in either direction, and no socket is closed or reset
(new connections are accepted and go nowhere). stop() closes everything."""

import select
import socket
import threading


class Proxy:
    def __init__(self, target):
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.addr = "127.0.0.1:%d" % self.ls.getsockname()[1]
        self.peer = {}  # socket -> the socket it forwards to (None: goes nowhere)
        self._cut = threading.Event()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="test-proxy", daemon=True)
        self.thread.start()

    def cut(self):
        self._cut.set()

    def stop(self):
        self._stop.set()
        self.thread.join(5)
        for s in list(self.peer) + [self.ls]:
            try:
                s.close()
            except OSError:
                pass
        self.peer.clear()

    def _drop(self, s):
        self.peer.pop(s, None)
        try:
            s.close()
        except OSError:
            pass

    def _run(self):
        while not self._stop.is_set():
            r, _, _ = select.select([self.ls] + list(self.peer), [], [], 0.05)
            for s in r:
                if s is self.ls:
                    c, _ = self.ls.accept()
                    if self._cut.is_set():
                        self.peer[c] = None
                        continue
                    try:
                        u = socket.create_connection(self.target, timeout=2)
                    except OSError:
                        c.close()
                        continue
                    self.peer[c] = u
                    self.peer[u] = c
                    continue
                if s not in self.peer:
                    continue
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                other = self.peer.get(s)
                if self._cut.is_set():
                    if not data:
                        self._drop(s)  # this side alone: the other hears nothing
                    continue
                if not data:
                    self._drop(s)
                    if other is not None:
                        self._drop(other)
                    continue
                if other is not None:
                    try:
                        other.sendall(data)
                    except OSError:
                        self._drop(s)
                        self._drop(other)
