/* --format perfetto: the native Perfetto trace (protobuf), for ui.perfetto.dev and
 * trace_processor, encoded by hand (no protobuf library). Field numbers are those of Perfetto's
 * perfetto/protos/perfetto/trace/ (tests/report/perfetto_subset.proto lists every field written
 * here, and the report tests decode each output against it with protoc). A Trace is a sequence of
 *   TracePacket (Trace.packet = 1)
 * and the packets used here are
 *   timestamp (8), timestamp_clock_id (58), trusted_packet_sequence_id (10), sequence_flags (13:
 *   1 incremental state cleared, 2 needs incremental state), trace_packet_defaults (59:
 *   timestamp_clock_id 58, track_event_defaults 11: track_uuid 11)
 *   clock_snapshot (6): clocks (1: clock_id 1, timestamp 2, is_incremental 3),
 *                       primary_trace_clock (2)
 *   track_descriptor (60): uuid (1), name (2), process (3: pid 1, process_name 6),
 *                          thread (4: pid 1, tid 2, thread_name 5), parent_uuid (5),
 *                          counter (8: CounterDescriptor, unit 3)
 *   track_event (11): type (9: 1 slice begin, 2 slice end, 3 instant, 4 counter),
 *                     track_uuid (11), category_iids (3), categories (22), name_iid (10),
 *                     name (23), debug_annotations (4: name_iid 1, name 10, string_value 6,
 *                     string_value_iid 17, uint_value 3, int_value 4), counter_value (30),
 *                     flow_ids (47, fixed64), terminating_flow_ids (48, fixed64),
 *                     callstack_iid (56)
 *   interned_data (12): event_categories (1), event_names (2), debug_annotation_names (3)
 *                     (each iid 1, name 2), debug_annotation_string_values (29),
 *                     function_names (5), frames (6: iid 1, function_name_id 2, mapping_id 3,
 *                     rel_pc 4, source_path_iid 5, line_number 6, kind 7), callstacks (7: iid 1,
 *                     frame_ids 2), build_ids (16), mapping_paths (17), source_paths (18),
 *                     mappings (19: iid 1, build_id 2, start_offset 3, start 4, end 5,
 *                     path_string_ids 7, exact_offset 8); strings are InternedString (iid 1, str 2)
 *
 * Time: every timestamp is CLOCK_MONOTONIC of the first file's trace (with several files, the
 * others' times on it through the common axis, rp_align). The first packet is a ClockSnapshot
 * that makes MONOTONIC the trace's clock (primary_trace_clock) and ties it to REALTIME by that
 * trace's realtime - monotonic offset, so that trace_processor and the UI can show wall-clock
 * time and line the trace up with nsys, Kineto or perf traces of the same run.
 *
 * Size: each thread's calls are one packet sequence of their own, written as Perfetto's SDK
 * writes a thread's events: a first packet clears the incremental state and sets the sequence's
 * defaults (the thread's track, so no event names it; the timestamps on clock 64, which a
 * ClockSnapshot in that packet declares incremental: each timestamp is the delta from the
 * previous one); event names, categories, debug annotation names and the repeated annotation
 * values (a launch's "details" are the same for every launch of a kernel with its grid) are
 * interned in the sequence, in the packet of the first event that uses them. An annotation value
 * is interned the second time it is seen (values that never repeat, such as a returned pointer,
 * stay inline), through a cache of bounded size. That makes about 30 bytes per call instead of
 * the 126 of writing every string and track every time (gen_trace big, 10^6 calls, 4 threads).
 *
 * Each thread's calls become properly nested begin/end slices on the thread's track; a call
 * without an EXIT is an instant. A begin event carries the debug annotations "details" (the call
 * in words, rp_describe_call), "decoded" (the DATA values, where the details do not show them
 * already) and "ret" (only when its low 32 bits, a CUresult, are not 0: CUDA_SUCCESS is what
 * every other call returned).
 * Counted calls (agent option count=) become a counter track per function under the process's
 * track (a CounterDescriptor, unit count): the process's running total of the function's calls,
 * from 0 at the start. GPU records (agent option gpu=1) go on a track per device, under the
 * process's track, with a track per stream lane under it (gpu_analysis.c: overlapping work of one
 * stream goes on further lanes); a flow goes from each call's slice (flow_ids) to each piece of
 * work it submitted (terminating_flow_ids). Descriptors, counters and GPU slices are on sequence
 * 1, with absolute MONOTONIC timestamps. A call with a stack (agent option stacks=) names it by
 * callstack_iid: the stacks of a trace are interned in each thread's sequence that uses them. */
#include "export_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pb {
	uint8_t *p;
	size_t len, cap;
	int oom;
};

static void pb_raw(struct pb *b, const void *src, size_t n)
{
	if (b->oom || !n)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pb_raw(b, tmp, n);
}

static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3 | 0);
	pb_varint(b, v);
}

static void pb_fixed64(struct pb *b, unsigned field, uint64_t v)
{
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	pb_varint(b, (uint64_t)field << 3 | 1);
	pb_raw(b, le, sizeof(le));
}

static void pb_bytes(struct pb *b, unsigned field, const void *s, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_raw(b, s, n);
}

static void pb_str(struct pb *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

static void pb_msg(struct pb *b, unsigned field, const struct pb *m)
{
	if (m->oom)
		b->oom = 1;
	pb_bytes(b, field, m->p, m->len);
}

enum {
	TRACE_PACKET = 1,
	PKT_CLOCK_SNAPSHOT = 6,
	PKT_TIMESTAMP = 8,
	PKT_SEQ_ID = 10,
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED_DATA = 12,
	PKT_SEQ_FLAGS = 13,
	PKT_TIMESTAMP_CLOCK_ID = 58,
	PKT_DEFAULTS = 59,
	PKT_TRACK_DESCRIPTOR = 60,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	SEQ_NEEDS_INCREMENTAL_STATE = 2,
	DEF_TIMESTAMP_CLOCK_ID = 58, /* TracePacketDefaults */
	DEF_TRACK_EVENT = 11,
	TED_TRACK_UUID = 11,       /* TrackEventDefaults */
	CS_CLOCKS = 1,             /* ClockSnapshot */
	CS_PRIMARY_TRACE_CLOCK = 2,
	CLK_ID = 1,                /* ClockSnapshot.Clock */
	CLK_TIMESTAMP = 2,
	CLK_INCREMENTAL = 3,
	CLOCK_REALTIME_ID = 1,     /* BuiltinClock */
	CLOCK_MONOTONIC_ID = 3,
	CLOCK_SEQ_INCREMENTAL = 64, /* a sequence-scoped clock (64..127): the thread sequences' deltas */
	TD_UUID = 1,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT = 5,
	TD_COUNTER = 8,
	CD_UNIT = 3,               /* CounterDescriptor */
	CD_UNIT_COUNT = 2,
	CD_UNIT_SIZE_BYTES = 3,
	PD_PID = 1,
	PD_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_NAME = 5,
	TE_CATEGORY_IIDS = 3,
	TE_ANNOT = 4,
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_TRACK = 11,
	TE_CATEGORY = 22,
	TE_NAME = 23,
	TE_COUNTER_VALUE = 30,
	TE_FLOW_IDS = 47,
	TE_TERMINATING_FLOW_IDS = 48,
	TE_CALLSTACK_IID = 56,
	ID_EVENT_CATEGORIES = 1,   /* InternedData */
	ID_EVENT_NAMES = 2,
	ID_ANNOTATION_NAMES = 3,
	ID_FUNCTION_NAMES = 5,
	ID_FRAMES = 6,
	ID_CALLSTACKS = 7,
	ID_BUILD_IDS = 16,
	ID_MAPPING_PATHS = 17,
	ID_SOURCE_PATHS = 18,
	ID_MAPPINGS = 19,
	ID_ANNOTATION_STRINGS = 29,
	IS_IID = 1,                /* InternedString, EventName, EventCategory, DebugAnnotationName */
	IS_STR = 2,
	MAP_IID = 1,               /* Mapping */
	MAP_BUILD_ID = 2,
	MAP_START_OFFSET = 3,
	MAP_START = 4,
	MAP_END = 5,
	MAP_PATH_STRING_IDS = 7,
	MAP_EXACT_OFFSET = 8,
	FR_IID = 1,                /* Frame */
	FR_FUNCTION_NAME_ID = 2,
	FR_MAPPING_ID = 3,
	FR_REL_PC = 4,
	FR_SOURCE_PATH_IID = 5,
	FR_LINE_NUMBER = 6,
	FR_KIND = 7,
	FR_KIND_NATIVE = 1,
	FR_KIND_INTERPRETED = 3,
	FR_KIND_JIT = 4,
	CSK_IID = 1,               /* Callstack */
	CSK_FRAME_IDS = 2,
	DA_NAME_IID = 1,           /* DebugAnnotation */
	DA_UINT = 3,
	DA_INT = 4,
	DA_STRING = 6,
	DA_NAME = 10,
	DA_STRING_IID = 17,
	SLICE_BEGIN = 1,
	SLICE_END = 2,
	INSTANT = 3,
	COUNTER = 4,
};

/* Sequence 1: clock snapshot, track descriptors, counters, GPU slices (absolute timestamps). The
 * thread sequences are 2, 3, ... */
#define SEQ_GLOBAL 1

/* The debug annotation names of a call's begin event, interned per sequence. */
enum { AN_DETAILS, AN_DECODED, AN_RET, AN_COUNT };
static const char *const annot_names[AN_COUNT] = {"details", "decoded", "ret"};

/* Annotation values seen in the current sequence: a value is interned the second time it comes
 * (direct-mapped by hash; a collision forgets the older value, which then goes inline again). */
#define VALUE_SLOTS 4096
struct value_slot {
	char *s;                   /* NULL: empty */
	size_t len;
	uint64_t hash;
	uint64_t iid;              /* 0: seen once, not interned */
};

#define MAX_CATEGORIES 32

/* The state of the thread sequence being written (reset by seq_start). */
struct seq {
	uint32_t id;
	uint64_t next_iid;         /* the last iid given, of any kind */
	uint64_t *name_iid;        /* per function id of the current trace: its EventName, 0 none */
	uint32_t nfuncs;
	const char *cat[MAX_CATEGORIES];
	uint64_t cat_iid[MAX_CATEGORIES];
	unsigned ncat;
	uint64_t annot_iid[AN_COUNT];
	struct value_slot *values; /* VALUE_SLOTS, allocated with the first value */
	uint32_t *used, nvalues;   /* the slots filled (VALUE_SLOTS), so that clearing costs what was used */
	uint64_t last_ts;          /* the incremental clock's value: the last timestamp written */
};

struct writer {
	FILE *f;
	struct pb pkt, ev, sub, idata, ient;
	char buf[1024];
	uint32_t next_seq;         /* the last sequence id given */
	int64_t anchor;            /* the first trace's base: an axis time + anchor = its MONOTONIC */
	uint64_t stack_iid0;       /* the current trace's callstack iids: stack_iid0 + index + 1 */
	struct seq *s;             /* the sequence being written: one, or a thread's when streamed */
	struct seq whole;          /* a whole read's: its threads one after the other */
};

/* A time on the common axis (rp_rel) as the output's timestamp: the first trace's
 * CLOCK_MONOTONIC (>= 0: a hostile file's times are clamped). */
static uint64_t out_ts(const struct writer *w, int64_t rel)
{
	int64_t t = rp_sat_add(rel, w->anchor);
	return t < 0 ? 0 : (uint64_t)t;
}

/* A new packet of sequence `seq` in w->pkt, with these sequence flags (0: none). */
static void pkt_begin(struct writer *w, uint32_t seq, unsigned flags)
{
	w->pkt.len = 0;
	pb_uint(&w->pkt, PKT_SEQ_ID, seq);
	if (flags)
		pb_uint(&w->pkt, PKT_SEQ_FLAGS, flags);
}

/* Writes w->pkt as one Trace.packet. */
static void pkt_end(struct writer *w)
{
	struct pb hdr = {0};
	pb_varint(&hdr, TRACE_PACKET << 3 | 2);
	pb_varint(&hdr, w->pkt.len);
	if (!hdr.oom && !w->pkt.oom) {
		fwrite(hdr.p, 1, hdr.len, w->f);
		fwrite(w->pkt.p, 1, w->pkt.len, w->f);
	}
	free(hdr.p);
}

/* A packet of sequence 1 holding `field` = m, at absolute MONOTONIC time ts (none when ts < 0). */
static void emit_global(struct writer *w, int64_t ts, unsigned field, const struct pb *m)
{
	pkt_begin(w, SEQ_GLOBAL, 0);
	if (ts >= 0) {
		pb_uint(&w->pkt, PKT_TIMESTAMP, (uint64_t)ts);
		pb_uint(&w->pkt, PKT_TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC_ID);
	}
	pb_msg(&w->pkt, field, m);
	pkt_end(w);
}

/* The first packet: MONOTONIC is the trace's clock, and where it stands against REALTIME (the
 * first trace's realtime - monotonic offset) when the trace has a realtime pair. */
static void clock_snapshot(struct writer *w, const struct rp_view *v0)
{
	struct pb snap = {0}, clk = {0};
	int64_t rt;
	uint64_t mono = out_ts(w, 0);
	pb_uint(&clk, CLK_ID, CLOCK_MONOTONIC_ID);
	pb_uint(&clk, CLK_TIMESTAMP, mono);
	pb_msg(&snap, CS_CLOCKS, &clk);
	if (rp_realtime(v0, (int64_t)mono, &rt) && rt >= 0) {
		clk.len = 0;
		pb_uint(&clk, CLK_ID, CLOCK_REALTIME_ID);
		pb_uint(&clk, CLK_TIMESTAMP, (uint64_t)rt);
		pb_msg(&snap, CS_CLOCKS, &clk);
	}
	pb_uint(&snap, CS_PRIMARY_TRACE_CLOCK, CLOCK_MONOTONIC_ID);
	emit_global(w, -1, PKT_CLOCK_SNAPSHOT, &snap);
	if (snap.oom || clk.oom)
		w->pkt.oom = 1;
	free(snap.p);
	free(clk.p);
}

static void values_clear(struct seq *s)
{
	for (uint32_t i = 0; i < s->nvalues; i++) {
		struct value_slot *v = &s->values[s->used[i]];
		free(v->s);
		v->s = NULL;
	}
	s->nvalues = 0;
}

/* Starts the sequence of one thread whose first event is at t0 (output time): clears the
 * incremental state, makes the thread's track and the incremental clock the defaults, and
 * declares that clock (64, deltas in ns from t0) against MONOTONIC. */
static void seq_start(struct writer *w, uint64_t track, uint64_t t0)
{
	struct seq *s = w->s;
	struct pb def = {0}, ted = {0}, snap = {0}, clk = {0};
	s->id = ++w->next_seq;
	s->next_iid = 0;
	memset(s->name_iid, 0, (size_t)s->nfuncs * sizeof(*s->name_iid));
	s->ncat = 0;
	memset(s->annot_iid, 0, sizeof(s->annot_iid));
	values_clear(s);
	s->last_ts = t0;
	pb_uint(&def, DEF_TIMESTAMP_CLOCK_ID, CLOCK_SEQ_INCREMENTAL);
	pb_uint(&ted, TED_TRACK_UUID, track);
	pb_msg(&def, DEF_TRACK_EVENT, &ted);
	pb_uint(&clk, CLK_ID, CLOCK_MONOTONIC_ID);
	pb_uint(&clk, CLK_TIMESTAMP, t0);
	pb_msg(&snap, CS_CLOCKS, &clk);
	clk.len = 0;
	pb_uint(&clk, CLK_ID, CLOCK_SEQ_INCREMENTAL);
	pb_uint(&clk, CLK_TIMESTAMP, t0);
	pb_uint(&clk, CLK_INCREMENTAL, 1);
	pb_msg(&snap, CS_CLOCKS, &clk);
	pkt_begin(w, s->id, SEQ_INCREMENTAL_STATE_CLEARED);
	pb_msg(&w->pkt, PKT_DEFAULTS, &def);
	pb_msg(&w->pkt, PKT_CLOCK_SNAPSHOT, &snap);
	pkt_end(w);
	if (def.oom || ted.oom || snap.oom || clk.oom)
		w->pkt.oom = 1;
	free(def.p);
	free(ted.p);
	free(snap.p);
	free(clk.p);
}

/* The timestamp of a thread sequence's packet: the delta on the incremental clock, or, for a time
 * before the previous one (only a corrupt trace has those), the absolute MONOTONIC time. */
static void seq_timestamp(struct writer *w, uint64_t ts)
{
	if (ts >= w->s->last_ts) {
		pb_uint(&w->pkt, PKT_TIMESTAMP, ts - w->s->last_ts);
		w->s->last_ts = ts;
	} else {
		pb_uint(&w->pkt, PKT_TIMESTAMP, ts);
		pb_uint(&w->pkt, PKT_TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC_ID);
	}
}

/* A new entry (iid, name) of interned table `field` in this packet's interned data. */
static uint64_t intern_new(struct writer *w, unsigned field, const char *str, size_t len)
{
	uint64_t iid = ++w->s->next_iid;
	w->ient.len = 0;
	pb_uint(&w->ient, IS_IID, iid);
	pb_bytes(&w->ient, IS_STR, str, len);
	pb_msg(&w->idata, field, &w->ient);
	return iid;
}

static uint64_t event_name_iid(struct writer *w, const struct tr_trace *t, uint32_t func)
{
	if (func >= w->s->nfuncs) /* not reached: function ids are checked by the reader */
		return 0;
	if (!w->s->name_iid[func]) {
		const char *name = tr_func_name(t, func);
		w->s->name_iid[func] = intern_new(w, ID_EVENT_NAMES, name, strlen(name));
	}
	return w->s->name_iid[func];
}

static uint64_t category_iid(struct writer *w, const char *cat)
{
	for (unsigned i = 0; i < w->s->ncat; i++)
		if (w->s->cat[i] == cat || !strcmp(w->s->cat[i], cat))
			return w->s->cat_iid[i];
	uint64_t iid = intern_new(w, ID_EVENT_CATEGORIES, cat, strlen(cat));
	if (w->s->ncat < MAX_CATEGORIES) {
		w->s->cat[w->s->ncat] = cat;
		w->s->cat_iid[w->s->ncat++] = iid;
	}
	return iid;
}

/* Starts a debug annotation of the current event in w->sub: its name, interned. */
static void annot_begin(struct writer *w, unsigned an)
{
	struct seq *s = w->s;
	if (!s->annot_iid[an])
		s->annot_iid[an] = intern_new(w, ID_ANNOTATION_NAMES, annot_names[an], strlen(annot_names[an]));
	w->sub.len = 0;
	pb_uint(&w->sub, DA_NAME_IID, s->annot_iid[an]);
}

/* A string annotation of the current event: the value interned when it was seen before in this
 * sequence (str[len] must be 0), else inline. */
static void annot_value(struct writer *w, unsigned an, const char *str, size_t len)
{
	struct seq *s = w->s;
	annot_begin(w, an);
	if (!s->values) {
		s->values = calloc(VALUE_SLOTS, sizeof(*s->values));
		s->used = malloc(VALUE_SLOTS * sizeof(*s->used));
		if (!s->values || !s->used) {
			free(s->values);
			free(s->used);
			s->values = NULL;
			s->used = NULL;
			w->pkt.oom = 1;
			return;
		}
	}
	uint64_t h = rp_str_hash(str);
	struct value_slot *v = &s->values[h & (VALUE_SLOTS - 1)];
	if (v->s && v->hash == h && v->len == len && !memcmp(v->s, str, len)) {
		if (!v->iid)
			v->iid = intern_new(w, ID_ANNOTATION_STRINGS, str, len);
		pb_uint(&w->sub, DA_STRING_IID, v->iid);
	} else {
		char *copy = malloc(len + 1);
		if (copy) { /* remembered for the next time; without memory, just not interned */
			memcpy(copy, str, len + 1);
			if (!v->s)
				s->used[s->nvalues++] = (uint32_t)(v - s->values);
			free(v->s);
			v->s = copy;
			v->len = len;
			v->hash = h;
			v->iid = 0;
		}
		pb_bytes(&w->sub, DA_STRING, str, len);
	}
	pb_msg(&w->ev, TE_ANNOT, &w->sub);
}

static uint64_t process_uuid(unsigned k, uint32_t pid)
{
	return 0x1000000000000000ull | (uint64_t)k << 33 | pid;
}

static uint64_t thread_uuid(unsigned k, uint32_t tid)
{
	return 0x2000000000000000ull | (uint64_t)k << 33 | tid;
}

/* One event of a thread's call on the thread's sequence (its track is the sequence's default). ci:
 * its index in calls[] (flows, stack), TR_NONE for a streamed call. annots: the call's debug
 * annotations go with this event (a begin or an instant; when streamed, the end of a call whose
 * begin was written before it finished: trace_processor merges an end's into its slice). */
static void event(struct writer *w, const struct rp_view *v, unsigned k, const struct tr_call *c, uint32_t ci,
                  int type, int64_t rel, int annots)
{
	const struct tr_trace *t = v->t;
	struct pb *ev = &w->ev;
	ev->len = 0;
	w->idata.len = 0;
	pb_uint(ev, TE_TYPE, (uint64_t)type);
	if (type != SLICE_END) {
		pb_uint(ev, TE_CATEGORY_IIDS, category_iid(w, rp_call_category(v, c->func)));
		pb_uint(ev, TE_NAME_IID, event_name_iid(w, t, c->func));
	}
	if (annots) {
		size_t l = rp_describe_call(v, c, w->buf, sizeof(w->buf));
		if (l)
			annot_value(w, AN_DETAILS, w->buf, l);
		/* the DATA values, unless the details show them already (a plain call's are its
		 * details; an allocation's returned pointer is in them) */
		const struct rp_finfo *fi = &v->fi[c->func];
		if (fi->ioctl || (fi->kind != RP_KIND_PLAIN && fi->kind != RP_KIND_ALLOC)) {
			l = tr_call_format_data(t, c, w->buf, sizeof(w->buf));
			if (l)
				annot_value(w, AN_DECODED, w->buf, l);
		}
		if (tr_call_timed(c) && (uint32_t)c->ret) { /* a CUresult is rax's low half */
			annot_begin(w, AN_RET);
			pb_uint(&w->sub, DA_UINT, c->ret);
			pb_msg(ev, TE_ANNOT, &w->sub);
		}
	}
	if (type != SLICE_END && ci != TR_NONE) {
		/* flows to the GPU work it submitted */
		uint32_t nfl;
		const uint32_t *fl = rp_gpu_call_flows(v, ci, &nfl);
		for (uint32_t i = 0; i < nfl; i++)
			pb_fixed64(ev, TE_FLOW_IDS, rp_gpu_flow_id(k, fl[i]));
		/* its stack: the callstack interned for this trace (interned_stacks) */
		if (rp_call_frames(v, ci))
			pb_uint(ev, TE_CALLSTACK_IID, w->stack_iid0 + t->call_stack_[ci] + 1);
	}
	pkt_begin(w, w->s->id, SEQ_NEEDS_INCREMENTAL_STATE);
	seq_timestamp(w, out_ts(w, rel));
	if (w->idata.len)
		pb_msg(&w->pkt, PKT_INTERNED_DATA, &w->idata);
	pb_msg(&w->pkt, PKT_TRACK_EVENT, ev);
	pkt_end(w);
}

static void process_descriptor(struct writer *w, const struct rp_view *v, unsigned k)
{
	const struct tr_trace *t = v->t;
	const char *pname = t->argc && t->argv[0][0] ? t->argv[0] : t->exe;
	struct pb *d = &w->ev, *p = &w->sub;
	d->len = p->len = 0;
	pb_uint(p, PD_PID, t->pid);
	pb_str(p, PD_NAME, pname);
	pb_uint(d, TD_UUID, process_uuid(k, t->pid));
	pb_msg(d, TD_PROCESS, p);
	emit_global(w, -1, PKT_TRACK_DESCRIPTOR, d);
}

static void thread_descriptor(struct writer *w, const struct rp_view *v, unsigned k, uint32_t i)
{
	const struct tr_trace *t = v->t;
	const struct tr_thread *th = &t->threads[i];
	struct pb *d = &w->ev, *p = &w->sub;
	d->len = p->len = 0;
	pb_uint(p, THD_PID, t->pid);
	pb_uint(p, THD_TID, th->tid);
	if (th->name[0])
		pb_str(p, THD_NAME, th->name);
	pb_uint(d, TD_UUID, thread_uuid(k, th->tid));
	pb_uint(d, TD_PARENT, process_uuid(k, t->pid));
	pb_msg(d, TD_THREAD, p);
	emit_global(w, -1, PKT_TRACK_DESCRIPTOR, d);
}

static void descriptors(struct writer *w, const struct rp_view *v, unsigned k)
{
	process_descriptor(w, v, k);
	for (uint32_t i = 0; i < v->t->nthreads; i++)
		thread_descriptor(w, v, k, i);
}

static int interned_stacks(struct writer *w, const struct rp_view *v);

struct slice_ctx {
	struct writer *w;
	struct rp_view *v;
	unsigned k;
	uint32_t thread;
	int stacked;               /* the thread has a selected call with a stack */
	int started, failed;
};

static void slice_event(void *ctx, uint32_t call, enum rp_slice_event what, int64_t ns)
{
	struct slice_ctx *x = ctx;
	const struct tr_trace *t = x->v->t;
	int64_t rel = rp_rel(x->v, ns);
	if (!x->started) { /* the thread's sequence starts with its first event */
		x->started = 1;
		seq_start(x->w, thread_uuid(x->k, t->threads[x->thread].tid), out_ts(x->w, rel));
		if (x->stacked && interned_stacks(x->w, x->v))
			x->failed = 1;
	}
	event(x->w, x->v, x->k, &t->calls[call], call,
	      what == RP_SLICE_BEGIN ? SLICE_BEGIN : what == RP_SLICE_END ? SLICE_END : INSTANT, rel, what != RP_SLICE_END);
}

/* One thread's selected calls as nested slices (rp_thread_slices) on a sequence of its own; no
 * sequence for a thread without a selected call. */
static int thread_slices(struct writer *w, struct rp_view *v, unsigned k, uint32_t thread, const uint8_t *selected)
{
	struct slice_ctx x = {.w = w, .v = v, .k = k, .thread = thread};
	uint32_t n;
	const uint32_t *calls = tr_thread_calls(v->t, thread, &n);
	for (uint32_t i = 0; i < n && v->stacks && !x.stacked; i++)
		x.stacked = selected[calls[i]] && rp_call_frames(v, calls[i]);
	return rp_thread_slices(v, thread, selected, slice_event, &x) || x.failed ? -1 : 0;
}

static uint64_t counter_uuid(unsigned k, uint32_t func)
{
	return 0x3000000000000000ull | (uint64_t)(k & 0xffffff) << 32 | func;
}

static void counter_value(struct writer *w, uint64_t track, int64_t rel, uint64_t value)
{
	struct pb *ev = &w->ev;
	ev->len = 0;
	pb_uint(ev, TE_TYPE, COUNTER);
	pb_uint(ev, TE_TRACK, track);
	pb_uint(ev, TE_COUNTER_VALUE, value > INT64_MAX ? INT64_MAX : value);
	emit_global(w, (int64_t)out_ts(w, rel), PKT_TRACK_EVENT, ev);
}

struct counter_ctx {
	struct writer *w;
	const struct rp_view *v;
	unsigned k;
	struct pb cd;              /* the CounterDescriptor of every counted-calls track */
	uint32_t func;             /* the track described last */
	int described;
};

static void counted_point(void *ctx, uint32_t func, int64_t rel, uint64_t total)
{
	struct counter_ctx *x = ctx;
	struct writer *w = x->w;
	const struct tr_trace *t = x->v->t;
	uint64_t track = counter_uuid(x->k, func);
	if (!x->described || x->func != func) {
		struct pb *d = &w->ev;
		d->len = 0;
		snprintf(w->buf, sizeof(w->buf), "%s (counted)", tr_func_name(t, func));
		pb_uint(d, TD_UUID, track);
		pb_str(d, TD_NAME, w->buf);
		pb_uint(d, TD_PARENT, process_uuid(x->k, t->pid));
		pb_msg(d, TD_COUNTER, &x->cd);
		emit_global(w, -1, PKT_TRACK_DESCRIPTOR, d);
		x->described = 1;
		x->func = func;
	}
	counter_value(w, track, rel, total);
}

/* The counted calls the options select, a counter track per function under the process's track:
 * the process's running total (rp_counted_series). */
static int counter_tracks(struct writer *w, struct rp_view *v, unsigned k)
{
	struct counter_ctx x = {.w = w, .v = v, .k = k};
	pb_uint(&x.cd, CD_UNIT, CD_UNIT_COUNT);
	int rc = rp_counted_series(v, counted_point, &x) || x.cd.oom ? -1 : 0;
	free(x.cd.p);
	return rc;
}


/* Device + physical memory in use (memory.c) as a counter track in bytes under the process's
 * track: a point at the trace's start and at each change, on a sequence of their own. */
static int memory_track(struct writer *w, const struct rp_view *v, unsigned k)
{
	const struct rp_memory *m = v->memory;
	if (!m)
		return 0;
	struct pb cd = {0}, *d = &w->ev;
	const uint64_t track = counter_uuid(k, UINT32_MAX); /* no function has that id */
	pb_uint(&cd, CD_UNIT, CD_UNIT_SIZE_BYTES);
	d->len = 0;
	pb_uint(d, TD_UUID, track);
	pb_str(d, TD_NAME, "device memory in use (allocations traced)");
	pb_uint(d, TD_PARENT, process_uuid(k, v->t->pid));
	pb_msg(d, TD_COUNTER, &cd);
	emit_global(w, -1, PKT_TRACK_DESCRIPTOR, d);
	/* the points on a sequence of their own, as a thread's events: the track by default and
	 * timestamps as deltas (an allocation-heavy program has many) */
	seq_start(w, track, out_ts(w, v->shift));
	for (uint32_t i = 0; i <= m->nsteps; i++) {
		struct pb *ev = &w->ev;
		uint64_t bytes = i ? m->steps[i - 1].bytes : 0;
		ev->len = 0;
		pb_uint(ev, TE_TYPE, COUNTER);
		pb_uint(ev, TE_COUNTER_VALUE, bytes > INT64_MAX ? INT64_MAX : bytes);
		pkt_begin(w, w->s->id, SEQ_NEEDS_INCREMENTAL_STATE);
		seq_timestamp(w, out_ts(w, v->shift + (i ? m->steps[i - 1].at : 0)));
		pb_msg(&w->pkt, PKT_TRACK_EVENT, ev);
		pkt_end(w);
	}
	int oom = cd.oom;
	free(cd.p);
	return oom ? -1 : 0;
}

/* ---- call stacks -------------------------------------------------------------------------------- */

/* Strings interned for one trace: text -> iid, by field (function names, paths...). */
struct strtab {
	const char **s;
	uint64_t *iid;
	uint32_t n, cap;
};

/* The iid of s in tab, a new one (and its InternedString in `out`, field `field`) the first time;
 * 0 when out of memory. */
static uint64_t intern_str(struct writer *w, struct strtab *tab, struct pb *out, unsigned field, const char *s,
                           size_t len)
{
	if ((tab->n + 1) * 2 > tab->cap) {
		uint32_t ncap = tab->cap ? tab->cap * 2 : 256;
		const char **ns = calloc(ncap, sizeof(*ns));
		uint64_t *ni = calloc(ncap, sizeof(*ni));
		if (!ns || !ni) {
			free(ns);
			free(ni);
			return 0;
		}
		for (uint32_t i = 0; i < tab->cap; i++) {
			if (!tab->s[i])
				continue;
			uint32_t h = (uint32_t)rp_str_hash(tab->s[i]) & (ncap - 1);
			while (ns[h])
				h = (h + 1) & (ncap - 1);
			ns[h] = tab->s[i];
			ni[h] = tab->iid[i];
		}
		free(tab->s);
		free(tab->iid);
		tab->s = ns;
		tab->iid = ni;
		tab->cap = ncap;
	}
	uint32_t h = (uint32_t)rp_str_hash(s) & (tab->cap - 1);
	while (tab->s[h] && strcmp(tab->s[h], s))
		h = (h + 1) & (tab->cap - 1);
	if (tab->s[h])
		return tab->iid[h];
	tab->s[h] = s;
	tab->iid[h] = ++w->s->next_iid;
	tab->n++;
	struct pb is = {0};
	pb_uint(&is, IS_IID, tab->iid[h]);
	pb_bytes(&is, IS_STR, s, len);
	pb_msg(out, field, &is);
	free(is.p);
	return tab->iid[h];
}

static void strtab_free(struct strtab *tab)
{
	free(tab->s);
	free(tab->iid);
}

/* Every stack of the trace as interned data, in one packet before the events that refer to
 * them: function names, source and mapping paths, build ids, mappings, frames (Frame: the
 * function name is the frame's label, with its source file and line where known) and callstacks
 * (outermost frame first). A call's slice names its stack by callstack_iid. */
static int interned_stacks(struct writer *w, const struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	const struct rp_stacks *s = v->stacks;
	struct strtab names = {0}, paths = {0}, sources = {0};
	struct pb d = {0}, m = {0};
	uint64_t *map_iid = calloc((size_t)t->nmaps + 1, sizeof(*map_iid));
	uint64_t frame_iid0 = w->s->next_iid;
	int rc = -1;
	if (!map_iid)
		goto done;
	w->s->next_iid += s->nframes;
	for (uint32_t i = 0; i < s->nframes; i++) {
		const struct rp_frame *fr = &s->frames[i];
		uint64_t mapping = 0;
		if (fr->map != TR_NONE && fr->kind == RP_FRAME_NATIVE) {
			const struct tr_map *mp = &t->maps[fr->map];
			if (!map_iid[fr->map]) {
				uint64_t path = intern_str(w, &paths, &d, ID_MAPPING_PATHS, mp->path, strlen(mp->path)), build = 0;
				if (mp->build_id_len) { /* the raw bytes, one per mapping (not shared: few) */
					struct pb is = {0};
					build = ++w->s->next_iid;
					pb_uint(&is, IS_IID, build);
					pb_bytes(&is, IS_STR, mp->build_id, mp->build_id_len);
					pb_msg(&d, ID_BUILD_IDS, &is);
					free(is.p);
				}
				map_iid[fr->map] = ++w->s->next_iid;
				m.len = 0;
				pb_uint(&m, MAP_IID, map_iid[fr->map]);
				if (build)
					pb_uint(&m, MAP_BUILD_ID, build);
				pb_uint(&m, MAP_EXACT_OFFSET, mp->offset);
				pb_uint(&m, MAP_START_OFFSET, 0);
				pb_uint(&m, MAP_START, mp->start);
				pb_uint(&m, MAP_END, mp->end);
				pb_uint(&m, MAP_PATH_STRING_IDS, path);
				pb_msg(&d, ID_MAPPINGS, &m);
			}
			mapping = map_iid[fr->map];
		}
		uint64_t name = intern_str(w, &names, &d, ID_FUNCTION_NAMES, fr->label, strlen(fr->label));
		uint64_t src = fr->file ? intern_str(w, &sources, &d, ID_SOURCE_PATHS, fr->file, strlen(fr->file)) : 0;
		if (!name || (fr->file && !src))
			goto done;
		m.len = 0;
		pb_uint(&m, FR_IID, frame_iid0 + i + 1);
		pb_uint(&m, FR_FUNCTION_NAME_ID, name);
		if (mapping) {
			pb_uint(&m, FR_MAPPING_ID, mapping);
			pb_uint(&m, FR_REL_PC, fr->pc - t->maps[fr->map].start);
		}
		if (src) {
			pb_uint(&m, FR_SOURCE_PATH_IID, src);
			pb_uint(&m, FR_LINE_NUMBER, (uint64_t)fr->line);
		}
		pb_uint(&m, FR_KIND, fr->kind == RP_FRAME_PYTHON ? FR_KIND_INTERPRETED
		                     : fr->kind == RP_FRAME_ANON ? FR_KIND_JIT : FR_KIND_NATIVE);
		pb_msg(&d, ID_FRAMES, &m);
	}
	w->stack_iid0 = w->s->next_iid;
	w->s->next_iid += t->nstacks;
	for (uint32_t i = 0; i < t->nstacks; i++) {
		const struct rp_stack_frames *sf = &s->stacks[i];
		m.len = 0;
		pb_uint(&m, CSK_IID, w->stack_iid0 + i + 1);
		for (uint32_t k = 0; k < sf->n; k++)
			pb_uint(&m, CSK_FRAME_IDS, frame_iid0 + sf->first + k + 1);
		pb_msg(&d, ID_CALLSTACKS, &m);
	}
	pkt_begin(w, w->s->id, SEQ_NEEDS_INCREMENTAL_STATE);
	pb_msg(&w->pkt, PKT_INTERNED_DATA, &d);
	pkt_end(w);
	rc = d.oom || m.oom ? -1 : 0;
done:
	free(map_iid);
	free(d.p);
	free(m.p);
	strtab_free(&names);
	strtab_free(&paths);
	strtab_free(&sources);
	return rc;
}

/* ---- GPU tracks -------------------------------------------------------------------------------- */

static uint64_t device_uuid(unsigned k, uint32_t device)
{
	return 0x4000000000000000ull | (uint64_t)(k & 0xffffff) << 32 | device;
}

static uint64_t lane_uuid(unsigned k, uint32_t stream_index, uint32_t lane)
{
	return 0x5000000000000000ull | (uint64_t)(k & 0xff) << 48 | (uint64_t)(stream_index & 0xffffffff) << 8 |
	       (lane & 0xff);
}

static void annot_str(struct writer *w, const char *name, const char *s, size_t n)
{
	w->sub.len = 0;
	pb_str(&w->sub, DA_NAME, name);
	pb_bytes(&w->sub, DA_STRING, s, n);
	pb_msg(&w->ev, TE_ANNOT, &w->sub);
}

static void annot_uint(struct writer *w, const char *name, uint64_t value)
{
	w->sub.len = 0;
	pb_str(&w->sub, DA_NAME, name);
	pb_uint(&w->sub, DA_UINT, value);
	pb_msg(&w->ev, TE_ANNOT, &w->sub);
}

static void gpu_slice(struct writer *w, const struct rp_view *v, unsigned k, uint64_t track, uint32_t wi, int64_t start,
                      int64_t end, int flow)
{
	const struct tr_trace *t = v->t;
	const struct tr_gpu_work *g = &t->gpu_work[wi];
	struct pb *ev = &w->ev;
	ev->len = 0;
	pb_uint(ev, TE_TYPE, SLICE_BEGIN);
	pb_uint(ev, TE_TRACK, track);
	pb_str(ev, TE_CATEGORY, rp_gpu_kind_names[g->kind]);
	pb_str(ev, TE_NAME, rp_gpu_work_label(v, g));
	size_t l = rp_gpu_describe(v, g, w->buf, sizeof(w->buf));
	annot_str(w, "details", w->buf, l);
	annot_uint(w, "correlation", g->correlation);
	annot_str(w, "link", rp_gpu_link_keys[g->link], strlen(rp_gpu_link_keys[g->link]));
	if (g->api != TR_NONE) {
		w->sub.len = 0;
		pb_str(&w->sub, DA_NAME, "latency_ns");
		pb_uint(&w->sub, DA_INT, (uint64_t)(g->start_ns - t->gpu_api[g->api].start_ns));
		pb_msg(ev, TE_ANNOT, &w->sub);
	}
	if (flow)
		pb_fixed64(ev, TE_TERMINATING_FLOW_IDS, rp_gpu_flow_id(k, wi));
	emit_global(w, (int64_t)out_ts(w, start), PKT_TRACK_EVENT, ev);
	ev->len = 0;
	pb_uint(ev, TE_TYPE, SLICE_END);
	pb_uint(ev, TE_TRACK, track);
	emit_global(w, (int64_t)out_ts(w, end), PKT_TRACK_EVENT, ev);
}

static void gpu_descriptor(struct writer *w, uint64_t uuid, uint64_t parent, const char *name)
{
	struct pb *d = &w->ev;
	d->len = 0;
	pb_uint(d, TD_UUID, uuid);
	pb_str(d, TD_NAME, name);
	pb_uint(d, TD_PARENT, parent);
	emit_global(w, -1, PKT_TRACK_DESCRIPTOR, d);
}

/* A track per device under the process, a track per stream lane under it, a slice per piece of
 * work; the work that ends a flow terminates it. */
static int gpu_tracks(struct writer *w, struct rp_view *v, unsigned k)
{
	const struct tr_trace *t = v->t;
	const struct rp_gpu *g = v->gpu;
	struct rp_gpu_slice *sl = rp_gpu_slices(v);
	if (!sl)
		return -1;
	for (uint32_t d = 0; d < g->ndevices; d++) {
		snprintf(w->buf, sizeof(w->buf), "GPU %u", g->devices[d].device);
		gpu_descriptor(w, device_uuid(k, g->devices[d].device), process_uuid(k, t->pid), w->buf);
	}
	for (uint32_t i = 0; i < g->nsel; i++) {
		const struct rp_gpu_slice *s = &sl[i];
		const struct tr_gpu_work *x = &t->gpu_work[s->work];
		uint64_t track = lane_uuid(k, s->stream_index, s->lane);
		if (s->new_track) {
			snprintf(w->buf, sizeof(w->buf), "stream %u%s", x->stream, s->lane ? " (overlapping)" : "");
			gpu_descriptor(w, track, device_uuid(k, x->device), w->buf);
		}
		gpu_slice(w, v, k, track, s->work, s->start, s->end, s->flow);
	}
	free(sl);
	return 0;
}

int rp_write_perfetto(FILE *f, struct rp_view *views, unsigned n)
{
	struct writer w;
	memset(&w, 0, sizeof(w));
	w.f = f;
	w.next_seq = SEQ_GLOBAL;
	w.s = &w.whole;
	w.anchor = n ? views[0].base : 0;
	int rc = 0;
	if (n)
		clock_snapshot(&w, &views[0]);
	for (unsigned k = 0; k < n && !rc; k++) {
		struct rp_view *v = &views[k];
		descriptors(&w, v, k);
		uint8_t *selected = calloc((size_t)v->t->ncalls + 1, 1);
		free(w.s->name_iid);
		w.s->nfuncs = v->t->nfuncs;
		w.s->name_iid = calloc((size_t)w.s->nfuncs + 1, sizeof(*w.s->name_iid));
		if (!selected || !w.s->name_iid) {
			free(selected);
			rc = -1;
			break;
		}
		for (uint32_t i = 0; i < v->nxsel; i++)
			selected[v->xsel[i]] = 1;
		for (uint32_t th = 0; th < v->t->nthreads && !rc; th++)
			rc = thread_slices(&w, v, k, th, selected);
		free(selected);
		if (!rc)
			rc = counter_tracks(&w, v, k);
		if (!rc)
			rc = memory_track(&w, v, k);
		if (!rc && v->gpu)
			rc = gpu_tracks(&w, v, k);
	}
	int oom = w.pkt.oom || w.ev.oom || w.sub.oom || w.idata.oom || w.ient.oom;
	values_clear(w.s);
	free(w.s->values);
	free(w.s->used);
	free(w.s->name_iid);
	free(w.pkt.p);
	free(w.ev.p);
	free(w.sub.p);
	free(w.idata.p);
	free(w.ient.p);
	return rc || oom || ferror(f) ? -1 : 0;
}

/* ---- streamed (export_stream.h) ------------------------------------------------------------- */

/* Each thread's calls still on a sequence of their own, now written as they finish, so every
 * thread's sequence state (interning, clock) is kept at once; the threads' slices nested as a
 * whole read writes them (rp_sx_slices_call). Descriptors of the threads known from the metadata
 * first, of a thread that comes later at its first event; the counted calls once the file is
 * read. Memory in use (a counter track from every allocation and free), GPU tracks and stacks are
 * left out. */
struct perfetto_sx {
	struct writer w;
	struct rp_sx_slices sl;
	struct seq **seqs;         /* per thread index of the current file; NULL: no event yet */
	uint8_t *described;        /* per thread index: its descriptor is written */
	uint32_t nth;
	const struct rp_view *v;
	unsigned k;
	int allocs;                /* an allocation or a free was written: the memory track is left out */
	int failed;
};

static void seq_free(struct seq *s)
{
	if (!s)
		return;
	values_clear(s);
	free(s->values);
	free(s->used);
	free(s->name_iid);
	free(s);
}

static void pf_sx_drop_threads(struct perfetto_sx *p)
{
	for (uint32_t i = 0; i < p->nth; i++)
		seq_free(p->seqs[i]);
	free(p->seqs);
	free(p->described);
	p->seqs = NULL;
	p->described = NULL;
	p->nth = 0;
}

static int pf_sx_threads(struct perfetto_sx *p, uint32_t n)
{
	if (n <= p->nth)
		return 0;
	struct seq **s = realloc(p->seqs, (size_t)n * sizeof(*s));
	if (!s)
		return -1;
	p->seqs = s;
	uint8_t *d = realloc(p->described, n);
	if (!d)
		return -1;
	p->described = d;
	memset(p->seqs + p->nth, 0, (size_t)(n - p->nth) * sizeof(*s));
	memset(p->described + p->nth, 0, n - p->nth);
	p->nth = n;
	return 0;
}

static void pf_sx_describe(struct perfetto_sx *p, uint32_t thread)
{
	if (!p->described[thread]) {
		thread_descriptor(&p->w, p->v, p->k, thread);
		p->described[thread] = 1;
	}
}

static int pf_sx_begin(struct rp_sx *x, const struct rp_view *v, unsigned k)
{
	struct perfetto_sx *p = x->state;
	p->w.f = x->f;
	if (!k) {
		p->w.anchor = v->base;
		clock_snapshot(&p->w, v);
	}
	pf_sx_drop_threads(p);
	rp_sx_slices_free(&p->sl);
	p->v = v;
	p->k = k;
	process_descriptor(&p->w, v, k);
	if (pf_sx_threads(p, v->t->nthreads))
		return -1;
	for (uint32_t i = 0; i < v->t->nthreads; i++)
		pf_sx_describe(p, i);
	return 0;
}

static void pf_sx_event(void *ctx, const struct tr_call *c, enum rp_slice_event what, int64_t ns, int early)
{
	struct perfetto_sx *p = ctx;
	struct writer *w = &p->w;
	const struct tr_trace *t = p->v->t;
	int64_t rel = rp_rel(p->v, ns);
	if (p->failed || pf_sx_threads(p, c->thread + 1)) {
		p->failed = 1;
		return;
	}
	struct seq *s = p->seqs[c->thread];
	if (!s) { /* the thread's sequence starts with its first event */
		s = calloc(1, sizeof(*s));
		if (s) {
			s->nfuncs = t->nfuncs;
			s->name_iid = calloc((size_t)s->nfuncs + 1, sizeof(*s->name_iid));
		}
		if (!s || !s->name_iid) {
			free(s);
			p->failed = 1;
			return;
		}
		p->seqs[c->thread] = s;
		pf_sx_describe(p, c->thread);
		w->s = s;
		seq_start(w, thread_uuid(p->k, t->threads[c->thread].tid), out_ts(w, rel));
	}
	w->s = s;
	uint8_t kind = p->v->fi[c->func].kind;
	p->allocs |= kind == RP_KIND_ALLOC || kind == RP_KIND_RELEASE;
	event(w, p->v, p->k, c, TR_NONE, what == RP_SLICE_BEGIN ? SLICE_BEGIN : what == RP_SLICE_END ? SLICE_END : INSTANT,
	      rel, early ? what == RP_SLICE_END : what != RP_SLICE_END);
}

static int pf_sx_call(struct rp_sx *x, const struct rp_view *v, unsigned k, const struct tr_call *c,
                      const struct tr_stream_info *info)
{
	struct perfetto_sx *p = x->state;
	return rp_sx_slices_call(&p->sl, v, c, info, pf_sx_event, p) || p->failed ? -1 : 0;
}

static int pf_sx_end(struct rp_sx *x, const struct rp_view *v, unsigned k)
{
	struct perfetto_sx *p = x->state;
	p->v = v;
	if (pf_sx_threads(p, v->t->nthreads))
		return -1;
	for (uint32_t i = 0; i < v->t->nthreads; i++)
		pf_sx_describe(p, i);
	if (p->allocs)
		fprintf(stderr, "cuhook report: warning: %s: the device memory counter track needs every call: left out "
		        "when streaming (--no-stream gives it)\n", rp_safe(v->t->path));
	p->allocs = 0;
	return counter_tracks(&p->w, (struct rp_view *)v, k);
}

static int pf_sx_finish(struct rp_sx *x, const struct rp_view *v0)
{
	struct perfetto_sx *p = x->state;
	struct writer *w = &p->w;
	int oom = w->pkt.oom || w->ev.oom || w->sub.oom || w->idata.oom || w->ient.oom;
	return oom || ferror(x->f) ? -1 : 0;
}

static void pf_sx_free(struct rp_sx *x)
{
	struct perfetto_sx *p = x->state;
	if (!p)
		return;
	pf_sx_drop_threads(p);
	rp_sx_slices_free(&p->sl);
	free(p->w.pkt.p);
	free(p->w.ev.p);
	free(p->w.sub.p);
	free(p->w.idata.p);
	free(p->w.ient.p);
	free(p);
}

int rp_sx_perfetto(struct rp_sx *x)
{
	struct perfetto_sx *p = calloc(1, sizeof(*p));
	x->state = p;
	x->file_begin = pf_sx_begin;
	x->call = pf_sx_call;
	x->file_end = pf_sx_end;
	x->finish = pf_sx_finish;
	x->free = pf_sx_free;
	if (!p)
		return -1;
	p->w.next_seq = SEQ_GLOBAL;
	return 0;
}
