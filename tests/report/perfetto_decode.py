"""A reader of the Perfetto traces `cuhook report --format perfetto` writes, for the tests: the
protobuf wire format, and the sequence state Perfetto's trace_processor keeps (trace packet
defaults, sequence-scoped incremental clocks, interned data) to give every event its track,
absolute time, name, categories and annotations. What it cannot resolve (an iid no interned
data of the sequence defined, a timestamp on an undeclared clock) goes to `errors`."""

MONOTONIC, REALTIME = 3, 1


class DecodeError(Exception):
    pass


def parse(buf):
    """Fields of a protobuf message: list of (field number, wire type, value)."""
    i, out = 0, []

    def varint():
        nonlocal i
        v, s = 0, 0
        while True:
            if i >= len(buf):
                raise DecodeError("varint runs past the end")
            b = buf[i]
            i += 1
            v |= (b & 0x7f) << s
            s += 7
            if not b & 0x80:
                return v
    while i < len(buf):
        key = varint()
        fn, wt = key >> 3, key & 7
        if wt == 0:
            out.append((fn, wt, varint()))
        elif wt == 2:
            n = varint()
            if i + n > len(buf):
                raise DecodeError("length-delimited field runs past the end")
            out.append((fn, wt, buf[i:i + n]))
            i += n
        elif wt == 1:
            out.append((fn, wt, buf[i:i + 8]))
            i += 8
        elif wt == 5:
            out.append((fn, wt, buf[i:i + 4]))
            i += 4
        else:
            raise DecodeError(f"bad wire type {wt}")
    return out


def fields(buf):
    """{field: [values]} of a message."""
    d = {}
    for fn, _, v in parse(buf):
        d.setdefault(fn, []).append(v)
    return d


def one(d, fn, default=None):
    return d[fn][0] if fn in d else default


class Sequence:
    def __init__(self):
        self.clear()

    def clear(self):
        self.clock_id = None        # TracePacketDefaults.timestamp_clock_id
        self.track = None           # TrackEventDefaults.track_uuid
        self.clocks = {}            # sequence clock id -> [snapshot value, monotonic value, last]
        self.interned = {}          # InternedData field -> {iid: entry fields}
        self.cleared = True


class Trace:
    def __init__(self, data):
        self.packets = []
        self.events = []            # dicts: seq, ts (MONOTONIC ns), track, type, name, categories,
                                    # annotations {name: value}, flows, terminating, callstack, counter
        self.tracks = {}            # uuid -> dict: name, parent, pid, tid, thread_name, process_name,
                                    # counter (CounterDescriptor fields or None)
        self.snapshot = None        # {clock id: timestamp} of the trace's ClockSnapshot with a primary clock
        self.primary = None
        self.errors = []
        self.seqs = {}
        self.interned_packets = []  # (seq, sequence flags, [InternedData fields]) of each packet
                                    # with interned data
        self.event_flags = []       # sequence flags of each track event packet
        for fn, wt, pkt in parse(data):
            if fn != 1 or wt != 2:
                raise DecodeError(f"Trace field {fn} (wire type {wt}) is not a packet")
            self.packets.append(pkt)
            self._packet(fields(pkt))

    def origin(self):
        """The MONOTONIC time the trace's ClockSnapshot names: the first file's start."""
        return self.snapshot[MONOTONIC]

    def _packet(self, p):
        seq_id = one(p, 10, 0)
        s = self.seqs.setdefault(seq_id, Sequence())
        flags = one(p, 13, 0)
        if flags & 1:
            s.clear()
        if 59 in p:
            d = fields(p[59][0])
            s.clock_id = one(d, 58)
            if 11 in d:
                s.track = one(fields(d[11][0]), 11)
        if 12 in p:
            tables = fields(p[12][0])
            self.interned_packets.append((seq_id, flags, sorted(tables)))
            for kind, entries in tables.items():
                for e in entries:
                    ef = fields(e)
                    s.interned.setdefault(kind, {})[one(ef, 1)] = ef
        if 6 in p:
            cs = fields(p[6][0])
            clocks = {}
            for c in cs.get(1, []):
                cf = fields(c)
                clocks[one(cf, 1)] = (one(cf, 2, 0), bool(one(cf, 3, 0)))
            if 2 in cs:
                self.primary = one(cs, 2)
                self.snapshot = {k: v for k, (v, _) in clocks.items()}
            for cid, (v, inc) in clocks.items():
                if cid >= 64:
                    if MONOTONIC not in clocks:
                        self.errors.append(f"sequence {seq_id}: clock {cid} not tied to MONOTONIC")
                        continue
                    s.clocks[cid] = [v, clocks[MONOTONIC][0], v, inc]
            return
        if 60 in p:
            d = fields(p[60][0])
            t = {"name": one(d, 2, b"").decode(), "parent": one(d, 5), "counter": None}
            if 3 in d:
                pd = fields(d[3][0])
                t.update(pid=one(pd, 1), process_name=one(pd, 6, b"").decode())
            if 4 in d:
                td = fields(d[4][0])
                t.update(pid=one(td, 1), tid=one(td, 2), thread_name=one(td, 5, b"").decode())
            if 8 in d:
                t["counter"] = fields(d[8][0])
            self.tracks[one(d, 1)] = t
        if 11 in p:
            self.event_flags.append(flags)
            self._event(seq_id, s, p, fields(p[11][0]), flags)

    def _lookup(self, seq_id, s, kind, iid, what):
        e = s.interned.get(kind, {}).get(iid)
        if e is None:
            self.errors.append(f"sequence {seq_id}: {what} iid {iid} not defined")
            return None
        return one(e, 2, b"").decode("utf-8", "replace")

    def _time(self, seq_id, s, p):
        if 8 not in p:
            return None
        v = one(p, 8)
        cid = one(p, 58) or s.clock_id or self.primary or MONOTONIC
        if cid == MONOTONIC:
            return v
        c = s.clocks.get(cid)
        if c is None:
            self.errors.append(f"sequence {seq_id}: timestamp on undeclared clock {cid}")
            return None
        if c[3]:        # incremental: a delta from the previous value of the clock
            c[2] += v
            v = c[2]
        return v - c[0] + c[1]

    def _event(self, seq_id, s, p, te, flags):
        if (one(te, 10) is not None or 3 in te or 56 in te or 11 not in te) and not flags & 2:
            self.errors.append(f"sequence {seq_id}: an event using incremental state without flag 2")
        ev = {"seq": seq_id, "ts": self._time(seq_id, s, p), "type": one(te, 9, 0),
              "track": one(te, 11, s.track), "flows": [int.from_bytes(v, "little") for v in te.get(47, [])],
              "terminating": [int.from_bytes(v, "little") for v in te.get(48, [])],
              "callstack": one(te, 56), "counter": one(te, 30), "annotations": {}}
        if 23 in te:
            ev["name"] = one(te, 23).decode()
        elif 10 in te:
            ev["name"] = self._lookup(seq_id, s, 2, one(te, 10), "event name")
        else:
            ev["name"] = None
        ev["categories"] = [c.decode() for c in te.get(22, [])] + \
            [self._lookup(seq_id, s, 1, c, "category") for c in te.get(3, [])]
        for a in te.get(4, []):
            ad = fields(a)
            name = one(ad, 10, b"").decode() if 10 in ad else self._lookup(seq_id, s, 3, one(ad, 1), "annotation name")
            if 6 in ad:
                val = one(ad, 6).decode("utf-8", "replace")
            elif 17 in ad:
                val = self._lookup(seq_id, s, 29, one(ad, 17), "annotation string")
            elif 4 in ad:
                val = one(ad, 4)
                val = val - (1 << 64) if val >= 1 << 63 else val
            else:
                val = one(ad, 3)
            ev["annotations"][name] = val
        ev["interned"] = s.interned
        self.events.append(ev)


def load(path):
    with open(path, "rb") as f:
        return Trace(f.read())
