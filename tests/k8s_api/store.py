"""The test API server's object store: a global resourceVersion, objects per resource in
creation order, and a bounded history of changes per resource that watches replay (server.py).

Stored objects are never changed in place: a write stores a new dict (sharing what did not
change), so that the history keeps every object as it was at its resourceVersion.
"""
import bisect
import collections
import json
import threading


class TooOld(Exception):
    """A watch asked for changes older than the history holds (410 Expired)."""

    def __init__(self, asked, floor):
        super().__init__("too old resource version: %d (%d)" % (asked, floor))


class Exists(Exception):
    pass


class Missing(Exception):
    pass


class Conflict(Exception):
    pass


def clone(obj):
    return json.loads(json.dumps(obj))


def key_of(obj):
    meta = obj.get("metadata", {})
    return (meta.get("namespace") or "", meta.get("name", ""))


class Store:
    def __init__(self, resources, history=10000, start_rv=1000):
        # One lock; watches of a resource wait on its own condition, woken by its changes.
        self.cond = threading.Condition()
        self.changed = {r: threading.Condition(self.cond) for r in resources}
        self.rv = start_rv
        self.objects = {r: {} for r in resources}   # key -> object
        self.seq_of = {r: {} for r in resources}    # key -> creation sequence number
        self.seqs = {r: [] for r in resources}      # sorted sequence numbers ...
        self.keys = {r: [] for r in resources}      # ... and their keys: the list order
        self.next_seq = 0
        # Entries [rv, type, object, previous object, cached JSON line or None].
        self.history = {r: collections.deque() for r in resources}
        self.history_max = max(1, history)
        # Every change after floor[r] is in history[r]; a watch from before it is too old.
        self.floor = {r: start_rv for r in resources}
        self.compacted = 0  # as etcd's compaction: continue tokens from before it expire
        self.watchers = set()

    # Writes: the caller holds self.cond.
    def load(self, res, obj):
        """An object of a snapshot: stored at the current resourceVersion, with no history."""
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        self._insert(res, key_of(obj), obj)

    def _insert(self, res, key, obj):
        if key not in self.objects[res]:
            self.next_seq += 1
            self.seq_of[res][key] = self.next_seq
            self.seqs[res].append(self.next_seq)
            self.keys[res].append(key)
        self.objects[res][key] = obj

    def _record(self, res, typ, obj, prev):
        h = self.history[res]
        if len(h) >= self.history_max:
            self.floor[res] = h.popleft()[0]
        h.append([self.rv, typ, obj, prev, None])
        self.changed[res].notify_all()

    def put(self, res, obj):
        """Creates or replaces `obj` (by namespace and name): ADDED or MODIFIED."""
        self.rv += 1
        obj["metadata"] = dict(obj.get("metadata", {}), resourceVersion=str(self.rv))
        key = key_of(obj)
        prev = self.objects[res].get(key)
        self._insert(res, key, obj)
        self._record(res, "MODIFIED" if prev is not None else "ADDED", obj, prev)
        return obj

    def create(self, res, obj):
        if key_of(obj) in self.objects[res]:
            raise Exists()
        return self.put(res, obj)

    def update(self, res, key, change, want_rv=None):
        """Stores change(copy of the current object); a stale want_rv raises Conflict."""
        cur = self.objects[res].get(key)
        if cur is None:
            raise Missing()
        if want_rv and want_rv != cur["metadata"].get("resourceVersion"):
            raise Conflict()
        return self.put(res, change(clone(cur)))

    def delete(self, res, key):
        cur = self.objects[res].pop(key, None)
        if cur is None:
            raise Missing()
        seq = self.seq_of[res].pop(key)
        i = bisect.bisect_left(self.seqs[res], seq)
        del self.seqs[res][i], self.keys[res][i]
        self.rv += 1
        gone = dict(cur, metadata=dict(cur["metadata"], resourceVersion=str(self.rv)))
        self._record(res, "DELETED", gone, cur)
        return gone

    def compact(self):
        """Forgets every change so far: a watch from an older resourceVersion gets 410."""
        for res in self.history:
            self.history[res].clear()
            self.floor[res] = self.rv
        self.compacted = self.rv

    # Reads: the caller holds self.cond.
    def get(self, res, key):
        return self.objects[res].get(key)

    def page(self, res, keep, after_seq, limit):
        """Objects created after sequence number after_seq that keep() accepts (None: all), at
        most limit (0: all): (objects, sequence number of the last one or None when no more,
        how many remain or None when a filter makes that costly, as the real server omits it)."""
        seqs, keys, objs = self.seqs[res], self.keys[res], self.objects[res]
        i = bisect.bisect_right(seqs, after_seq)
        out, last = [], after_seq
        while i < len(keys):
            obj = objs[keys[i]]
            if keep is None or keep(obj):
                if limit and len(out) == limit:
                    return out, last, (len(keys) - i if keep is None else None)
                out.append(obj)
                last = seqs[i]
            i += 1
        return out, None, 0

    def changes_after(self, res, rv):
        """History entries of res with a resourceVersion above rv, oldest first."""
        if rv < self.floor[res]:
            raise TooOld(rv, self.floor[res])
        out = []
        for entry in reversed(self.history[res]):
            if entry[0] <= rv:
                break
            out.append(entry)
        out.reverse()
        return out
