"""Container logs in the CRI format: the line format, the writer that copies a container's pipes
to its log file (capped), and the rendering `kubectl logs` shows."""

import os
import select
import threading
import time

from .constants import LINE_SPLIT, LOG_CAP
from .times import nano_time, parse_time


def cri_line(t, stream, content, partial):
    return b"%s %s %s %s\n" % (nano_time(t).encode(), stream, b"P" if partial else b"F", content)


def parse_cri(data):
    """[(timestamp str, stream, content bytes, full bool)] from CRI-format log bytes."""
    out = []
    for line in data.split(b"\n"):
        if not line:
            continue
        parts = line.split(b" ", 3)
        if len(parts) < 4:
            parts += [b""] * (4 - len(parts))
        out.append((parts[0].decode(errors="replace"), parts[1], parts[2], parts[3]))
    return [(ts, st, content, tag != b"P") for ts, st, tag, content in out]


def render_log(data, tail_lines=None, timestamps=False, since=None, limit_bytes=None):
    """The bytes `kubectl logs` shows for a CRI log: whole lines, the last tail_lines of them."""
    lines = []
    cur = []
    first_ts = None
    for ts, _stream, content, full in parse_cri(data):
        if first_ts is None:
            first_ts = ts
        cur.append(content)
        if full:
            lines.append((first_ts, b"".join(cur) + b"\n"))
            cur, first_ts = [], None
    if cur:
        lines.append((first_ts, b"".join(cur)))
    if since is not None:
        lines = [l for l in lines if (parse_time(l[0]) or 0) >= since]
    if tail_lines is not None:
        lines = lines[-tail_lines:] if tail_lines > 0 else []
    out = b"".join((ts.encode() + b" " if timestamps else b"") + c for ts, c in lines)
    if limit_bytes is not None:
        out = out[:limit_bytes]
    return out


class LogPump:
    """Copies a container's stdout and stderr pipes to its CRI-format log file, capped."""

    def __init__(self, path, out_fd, err_fd, cap=LOG_CAP):
        self.path, self.cap = path, cap
        self.f = open(path, "ab")
        self.size = self.f.tell()
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.fds = {out_fd: b"stdout", err_fd: b"stderr"}
        self.bufs = {out_fd: b"", err_fd: b""}
        self.stop_at = None
        threading.Thread(target=self.run, daemon=True, name="logpump").start()

    def note(self, text):
        self._emit(b"stdout", text.encode(), False)

    def _emit(self, stream, content, partial):
        with self.lock:
            if self.size >= self.cap:
                return
            line = cri_line(time.time(), stream, content, partial)
            if self.size + len(line) > self.cap:
                line = cri_line(time.time(), b"stderr",
                                b"test kubelet: log truncated at %d bytes" % self.cap, False)
                self.size = self.cap
            else:
                self.size += len(line)
            self.f.write(line)
            self.f.flush()

    def finish_after(self, seconds):
        """Stop reading `seconds` from now even if a leftover process keeps a pipe open."""
        self.stop_at = time.time() + seconds

    def run(self):
        try:
            fds = list(self.fds)
            while fds:
                if self.stop_at is not None and time.time() > self.stop_at:
                    break
                r, _, _ = select.select(fds, [], [], 0.5)
                for fd in r:
                    try:
                        data = os.read(fd, 65536)
                    except OSError:
                        data = b""
                    if not data:
                        fds.remove(fd)
                        continue
                    buf = self.bufs[fd] + data
                    while True:
                        nl = buf.find(b"\n")
                        if nl == -1 or nl > LINE_SPLIT:
                            break
                        self._emit(self.fds[fd], buf[:nl], False)
                        buf = buf[nl + 1:]
                    while len(buf) > LINE_SPLIT:
                        self._emit(self.fds[fd], buf[:LINE_SPLIT], True)
                        buf = buf[LINE_SPLIT:]
                    self.bufs[fd] = buf
            for fd, buf in self.bufs.items():
                if buf:
                    self._emit(self.fds[fd], buf, False)
        finally:
            for fd in self.fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            with self.lock:
                self.f.close()
            self.done.set()
