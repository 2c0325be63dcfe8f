/* torch.save files (.pt) as SGLang writes them: its expert-distribution
 * recorder dumps and its expert maps, read without Python.
 *
 * torch.save (torch/serialization.py, _save, the zip format since torch
 * 1.6) writes a zip archive (stored, not compressed) holding
 * ARCHIVE/data.pkl, a pickle (protocol 2) of the object whose tensors are
 * persistent ids ('storage', torch.XStorage, key, location, numel), and
 * ARCHIVE/data/KEY, each storage's raw little-endian elements. A tensor is
 * torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
 * requires_grad, OrderedDict()). This reader takes exactly that: the
 * pickle opcodes of dicts, lists, tuples, ints, floats, strings, None and
 * booleans, the globals _rebuild_tensor_v2, collections.OrderedDict and the
 * integer and float storage classes; anything else (another class, a
 * compressed or encrypted member, a big-endian archive) is refused with
 * the reason.
 *
 * SGLang (sgl-project/sglang at 02295fe5ac5c,
 * python/sglang/srt/eplb/expert_distribution.py): _StatAccumulator.dump
 * saves {"rank", "logical_count": int32 [buffer][num_hidden_layers][experts],
 * "average_utilization_rate_over_window"}; _DetailAccumulator.dump saves
 * {"records", "last_physical_to_logical_map"}; expert_location.py
 * compute_initial_expert_location_metadata torch.loads a ".pt"
 * --init-expert-location holding "physical_to_logical_map".
 *
 * Memory: every member must be stored (a compressed one is refused, as
 * torch.save never writes one) and no larger than the file, itself at
 * most MP_MAX_INPUT_BYTES; the pickle is read whole (at most
 * LD_TORCH_MAX_PICKLE bytes), its objects and memo bounded by its length;
 * a tensor's shape must fit its storage member, so what is allocated
 * from a shape is bounded by the file's size; a storage is streamed one
 * layer row at a time, so a dump's buffer of windows is summed without
 * holding it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zip.h>

#include "loader-internal.h"

#define LD_TORCH_MAX_PICKLE (64u * 1024u * 1024u)
#define PK_MAX_OBJECTS 4000000u
#define PK_MAX_DIMS 4u

enum pk_kind {
	PK_NONE = 0, PK_BOOL, PK_INT, PK_FLOAT, PK_STR, PK_TUPLE, PK_LIST, PK_DICT,
	PK_GLOBAL, PK_STORAGE, PK_TENSOR, PK_MARK,
};

enum pk_global {
	PKG_REBUILD_TENSOR = 0, PKG_ORDERED_DICT, PKG_STORAGE,
};

struct pk_obj {
	enum pk_kind kind;
	int64_t i;                  /* INT, BOOL; GLOBAL: enum pk_global */
	double f;
	char *s;                    /* STR; STORAGE: its key */
	struct pk_obj **items;      /* TUPLE, LIST; DICT: key, value, key, value... */
	size_t n;
	size_t cap;
	/* STORAGE (and a GLOBAL naming a storage class) */
	unsigned elem_size;
	bool is_float;
	bool is_signed;
	const char *dtype;
	uint64_t numel;
	/* TENSOR */
	struct pk_obj *storage;
	uint64_t offset;
	uint32_t ndim;
	uint64_t shape[PK_MAX_DIMS];
	uint64_t stride[PK_MAX_DIMS];
	struct pk_obj *next;        /* every object, for freeing */
};

struct pk {
	const unsigned char *p;
	const unsigned char *start;
	const unsigned char *end;
	struct pk_obj **stack;
	size_t sp;
	size_t scap;
	struct pk_obj **memo;
	size_t memo_cap;
	size_t memo_len;
	struct pk_obj *all;
	size_t count;
	bool nomem;
	char err[320];
};

static const struct {
	const char *name;
	unsigned size;
	bool is_float;
	bool is_signed;
	const char *dtype;
} storages[] = {
	{"IntStorage", 4, false, true, "int32"},
	{"LongStorage", 8, false, true, "int64"},
	{"ShortStorage", 2, false, true, "int16"},
	{"CharStorage", 1, false, true, "int8"},
	{"ByteStorage", 1, false, false, "uint8"},
	{"BoolStorage", 1, false, false, "bool"},
	{"FloatStorage", 4, true, true, "float32"},
	{"DoubleStorage", 8, true, true, "float64"},
};

static void pk_fail(struct pk *pk, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pk_fail(struct pk *pk, const char *fmt, ...)
{
	if (pk->err[0]) {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pk->err, sizeof(pk->err), fmt, ap);
	va_end(ap);
}

static struct pk_obj *pk_new(struct pk *pk, enum pk_kind kind)
{
	if (pk->count >= PK_MAX_OBJECTS) {
		pk_fail(pk, "more than %u objects in the pickle", PK_MAX_OBJECTS);
		return NULL;
	}
	struct pk_obj *o = calloc(1, sizeof(*o));
	if (!o) {
		pk->nomem = true;
		pk_fail(pk, "out of memory");
		return NULL;
	}
	o->kind = kind;
	o->next = pk->all;
	pk->all = o;
	pk->count++;
	return o;
}

static void pk_free(struct pk *pk)
{
	for (struct pk_obj *o = pk->all, *n; o; o = n) {
		n = o->next;
		free(o->s);
		free(o->items);
		free(o);
	}
	free(pk->stack);
	free(pk->memo);
}

static bool pk_add(struct pk *pk, struct pk_obj *c, struct pk_obj *item)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 8;
		struct pk_obj **v = realloc(c->items, cap * sizeof(*v));
		if (!v) {
			pk->nomem = true;
			pk_fail(pk, "out of memory");
			return false;
		}
		c->items = v;
		c->cap = cap;
	}
	c->items[c->n++] = item;
	return true;
}

static bool pk_push(struct pk *pk, struct pk_obj *o)
{
	if (!o) {
		return false;
	}
	if (pk->sp == pk->scap) {
		size_t cap = pk->scap ? 2 * pk->scap : 64;
		struct pk_obj **v = realloc(pk->stack, cap * sizeof(*v));
		if (!v) {
			pk->nomem = true;
			pk_fail(pk, "out of memory");
			return false;
		}
		pk->stack = v;
		pk->scap = cap;
	}
	pk->stack[pk->sp++] = o;
	return true;
}

static struct pk_obj *pk_pop(struct pk *pk)
{
	if (pk->sp == 0 || pk->stack[pk->sp - 1]->kind == PK_MARK) {
		pk_fail(pk, "pickle stack underflow at byte %td", pk->p - pk->start);
		return NULL;
	}
	return pk->stack[--pk->sp];
}

static struct pk_obj *pk_top(struct pk *pk)
{
	if (pk->sp == 0 || pk->stack[pk->sp - 1]->kind == PK_MARK) {
		pk_fail(pk, "pickle stack underflow at byte %td", pk->p - pk->start);
		return NULL;
	}
	return pk->stack[pk->sp - 1];
}

/* Index of the topmost MARK, or SIZE_MAX after failing. */
static size_t pk_mark(struct pk *pk)
{
	for (size_t i = pk->sp; i > 0; i--) {
		if (pk->stack[i - 1]->kind == PK_MARK) {
			return i - 1;
		}
	}
	pk_fail(pk, "pickle MARK missing at byte %td", pk->p - pk->start);
	return SIZE_MAX;
}

static bool pk_need(struct pk *pk, size_t n)
{
	if ((size_t)(pk->end - pk->p) < n) {
		pk_fail(pk, "the pickle ends inside an opcode at byte %td", pk->p - pk->start);
		return false;
	}
	return true;
}

static uint64_t pk_le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++) {
		v |= (uint64_t)p[i] << (8 * i);
	}
	return v;
}

static struct pk_obj *pk_int(struct pk *pk, int64_t v)
{
	struct pk_obj *o = pk_new(pk, PK_INT);
	if (o) {
		o->i = v;
	}
	return o;
}

static struct pk_obj *pk_str(struct pk *pk, const unsigned char *s, size_t len)
{
	struct pk_obj *o = pk_new(pk, PK_STR);
	if (!o) {
		return NULL;
	}
	o->s = malloc(len + 1);
	if (!o->s) {
		pk->nomem = true;
		pk_fail(pk, "out of memory");
		return NULL;
	}
	memcpy(o->s, s, len);
	o->s[len] = '\0';
	if (strlen(o->s) != len) {
		pk_fail(pk, "a string with a NUL byte in the pickle");
		return NULL;
	}
	return o;
}

/* Text from the file, made safe for a one-line message: printable ASCII
 * kept, anything else '?', at most size - 1 bytes. */
static const char *pk_safe(const char *in, char *out, size_t size)
{
	size_t n = 0;
	for (; in && *in && n + 1 < size; in++) {
		unsigned char c = (unsigned char)*in;
		out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[n] = '\0';
	return out;
}

/* module and name of a GLOBAL: only the classes torch.save uses for plain
 * tensors are taken. */
static struct pk_obj *pk_global(struct pk *pk, const char *module, const char *name)
{
	struct pk_obj *o = pk_new(pk, PK_GLOBAL);
	if (!o) {
		return NULL;
	}
	if (strcmp(module, "torch._utils") == 0 && strcmp(name, "_rebuild_tensor_v2") == 0) {
		o->i = PKG_REBUILD_TENSOR;
		return o;
	}
	if (strcmp(module, "collections") == 0 && strcmp(name, "OrderedDict") == 0) {
		o->i = PKG_ORDERED_DICT;
		return o;
	}
	if (strcmp(module, "torch") == 0) {
		for (size_t i = 0; i < sizeof(storages) / sizeof(storages[0]); i++) {
			if (strcmp(name, storages[i].name) == 0) {
				o->i = PKG_STORAGE;
				o->elem_size = storages[i].size;
				o->is_float = storages[i].is_float;
				o->is_signed = storages[i].is_signed;
				o->dtype = storages[i].dtype;
				return o;
			}
		}
	}
	char m[64];
	char n[64];
	pk_fail(pk, "the pickle names %s.%s; only plain tensors (integer or float32/64), dicts, "
		"lists, numbers and strings are read", pk_safe(module, m, sizeof(m)), pk_safe(name, n, sizeof(n)));
	return NULL;
}

/* ('storage', torch.XStorage, key, location, numel) */
static struct pk_obj *pk_persistent(struct pk *pk, struct pk_obj *pid)
{
	if (!pid || pid->kind != PK_TUPLE || pid->n != 5 || pid->items[0]->kind != PK_STR ||
	    strcmp(pid->items[0]->s, "storage") != 0 || pid->items[1]->kind != PK_GLOBAL ||
	    pid->items[1]->i != PKG_STORAGE || pid->items[2]->kind != PK_STR ||
	    pid->items[4]->kind != PK_INT || pid->items[4]->i < 0) {
		pk_fail(pk, "a persistent id that is not a torch storage");
		return NULL;
	}
	struct pk_obj *s = pk_new(pk, PK_STORAGE);
	if (!s) {
		return NULL;
	}
	const struct pk_obj *cls = pid->items[1];
	s->elem_size = cls->elem_size;
	s->is_float = cls->is_float;
	s->is_signed = cls->is_signed;
	s->dtype = cls->dtype;
	s->numel = (uint64_t)pid->items[4]->i;
	s->s = strdup(pid->items[2]->s);
	if (!s->s) {
		pk->nomem = true;
		pk_fail(pk, "out of memory");
		return NULL;
	}
	return s;
}

static bool pk_dims(struct pk *pk, const struct pk_obj *t, uint64_t *out, uint32_t *n)
{
	if (t->kind != PK_TUPLE || t->n > PK_MAX_DIMS) {
		pk_fail(pk, "a tensor's size or stride is not a tuple of at most %u ints", PK_MAX_DIMS);
		return false;
	}
	for (size_t i = 0; i < t->n; i++) {
		if (t->items[i]->kind != PK_INT || t->items[i]->i < 0) {
			pk_fail(pk, "a tensor's size or stride is not a tuple of ints >= 0");
			return false;
		}
		out[i] = (uint64_t)t->items[i]->i;
	}
	*n = (uint32_t)t->n;
	return true;
}

static struct pk_obj *pk_reduce(struct pk *pk, struct pk_obj *fn, struct pk_obj *args)
{
	if (!fn || !args || fn->kind != PK_GLOBAL || args->kind != PK_TUPLE) {
		pk_fail(pk, "a call (REDUCE) of something other than a known class");
		return NULL;
	}
	if (fn->i == PKG_ORDERED_DICT) {
		if (args->n != 0) {
			pk_fail(pk, "OrderedDict with arguments");
			return NULL;
		}
		return pk_new(pk, PK_DICT);
	}
	if (fn->i != PKG_REBUILD_TENSOR || args->n < 6 || args->n > 7 ||
	    args->items[0]->kind != PK_STORAGE || args->items[1]->kind != PK_INT ||
	    args->items[1]->i < 0) {
		pk_fail(pk, "a call (REDUCE) that is not _rebuild_tensor_v2(storage, offset, size, stride, ...)");
		return NULL;
	}
	struct pk_obj *t = pk_new(pk, PK_TENSOR);
	if (!t) {
		return NULL;
	}
	t->storage = args->items[0];
	t->offset = (uint64_t)args->items[1]->i;
	uint32_t nstride = 0;
	if (!pk_dims(pk, args->items[2], t->shape, &t->ndim) ||
	    !pk_dims(pk, args->items[3], t->stride, &nstride)) {
		return NULL;
	}
	if (nstride != t->ndim) {
		pk_fail(pk, "a tensor with %u sizes but %u strides", t->ndim, nstride);
		return NULL;
	}
	return t;
}

static bool pk_memo_put(struct pk *pk, uint64_t idx)
{
	struct pk_obj *top = pk_top(pk);
	if (!top) {
		return false;
	}
	/* A pickler numbers its memo from 0, one index per object it made
	 * (pickle.py Pickler.memoize: idx = len(self.memo)): an index beyond
	 * the objects made so far would only grow the table. */
	if (idx >= PK_MAX_OBJECTS || idx > pk->count) {
		pk_fail(pk, "a memo index %llu beyond the %zu objects made so far", (unsigned long long)idx,
			pk->count);
		return false;
	}
	if (idx >= pk->memo_cap) {
		size_t cap = pk->memo_cap ? pk->memo_cap : 64;
		while (cap <= idx) {
			cap *= 2;
		}
		struct pk_obj **v = realloc(pk->memo, cap * sizeof(*v));
		if (!v) {
			pk->nomem = true;
			pk_fail(pk, "out of memory");
			return false;
		}
		memset(v + pk->memo_cap, 0, (cap - pk->memo_cap) * sizeof(*v));
		pk->memo = v;
		pk->memo_cap = cap;
	}
	pk->memo[idx] = top;
	pk->memo_len = idx + 1 > pk->memo_len ? idx + 1 : pk->memo_len;
	return true;
}

static bool pk_memo_get(struct pk *pk, uint64_t idx)
{
	if (idx >= pk->memo_cap || !pk->memo[idx]) {
		pk_fail(pk, "a memo read of an unset index %llu", (unsigned long long)idx);
		return false;
	}
	return pk_push(pk, pk->memo[idx]);
}

static bool pk_tuple(struct pk *pk, size_t n)
{
	struct pk_obj *t = pk_new(pk, PK_TUPLE);
	if (!t) {
		return false;
	}
	if (pk->sp < n) {
		pk_fail(pk, "pickle stack underflow at byte %td", pk->p - pk->start);
		return false;
	}
	for (size_t i = pk->sp - n; i < pk->sp; i++) {
		if (pk->stack[i]->kind == PK_MARK || !pk_add(pk, t, pk->stack[i])) {
			pk_fail(pk, "pickle stack underflow at byte %td", pk->p - pk->start);
			return false;
		}
	}
	pk->sp -= n;
	return pk_push(pk, t);
}

static bool pk_setitems(struct pk *pk, size_t from)
{
	if (from == 0 || (pk->sp - from) % 2 != 0 || pk->stack[from - 1]->kind != PK_DICT) {
		pk_fail(pk, "SETITEM(S) without a dict and key-value pairs");
		return false;
	}
	struct pk_obj *d = pk->stack[from - 1];
	for (size_t i = from; i < pk->sp; i++) {
		if (!pk_add(pk, d, pk->stack[i])) {
			return false;
		}
	}
	pk->sp = from;
	return true;
}

static bool pk_appends(struct pk *pk, size_t from)
{
	if (from == 0 || pk->stack[from - 1]->kind != PK_LIST) {
		pk_fail(pk, "APPEND(S) without a list");
		return false;
	}
	struct pk_obj *l = pk->stack[from - 1];
	for (size_t i = from; i < pk->sp; i++) {
		if (!pk_add(pk, l, pk->stack[i])) {
			return false;
		}
	}
	pk->sp = from;
	return true;
}

/* GLOBAL's "module\nname\n" */
static bool pk_read_line(struct pk *pk, char *buf, size_t size)
{
	const unsigned char *nl = memchr(pk->p, '\n', (size_t)(pk->end - pk->p));
	if (!nl || (size_t)(nl - pk->p) >= size) {
		pk_fail(pk, "a GLOBAL name too long or unterminated at byte %td", pk->p - pk->start);
		return false;
	}
	memcpy(buf, pk->p, (size_t)(nl - pk->p));
	buf[nl - pk->p] = '\0';
	pk->p = nl + 1;
	return true;
}

/* The unknown-opcode error (every opcode torch.save writes for plain data is handled). */
static bool pk_op_unknown(struct pk *pk, unsigned char op)
{
	pk_fail(pk, "pickle opcode 0x%02x at byte %td is not one torch.save writes for plain "
		"tensors, dicts and lists", op, pk->p - 1 - pk->start);
	return false;
}

/* PROTO and FRAME: the protocol check and protocol 4's frame length, skipped. */
static bool pk_op_frame(struct pk *pk, unsigned char op)
{
	if (op == 0x95) { /* FRAME (protocol 4): a length to skip */
		if (!pk_need(pk, 8)) {
			return false;
		}
		pk->p += 8;
		return true;
	}
	/* PROTO */
	if (!pk_need(pk, 1)) {
		return false;
	}
	if (*pk->p < 2 || *pk->p > 5) {
		pk_fail(pk, "pickle protocol %u (torch.save writes 2)", *pk->p);
		return false;
	}
	pk->p++;
	return true;
}

/* LONG1: n bytes, two's complement little-endian, at most 64 bits. */
static bool pk_op_long1(struct pk *pk)
{
	if (!pk_need(pk, 1)) {
		return false;
	}
	unsigned n = *pk->p++;
	if (n > 8 || !pk_need(pk, n)) {
		pk_fail(pk, "an integer wider than 64 bits");
		return false;
	}
	uint64_t v = pk_le(pk->p, n);
	if (n > 0 && n < 8 && (pk->p[n - 1] & 0x80)) {
		v |= ~(uint64_t)0 << (8 * n);
	}
	pk->p += n;
	return pk_push(pk, pk_int(pk, (int64_t)v));
}

/* BINFLOAT: a big-endian IEEE double. */
static bool pk_op_binfloat(struct pk *pk)
{
	if (!pk_need(pk, 8)) {
		return false;
	}
	uint64_t bits = 0;
	for (int i = 0; i < 8; i++) {
		bits = bits << 8 | pk->p[i];
	}
	pk->p += 8;
	struct pk_obj *o = pk_new(pk, PK_FLOAT);
	if (o) {
		memcpy(&o->f, &bits, sizeof(o->f));
	}
	return pk_push(pk, o);
}

/* Scalars: NEWTRUE, NEWFALSE, BININT1, BININT2, BININT (signed 32), LONG1, BINFLOAT. */
static bool pk_op_scalar(struct pk *pk, unsigned char op)
{
	switch (op) {
	case 0x88: /* NEWTRUE */
	case 0x89: { /* NEWFALSE */
		struct pk_obj *o = pk_new(pk, PK_BOOL);
		if (o) {
			o->i = op == 0x88;
		}
		return pk_push(pk, o);
	}
	case 'K': /* BININT1 */
		if (!pk_need(pk, 1)) {
			return false;
		}
		pk->p += 1;
		return pk_push(pk, pk_int(pk, pk->p[-1]));
	case 'M': /* BININT2 */
		if (!pk_need(pk, 2)) {
			return false;
		}
		pk->p += 2;
		return pk_push(pk, pk_int(pk, (int64_t)pk_le(pk->p - 2, 2)));
	case 'J': /* BININT: signed 32 */
		if (!pk_need(pk, 4)) {
			return false;
		}
		pk->p += 4;
		return pk_push(pk, pk_int(pk, (int32_t)(uint32_t)pk_le(pk->p - 4, 4)));
	case 0x8a: return pk_op_long1(pk);
	case 'G': return pk_op_binfloat(pk);
	default: return pk_op_unknown(pk, op);
	}
}

/* Names: BINUNICODE, SHORT_BINUNICODE, GLOBAL ("module\nname\n"), STACK_GLOBAL. */
static bool pk_op_name(struct pk *pk, unsigned char op)
{
	char mod[128];
	char name[128];
	switch (op) {
	case 'X': /* BINUNICODE */
	case 0x8c: { /* SHORT_BINUNICODE */
		unsigned w = op == 'X' ? 4 : 1;
		if (!pk_need(pk, w)) {
			return false;
		}
		uint64_t len = pk_le(pk->p, w);
		pk->p += w;
		if (!pk_need(pk, len)) {
			return false;
		}
		pk->p += len;
		return pk_push(pk, pk_str(pk, pk->p - len, (size_t)len));
	}
	case 'c': /* GLOBAL */
		return pk_read_line(pk, mod, sizeof(mod)) && pk_read_line(pk, name, sizeof(name)) &&
		       pk_push(pk, pk_global(pk, mod, name));
	case 0x93: { /* STACK_GLOBAL */
		struct pk_obj *n = pk_pop(pk);
		struct pk_obj *m = pk_pop(pk);
		if (!n || !m || n->kind != PK_STR || m->kind != PK_STR) {
			pk_fail(pk, "STACK_GLOBAL without module and name strings");
			return false;
		}
		return pk_push(pk, pk_global(pk, m->s, n->s));
	}
	default: return pk_op_unknown(pk, op);
	}
}

/* The memo: BINPUT, LONG_BINPUT, MEMOIZE (store the top) and BINGET, LONG_BINGET (push a stored one). */
static bool pk_op_memo(struct pk *pk, unsigned char op)
{
	switch (op) {
	case 'q': /* BINPUT */
		if (!pk_need(pk, 1)) {
			return false;
		}
		pk->p += 1;
		return pk_memo_put(pk, pk->p[-1]);
	case 'r': /* LONG_BINPUT */
		if (!pk_need(pk, 4)) {
			return false;
		}
		pk->p += 4;
		return pk_memo_put(pk, pk_le(pk->p - 4, 4));
	case 0x94: /* MEMOIZE */
		return pk_memo_put(pk, pk->memo_len);
	case 'h': /* BINGET */
		if (!pk_need(pk, 1)) {
			return false;
		}
		pk->p += 1;
		return pk_memo_get(pk, pk->p[-1]);
	case 'j': /* LONG_BINGET */
		if (!pk_need(pk, 4)) {
			return false;
		}
		pk->p += 4;
		return pk_memo_get(pk, pk_le(pk->p - 4, 4));
	default: return pk_op_unknown(pk, op);
	}
}

/* TUPLE: the items above the topmost MARK become one tuple in its place. */
static bool pk_op_tuple_mark(struct pk *pk)
{
	size_t m = pk_mark(pk);
	if (m == SIZE_MAX) {
		return false;
	}
	struct pk_obj *t = pk_new(pk, PK_TUPLE);
	if (!t) {
		return false;
	}
	for (size_t i = m + 1; i < pk->sp; i++) {
		if (!pk_add(pk, t, pk->stack[i])) {
			return false;
		}
	}
	pk->sp = m;
	return pk_push(pk, t);
}

/* APPENDS and SETITEMS: drop the topmost MARK, then append or set the items that were above it. */
static bool pk_op_fill_mark(struct pk *pk, unsigned char op)
{
	size_t m = pk_mark(pk);
	if (m == SIZE_MAX) {
		return false;
	}
	memmove(pk->stack + m, pk->stack + m + 1, (pk->sp - m - 1) * sizeof(*pk->stack));
	pk->sp--;
	return op == 'e' ? pk_appends(pk, m) : pk_setitems(pk, m);
}

/* Containers: empty dict/list/tuple, MARK, TUPLE, TUPLE1-3, APPEND(S), SETITEM(S). */
static bool pk_op_container(struct pk *pk, unsigned char op)
{
	switch (op) {
	case '}': return pk_push(pk, pk_new(pk, PK_DICT));
	case ']': return pk_push(pk, pk_new(pk, PK_LIST));
	case ')': return pk_push(pk, pk_new(pk, PK_TUPLE));
	case '(': return pk_push(pk, pk_new(pk, PK_MARK));
	case 't': return pk_op_tuple_mark(pk); /* TUPLE */
	case 0x85: return pk_tuple(pk, 1);
	case 0x86: return pk_tuple(pk, 2);
	case 0x87: return pk_tuple(pk, 3);
	case 'a': /* APPEND */
		if (pk->sp < 2) {
			pk_fail(pk, "APPEND without a list");
			return false;
		}
		return pk_appends(pk, pk->sp - 1);
	case 's': /* SETITEM */
		if (pk->sp < 3) {
			pk_fail(pk, "SETITEM without a dict");
			return false;
		}
		return pk_setitems(pk, pk->sp - 2);
	case 'e': /* APPENDS */
	case 'u': /* SETITEMS */
		return pk_op_fill_mark(pk, op);
	default: return pk_op_unknown(pk, op);
	}
}

/* One opcode: each family's handler; STOP hands the top of the stack to *root. */
static bool pk_op(struct pk *pk, unsigned char op, struct pk_obj **root)
{
	switch (op) {
	case 0x80: /* PROTO */
	case 0x95: /* FRAME */
		return pk_op_frame(pk, op);
	case 'N': return pk_push(pk, pk_new(pk, PK_NONE));
	case 0x88: case 0x89: case 'K': case 'M': case 'J': case 0x8a: case 'G':
		return pk_op_scalar(pk, op);
	case 'X': case 0x8c: case 'c': case 0x93:
		return pk_op_name(pk, op);
	case 'q': case 'r': case 0x94: case 'h': case 'j':
		return pk_op_memo(pk, op);
	case '}': case ']': case ')': case '(': case 't': case 0x85: case 0x86: case 0x87:
	case 'a': case 'e': case 's': case 'u':
		return pk_op_container(pk, op);
	case 'Q': { /* BINPERSID */
		struct pk_obj *pid = pk_pop(pk);
		return pk_push(pk, pk_persistent(pk, pid));
	}
	case 'R': { /* REDUCE */
		struct pk_obj *args = pk_pop(pk);
		struct pk_obj *fn = pk_pop(pk);
		return pk_push(pk, pk_reduce(pk, fn, args));
	}
	case '.': /* STOP */
		*root = pk_pop(pk);
		return *root != NULL;
	default:
		return pk_op_unknown(pk, op);
	}
}

static struct pk_obj *pk_run(struct pk *pk)
{
	struct pk_obj *root = NULL;
	while (!root && !pk->err[0]) {
		if (pk->p >= pk->end) {
			pk_fail(pk, "the pickle ends without STOP");
			break;
		}
		unsigned char op = *pk->p++;
		if (!pk_op(pk, op, &root)) {
			break;
		}
	}
	return pk->err[0] ? NULL : root;
}

static const struct pk_obj *pk_dict_get(const struct pk_obj *d, const char *key)
{
	if (!d || d->kind != PK_DICT) {
		return NULL;
	}
	for (size_t i = 0; i + 1 < d->n; i += 2) {
		if (d->items[i]->kind == PK_STR && strcmp(d->items[i]->s, key) == 0) {
			return d->items[i + 1];
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------ archive */

struct tz {
	const char *path;
	struct mp_diags *diags;
	zip_t *za;
	char prefix[256];
	struct pk pk;
	unsigned char *pickle;
	int status;
};

static int tz_error(struct tz *z, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int tz_error(struct tz *z, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (z->status == 0) {
		z->status = code;
		mp_diags_add(z->diags, z->path, 0, 0, code, "%s", msg);
	}
	return code;
}

/* Only a regular file can be a zip (libzip seeks): a FIFO or a terminal
 * is left unopened here, so that its bytes are read once, by
 * ld_read_text, and a FIFO named *.json does not hang on a second open. */
bool ld_is_zip(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		return false;
	}
	FILE *f = fopen(path, "rb");
	if (!f) {
		return false;
	}
	unsigned char magic[4] = {0};
	size_t n = fread(magic, 1, 4, f);
	fclose(f);
	return n == 4 && memcmp(magic, "PK\x03\x04", 4) == 0;
}

static zip_int64_t tz_entry(struct tz *z, const char *name, zip_stat_t *st)
{
	char full[512];
	int len = snprintf(full, sizeof(full), "%s%s", z->prefix, name);
	if (len < 0 || (size_t)len >= sizeof(full)) {
		return -1;
	}
	zip_int64_t idx = zip_name_locate(z->za, full, 0);
	if (idx < 0 || zip_stat_index(z->za, (zip_uint64_t)idx, 0, st) != 0) {
		return -1;
	}
	return idx;
}

static const char *tz_method_name(zip_uint16_t m)
{
	switch (m) {
	case ZIP_CM_DEFLATE: return "deflate";
	case ZIP_CM_DEFLATE64: return "deflate64";
	case ZIP_CM_BZIP2: return "bzip2";
	case ZIP_CM_LZMA: return "lzma";
	case ZIP_CM_LZMA2: return "lzma2";
	case ZIP_CM_XZ: return "xz";
	default: return "compressed";
	}
}

/* Every member stored (torch.save writes ZIP_STORED: torch/csrc's
 * PyTorchStreamWriter, miniz with level 0), not encrypted, and no larger
 * than the file: so that no member expands, the input limit
 * (MP_MAX_INPUT_BYTES) bounds every size read from the archive, and every
 * allocation sized from a member is bounded by the file's size. */
static bool tz_members_stored(struct tz *z, zip_int64_t n, uint64_t file_size)
{
	for (zip_int64_t i = 0; i < n; i++) {
		zip_stat_t st;
		if (zip_stat_index(z->za, (zip_uint64_t)i, 0, &st) != 0) {
			tz_error(z, MP_EINVAL, "cannot read the archive's member %lld", (long long)i);
			return false;
		}
		char shown[160];
		pk_safe(st.valid & ZIP_STAT_NAME ? st.name : "?", shown, sizeof(shown));
		if (!(st.valid & ZIP_STAT_COMP_METHOD) || st.comp_method != ZIP_CM_STORE) {
			tz_error(z, MP_EINVAL, "member %s is %s-compressed: torch.save writes stored "
				 "(uncompressed) members, and compressed ones are refused", shown,
				 st.valid & ZIP_STAT_COMP_METHOD ? tz_method_name(st.comp_method) : "?");
			return false;
		}
		if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
			tz_error(z, MP_EINVAL, "member %s is encrypted", shown);
			return false;
		}
		if (!(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_SIZE) ||
		    st.size != st.comp_size || st.size > file_size) {
			tz_error(z, MP_EINVAL, "member %s declares %llu bytes in a file of %llu: a "
				 "damaged archive", shown, (unsigned long long)st.size,
				 (unsigned long long)file_size);
			return false;
		}
	}
	return true;
}

/* The file's size, refused beyond MP_MAX_INPUT_BYTES (as every input). */
static bool tz_file_size(struct tz *z, uint64_t *size)
{
	FILE *f = fopen(z->path, "rb");
	long len = -1;
	if (f && fseek(f, 0, SEEK_END) == 0) {
		len = ftell(f);
	}
	if (f) {
		fclose(f);
	}
	if (len < 0) {
		tz_error(z, MP_EIO, "cannot read the file's size");
		return false;
	}
	if ((uint64_t)len > (uint64_t)MP_MAX_INPUT_BYTES) {
		tz_error(z, MP_EINVAL, "input is too large: %ld bytes, more than %u", len, MP_MAX_INPUT_BYTES);
		return false;
	}
	*size = (uint64_t)len;
	return true;
}

/* Open the archive, find ARCHIVE/data.pkl and run its pickle. */
static struct pk_obj *tz_open(struct tz *z)
{
	uint64_t file_size = 0;
	if (!tz_file_size(z, &file_size)) {
		return NULL;
	}
	int zerr = 0;
	z->za = zip_open(z->path, ZIP_RDONLY, &zerr);
	if (!z->za) {
		zip_error_t e;
		zip_error_init_with_code(&e, zerr);
		tz_error(z, MP_EINVAL, "not a readable torch.save archive (zip: %s)", zip_error_strerror(&e));
		zip_error_fini(&e);
		return NULL;
	}
	zip_int64_t n = zip_get_num_entries(z->za, 0);
	zip_int64_t pkl = -1;
	if (!tz_members_stored(z, n, file_size)) {
		return NULL;
	}
	for (zip_int64_t i = 0; i < n; i++) {
		const char *name = zip_get_name(z->za, (zip_uint64_t)i, 0);
		size_t len = name ? strlen(name) : 0;
		const char *slash = name ? strchr(name, '/') : NULL;
		if (len >= 8 && strcmp(name + len - 8, "data.pkl") == 0 && len - 8 < sizeof(z->prefix) &&
		    (len == 8 ? !slash : slash == name + len - 9)) {
			if (pkl >= 0) {
				tz_error(z, MP_EINVAL, "two data.pkl in the archive");
				return NULL;
			}
			pkl = i;
			memcpy(z->prefix, name, len - 8);
			z->prefix[len - 8] = '\0';
		}
	}
	zip_stat_t st;
	if (pkl < 0 || zip_stat_index(z->za, (zip_uint64_t)pkl, 0, &st) != 0) {
		tz_error(z, MP_EINVAL, "a zip archive without ARCHIVE/data.pkl: not a torch.save file");
		return NULL;
	}
	zip_stat_t bo;
	if (tz_entry(z, "byteorder", &bo) >= 0) {
		char order[16] = {0};
		char full[300];
		snprintf(full, sizeof(full), "%sbyteorder", z->prefix);
		zip_file_t *f = zip_fopen(z->za, full, 0);
		zip_int64_t got = f ? zip_fread(f, order, sizeof(order) - 1) : -1;
		if (f) {
			zip_fclose(f);
		}
		if (got < 0 || strncmp(order, "little", 6) != 0) {
			char shown[16];
			tz_error(z, MP_EINVAL, "a big-endian torch.save archive (byteorder '%s') is not read",
				 pk_safe(order, shown, sizeof(shown)));
			return NULL;
		}
	}
	if (!(st.valid & ZIP_STAT_SIZE) || st.size > LD_TORCH_MAX_PICKLE) {
		tz_error(z, MP_EINVAL, "data.pkl is larger than %u bytes", LD_TORCH_MAX_PICKLE);
		return NULL;
	}
	z->pickle = malloc(st.size ? st.size : 1);
	zip_file_t *f = z->pickle ? zip_fopen_index(z->za, (zip_uint64_t)pkl, 0) : NULL;
	if (!z->pickle) {
		tz_error(z, MP_ENOMEM, "out of memory");
		return NULL;
	}
	zip_int64_t got = f ? zip_fread(f, z->pickle, st.size) : -1;
	if (f) {
		zip_fclose(f);
	}
	if (got < 0 || (zip_uint64_t)got != st.size) {
		tz_error(z, MP_EINVAL, "cannot read data.pkl from the archive");
		return NULL;
	}
	z->pk.start = z->pk.p = z->pickle;
	z->pk.end = z->pickle + st.size;
	struct pk_obj *root = pk_run(&z->pk);
	if (!root) {
		tz_error(z, z->pk.nomem ? MP_ENOMEM : MP_EINVAL, "%s", z->pk.err);
	}
	return root;
}

static void tz_close(struct tz *z)
{
	if (z->za) {
		zip_discard(z->za);
	}
	pk_free(&z->pk);
	free(z->pickle);
}

/* A contiguous integer or float tensor of `dims` dimensions named `key`,
 * whose elements lie inside its storage member. */
static const struct pk_obj *tz_tensor(struct tz *z, const struct pk_obj *t, const char *key,
				      uint32_t dims_lo, uint32_t dims_hi, zip_int64_t *member)
{
	if (!t || t->kind != PK_TENSOR) {
		tz_error(z, MP_EINVAL, "'%s' is not a tensor", key);
		return NULL;
	}
	if (t->ndim < dims_lo || t->ndim > dims_hi) {
		tz_error(z, MP_EINVAL, "'%s' has %u dimensions, expected %u%s%u", key, t->ndim, dims_lo,
			 dims_hi > dims_lo ? " to " : "", dims_hi > dims_lo ? dims_hi : 0);
		return NULL;
	}
	uint64_t expect = 1;
	uint64_t total = 1;
	for (uint32_t i = t->ndim; i-- > 0;) {
		if (t->shape[i] == 0) {
			tz_error(z, MP_EINVAL, "'%s' has an empty dimension", key);
			return NULL;
		}
		if (t->shape[i] > 1 && t->stride[i] != expect) {
			tz_error(z, MP_EINVAL, "'%s' is not contiguous (stride %llu where %llu)", key,
				 (unsigned long long)t->stride[i], (unsigned long long)expect);
			return NULL;
		}
		if (t->shape[i] > (UINT64_C(1) << 40) / expect) {
			tz_error(z, MP_EINVAL, "'%s' is too large", key);
			return NULL;
		}
		expect *= t->shape[i];
	}
	total = expect;
	const struct pk_obj *s = t->storage;
	if (t->offset > s->numel || total > s->numel - t->offset) {
		tz_error(z, MP_EINVAL, "'%s' reaches past its storage (%llu elements)", key,
			 (unsigned long long)s->numel);
		return NULL;
	}
	char name[300];
	snprintf(name, sizeof(name), "data/%s", s->s);
	zip_stat_t st;
	*member = tz_entry(z, name, &st);
	char shown[160];
	char full[600];
	snprintf(full, sizeof(full), "%s%s", z->prefix, name);
	pk_safe(full, shown, sizeof(shown));
	if (*member < 0) {
		tz_error(z, MP_EINVAL, "'%s': storage member %s missing from the archive", key, shown);
		return NULL;
	}
	if (!(st.valid & ZIP_STAT_SIZE) || st.size / s->elem_size < s->numel) {
		tz_error(z, MP_EINVAL, "'%s': storage member %s holds fewer than %llu %s elements", key,
			 shown, (unsigned long long)s->numel, s->dtype);
		return NULL;
	}
	return t;
}

/* Read n elements of a storage stream as doubles (exact for |v| < 2^53;
 * integers beyond are refused by the callers' ranges). */
static bool tz_read(struct tz *z, zip_file_t *f, const struct pk_obj *s, double *out, size_t n,
		    unsigned char *buf)
{
	size_t bytes = n * s->elem_size;
	zip_int64_t got = zip_fread(f, buf, bytes);
	if (got < 0 || (size_t)got != bytes) {
		tz_error(z, MP_EINVAL, "cannot read a storage member (truncated or compressed oddly)");
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		const unsigned char *p = buf + i * s->elem_size;
		uint64_t v = pk_le(p, s->elem_size);
		if (s->is_float) {
			if (s->elem_size == 4) {
				float x;
				uint32_t b = (uint32_t)v;
				memcpy(&x, &b, sizeof(x));
				out[i] = (double)x;
			} else {
				memcpy(&out[i], &v, sizeof(out[i]));
			}
		} else if (s->is_signed && s->elem_size < 8 && (v >> (8 * s->elem_size - 1)) & 1) {
			out[i] = (double)(int64_t)(v | ~(uint64_t)0 << (8 * s->elem_size));
		} else if (s->is_signed) {
			out[i] = (double)(int64_t)v;
		} else {
			out[i] = (double)v;
		}
	}
	return true;
}

static bool tz_skip(struct tz *z, zip_file_t *f, const struct pk_obj *s, uint64_t elems,
		    unsigned char *buf, size_t buf_elems, double *scratch)
{
	while (elems > 0) {
		size_t n = elems < buf_elems ? (size_t)elems : buf_elems;
		if (!tz_read(z, f, s, scratch, n, buf)) {
			return false;
		}
		elems -= n;
	}
	return true;
}

/* SGLang's logical_count: [layers][experts], or [buffer][layers][experts]
 * summed over the buffer, one layer row at a time. */
static int tz_loads(struct tz *z, const struct pk_obj *root, struct mp_loads *out)
{
	const struct pk_obj *lc = pk_dict_get(root, "logical_count");
	if (!lc) {
		bool map = pk_dict_get(root, "physical_to_logical_map") ||
			   pk_dict_get(root, "last_physical_to_logical_map");
		return tz_error(z, MP_EINVAL, "%s", map
			? "this is an engine's expert map (it has a physical_to_logical_map), not expert "
			  "loads: pass it as the running placement (replan --plan, check PLAN, simulate --plan)"
			: "a torch.save file without 'logical_count': expected SGLang's expert-distribution "
			  "dump (expert_distribution_recorder_mode stat)");
	}
	zip_int64_t member = -1;
	const struct pk_obj *t = tz_tensor(z, lc, "logical_count", 2, 3, &member);
	if (!t) {
		return z->status;
	}
	const uint64_t B = t->ndim == 3 ? t->shape[0] : 1;
	const uint64_t L = t->shape[t->ndim - 2];
	const uint64_t E = t->shape[t->ndim - 1];
	if (L > MP_MAX_LAYERS || E > MP_MAX_EXPERTS) {
		return tz_error(z, MP_EINVAL, "logical_count is %llu layers x %llu experts; the limits are "
				"%u x %u", (unsigned long long)L, (unsigned long long)E, MP_MAX_LAYERS,
				MP_MAX_EXPERTS);
	}
	const struct pk_obj *s = t->storage;
	struct mp_loads tmp;
	mp_loads_init(&tmp);
	int rc = mp_loads_alloc(&tmp, (uint32_t)L, (uint32_t)E);
	unsigned char *buf = malloc((size_t)E * 8);
	double *row = malloc((size_t)E * sizeof(*row));
	zip_file_t *f = zip_fopen_index(z->za, (zip_uint64_t)member, 0);
	if (rc != 0 || !buf || !row || !f) {
		rc = tz_error(z, rc == MP_EINVAL || !f ? MP_EINVAL : MP_ENOMEM, "cannot read logical_count");
		goto out;
	}
	if (!tz_skip(z, f, s, t->offset, buf, (size_t)E, row)) {
		rc = z->status;
		goto out;
	}
	for (uint64_t b = 0; b < B; b++) {
		for (uint64_t l = 0; l < L; l++) {
			if (!tz_read(z, f, s, row, (size_t)E, buf)) {
				rc = z->status;
				goto out;
			}
			double *w = mp_loads_row(&tmp, (uint32_t)l);
			for (uint64_t e = 0; e < E; e++) {
				if (!isfinite(row[e]) || row[e] < 0 || row[e] > LD_MAX_LOAD) {
					rc = tz_error(z, MP_EINVAL, "logical_count[%llu][%llu][%llu] = %g: counts must "
						      "be from 0 to " LD_MAX_LOAD_TEXT, (unsigned long long)b,
						      (unsigned long long)l, (unsigned long long)e, row[e]);
					goto out;
				}
				w[e] += row[e];
			}
		}
	}
	/* rows are num_hidden_layers: row i is layer i */
	uint32_t *ids = malloc((size_t)L * sizeof(*ids));
	if (!ids) {
		rc = tz_error(z, MP_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < L; i++) {
		ids[i] = i;
	}
	rc = mp_loads_set_layer_ids(&tmp, ids);
	free(ids);
	if (rc != 0) {
		tz_error(z, rc, "out of memory");
		goto out;
	}
	tmp.hidden_layers = (uint32_t)L;
	mp_loads_finish(out);
	*out = tmp;
	mp_loads_init(&tmp);
out:
	if (f) {
		zip_fclose(f);
	}
	free(buf);
	free(row);
	mp_loads_finish(&tmp);
	return rc;
}

int ld_torch_loads(const char *path, struct mp_loads *out, struct mp_diags *diags)
{
	struct tz z = {.path = path, .diags = diags};
	const struct pk_obj *root = tz_open(&z);
	int rc = root ? tz_loads(&z, root, out) : z.status;
	tz_close(&z);
	return rc;
}

int ld_torch_map(const char *path, uint32_t **ids_out, uint32_t *rows_out, uint32_t *cols_out,
		 const char **what, struct mp_diags *diags)
{
	struct tz z = {.path = path, .diags = diags};
	const struct pk_obj *root = tz_open(&z);
	int rc = z.status;
	*ids_out = NULL;
	if (!root) {
		goto out;
	}
	const char *key = "physical_to_logical_map";
	const struct pk_obj *m = pk_dict_get(root, key);
	if (!m) {
		key = "last_physical_to_logical_map";
		m = pk_dict_get(root, key);
	}
	if (!m) {
		rc = tz_error(&z, MP_EINVAL, "%s", pk_dict_get(root, "logical_count")
			? "this is SGLang's expert-distribution dump (logical_count), not a map: give it as "
			  "the loads"
			: "a torch.save file without 'physical_to_logical_map' (or SGLang's "
			  "'last_physical_to_logical_map')");
		goto out;
	}
	*what = key;
	zip_int64_t member = -1;
	const struct pk_obj *t = tz_tensor(&z, m, key, 2, 2, &member);
	if (!t) {
		rc = z.status;
		goto out;
	}
	if (t->storage->is_float) {
		rc = tz_error(&z, MP_EINVAL, "'%s' holds %s values, not expert ids", key, t->storage->dtype);
		goto out;
	}
	const uint64_t rows = t->shape[0];
	const uint64_t cols = t->shape[1];
	if (rows > MP_MAX_LAYERS || cols > (uint64_t)MP_MAX_GPUS * MP_MAX_SLOTS_PER_GPU ||
	    rows * cols > (UINT64_C(1) << 28)) {
		rc = tz_error(&z, MP_EINVAL, "'%s' is %llu x %llu, beyond the limits", key,
			      (unsigned long long)rows, (unsigned long long)cols);
		goto out;
	}
	uint32_t *ids = malloc((size_t)(rows * cols) * sizeof(*ids));
	unsigned char *buf = malloc((size_t)cols * 8);
	double *row = malloc((size_t)cols * sizeof(*row));
	zip_file_t *f = zip_fopen_index(z.za, (zip_uint64_t)member, 0);
	bool ok = ids && buf && row && f && tz_skip(&z, f, t->storage, t->offset, buf, (size_t)cols, row);
	for (uint64_t r = 0; r < rows && ok; r++) {
		ok = tz_read(&z, f, t->storage, row, (size_t)cols, buf);
		for (uint64_t c = 0; c < cols && ok; c++) {
			if (row[c] < 0 || row[c] >= MP_MAX_EXPERTS) {
				tz_error(&z, MP_EINVAL, "%s[%llu][%llu] = %.0f: expert ids are 0 to %u", key,
					 (unsigned long long)r, (unsigned long long)c, row[c], MP_MAX_EXPERTS - 1);
				ok = false;
			} else {
				ids[r * cols + c] = (uint32_t)row[c];
			}
		}
	}
	if (f) {
		zip_fclose(f);
	}
	free(buf);
	free(row);
	if (!ok) {
		free(ids);
		rc = z.status ? z.status : tz_error(&z, MP_ENOMEM, "out of memory");
		goto out;
	}
	*ids_out = ids;
	*rows_out = (uint32_t)rows;
	*cols_out = (uint32_t)cols;
	rc = 0;
out:
	tz_close(&z);
	return rc;
}
