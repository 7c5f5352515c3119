"""The test API server's watches (server.py): the changes after a resourceVersion, then new ones
as they happen, BOOKMARKs, 410 Expired as an ERROR event, timeouts, and dropped connections.

As the real server: HTTP 200 with chunked JSON lines; resourceVersion absent or "0" starts with
ADDED for every current object; a watch from before the kept history gets one ERROR event
(Status 410 Expired) and ends; with selectors, a change that makes an object match is ADDED, one
that makes it stop matching is DELETED (the old object at the new resourceVersion).
"""
import datetime
import json
import socket
import time

from resources import RESOURCES, api_version, status_body
from store import TooOld
from tables import cells_for, table_row


def expired_event(message):
    return {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                        "status": "Failure", "message": message,
                                        "reason": "Expired", "code": 410}}


class Watcher:
    """An open watch: /_control/drop-watches sets dropped and wakes it."""
    dropped = False


class WatchMixin:
    """Mixed into server.py's Handler: self.state, self.headers, self.wfile."""

    def chunk(self, *lines):
        """Writes each line as its own chunk (as the real server does), in one write."""
        self.wfile.write(b"".join(b"%x\r\n%s\r\n" % (len(d), d) for d in lines))
        self.wfile.flush()

    def watch(self, res, keep, query):
        args, store = self.state.args, self.state.store
        table = "as=Table" in self.headers.get("Accept", "")
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true") and not table
        # Without timeoutSeconds the real server picks 30 to 60 minutes; this one its cap.
        timeout = min(float(query.get("timeoutSeconds") or args.watch_max_seconds),
                      args.watch_max_seconds)
        rv_param = query.get("resourceVersion") or "0"
        if not rv_param.isdigit():
            return self.send_json(400, status_body(400, "BadRequest", "resourceVersion: Invalid "
                                                   "value: \"%s\": must be an integer" % rv_param))
        now = time.monotonic()
        deadline = now + max(timeout, 0)
        drop_at = now + args.watch_drop_after if args.watch_drop_after > 0 else float("inf")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        gone = False
        if rv_param != "0":
            with self.state.lock:
                gone = self.state.gone_left > 0
                if gone:
                    self.state.gone_left -= 1
        me = Watcher()
        with store.cond:
            try:
                if gone:
                    raise TooOld(int(rv_param), store.floor[res])
                if rv_param == "0":
                    pos = store.rv
                    initial = [o for o in store.objects[res].values() if keep is None or keep(o)]
                else:
                    pos = int(rv_param)
                    store.changes_after(res, pos)  # too old?
                    initial = []
                store.watchers.add(me)
            except TooOld as e:
                expired = e
            else:
                expired = None
        if expired:
            return self.chunk(json.dumps(expired_event(str(expired))).encode() + b"\n", b"")
        try:
            self.stream(res, keep, table, bookmarks, initial, pos, me, deadline, drop_at)
        except OSError:  # the client went away
            self.close_connection = True
        finally:
            with store.cond:
                store.watchers.discard(me)

    def stream(self, res, keep, table, bookmarks, initial, pos, me, deadline, drop_at):
        args, store = self.state.args, self.state.store
        self.send_events(res, keep, table, [[pos, "ADDED", o, None, None] for o in initial])
        period = args.bookmark_seconds if args.bookmark_seconds > 0 else float("inf")
        next_bookmark = time.monotonic() + period if bookmarks else float("inf")
        # The real server also sends one shortly before the timeout.
        last_bookmark = deadline - min(2.0, (deadline - time.monotonic()) / 2) \
            if bookmarks and deadline > time.monotonic() else float("inf")
        expired = None
        while True:
            with store.cond:
                while True:
                    now = time.monotonic()
                    try:
                        changes = store.changes_after(res, pos)
                    except TooOld as e:  # compacted while this watch lagged behind
                        changes, expired = [], e
                        break
                    wake = min(deadline, drop_at, next_bookmark, last_bookmark)
                    if changes or me.dropped or now >= wake:
                        break
                    store.changed[res].wait(wake - now)
                current = store.rv
            if expired:
                return self.chunk(json.dumps(expired_event(str(expired))).encode() + b"\n", b"")
            if me.dropped or now >= drop_at:
                return self.drop()
            if changes:
                self.send_events(res, keep, table, changes)
                pos = changes[-1][0]
            elif now >= next_bookmark or now >= last_bookmark:
                pos = current  # no change of res up to the current resourceVersion
                self.chunk(json.dumps({"type": "BOOKMARK", "object": {
                    "kind": RESOURCES[res][1], "apiVersion": api_version(res),
                    "metadata": {"resourceVersion": str(pos)}}}).encode() + b"\n")
                next_bookmark = now + period
                if now >= last_bookmark:
                    last_bookmark = float("inf")
            if now >= deadline:
                return self.chunk(b"")  # the clean end: the terminating chunk

    def send_events(self, res, keep, table, entries):
        out = []
        for entry in entries:
            rv, typ, obj, prev = entry[:4]
            if keep is None and not table:
                if entry[4] is None:
                    entry[4] = json.dumps({"type": typ, "object": obj}).encode() + b"\n"
                out.append(entry[4])
                continue
            now_in = keep is None or keep(obj)
            was_in = prev is not None and (keep is None or keep(prev))
            if typ == "MODIFIED" and not now_in:
                if not was_in:
                    continue
                typ, obj = "DELETED", dict(prev, metadata=dict(prev["metadata"],
                                                                resourceVersion=str(rv)))
            elif typ == "MODIFIED" and not was_in:
                typ = "ADDED"
            elif not now_in:
                continue
            if table:
                cols, cells = cells_for(res)
                now = datetime.datetime.now(datetime.timezone.utc)
                obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
                       "metadata": {"resourceVersion": obj["metadata"].get("resourceVersion")},
                       "columnDefinitions": cols, "rows": [table_row(obj, cells(obj, now))]}
            out.append(json.dumps({"type": typ, "object": obj}).encode() + b"\n")
        for i in range(0, len(out), 1000):
            self.chunk(*out[i:i + 1000])

    def drop(self):
        """Closes the connection mid-stream: no terminating chunk, as a broken connection."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

