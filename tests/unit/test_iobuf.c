/* Unit tests for lib/core/iobuf: size classes, runs of pages, a page
 * freed for any class, exhaustion, foreign and double give-backs, and a
 * random sequence checked against a model (no two live buffers overlap,
 * and each keeps its bytes). */
#include "spx.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "iobuf.h"
#include "t.h"

#define MIB (1u << 20)
#define PG SPX_IOBUF_PAGE

static bool aligned_to(const void *p, size_t a)
{
	return !((uintptr_t)p % a);
}

static void classes(void)
{
	struct spx_iobuf_pool *p = spx_iobuf_pool_new(4 * PG, 8 * PG);
	char *a, *b, *c, *d, *e;

	T_OK(p, "a pool of four pages");
	if (!p)
		return;
	T_OK(!spx_iobuf_get(p, 4096), "no buffer below the smallest class");
	T_OK(!spx_iobuf_get(p, SPX_IOBUF_MIN - 1), "nor one byte below it");
	a = spx_iobuf_get(p, MIB);
	b = spx_iobuf_get(p, MIB);
	c = spx_iobuf_get(p, MIB);
	T_OK(a && b && c, "three buffers of 1 MiB");
	T_OK(aligned_to(a, MIB) && aligned_to(b, MIB) && aligned_to(c, MIB),
	     "each aligned to its size");
	T_OK(aligned_to(a, PG) && b == a + MIB, "two share the first page");
	T_OK(c == a + PG, "the third starts the next page");
	d = spx_iobuf_get(p, SPX_IOBUF_MIN + 1);
	T_OK(d && aligned_to(d, 2 * SPX_IOBUF_MIN) && d >= a + 2 * PG,
	     "one byte over a class takes the next class, on a page of its "
	     "own");
	e = spx_iobuf_get(p, PG);
	T_OK(e == a + 3 * PG, "a whole page is the last free page");
	T_OK(!spx_iobuf_get(p, PG), "no fifth page");
	T_OK(!spx_iobuf_get(p, PG + 1), "no run either");
	T_OK(spx_iobuf_put(p, c), "the third 1 MiB back");
	T_OK(spx_iobuf_get(p, MIB) == c, "and given again");
	T_OK(!spx_iobuf_get(p, 2 * SPX_IOBUF_MIN + 1),
	     "a class with no page of its own and no free page: none");
	memset(a, 1, MIB);
	memset(b, 2, MIB);
	memset(c, 3, MIB);
	memset(d, 4, 2 * SPX_IOBUF_MIN);
	memset(e, 5, PG);
	T_OK(a[MIB - 1] == 1 && b[0] == 2 && b[MIB - 1] == 2 && c[0] == 3,
	     "the buffers hold their own bytes");
	T_OK(!spx_iobuf_put(p, NULL), "NULL is not the pool's");
	{
		char *m = malloc(SPX_IOBUF_MIN);

		T_OK(m && !spx_iobuf_put(p, m), "nor is malloc's memory");
		free(m);
	}
	spx_iobuf_pool_free(p);
}

static void pages_and_runs(void)
{
	struct spx_iobuf_pool *p = spx_iobuf_pool_new(3 * PG + 1, 8 * PG);
	char *small[32], *r, *x;
	bool ok = true;

	T_OK(p, "a pool of 3 pages and a byte: four pages");
	if (!p)
		return;
	for (size_t i = 0; i < 32; i++) {
		small[i] = spx_iobuf_get(p, SPX_IOBUF_MIN);
		ok = ok && small[i] == small[0] + i * SPX_IOBUF_MIN;
	}
	T_OK(ok, "32 of the smallest class fill one page in order");
	x = spx_iobuf_get(p, SPX_IOBUF_MIN);
	T_OK(x == small[0] + PG, "the 33rd opens the next page");
	r = spx_iobuf_get(p, 2 * PG + 1);
	T_OK(!r, "a run of three pages does not fit in the two left");
	for (size_t i = 0; i < 32; i++)
		spx_iobuf_put(p, small[i]);
	r = spx_iobuf_get(p, 2 * PG);
	T_OK(r == small[0] + 2 * PG, "the first page is free again, but a "
				    "two-page run goes where two are free "
				    "together");
	T_OK(spx_iobuf_get(p, PG) == small[0],
	     "and the emptied page takes another class");
	T_OK(spx_iobuf_put(p, r), "the run back");
	T_OK(spx_iobuf_put(p, x), "the last small buffer back");
	r = spx_iobuf_get(p, 3 * PG);
	T_OK(r == small[0] + PG, "three free pages together make a run");
	spx_iobuf_pool_free(p);
}

/* The bytes of [p, p + len) in memory now. */
static size_t resident(const char *p, size_t len)
{
	size_t n = len / 4096, in = 0;
	unsigned char *v = malloc(n);

	if (v && mincore((void *)p, len, v) == 0)
		for (size_t i = 0; i < n; i++)
			in += (v[i] & 1) * 4096;
	free(v);
	return in;
}

static void memory(void)
{
	struct spx_iobuf_pool *p = spx_iobuf_pool_new(4 * PG, PG);
	char *b[4];
	bool ok = true;

	T_OK(p, "a pool of four pages that keeps one free page");
	if (!p)
		return;
	b[0] = spx_iobuf_get(p, PG);
	T_OK(b[0] && !resident(b[0], 4 * PG), "a pool takes no memory before "
					      "it is used");
	spx_iobuf_put(p, b[0]);
	for (int i = 0; i < 4; i++) {
		b[i] = spx_iobuf_get(p, PG);
		ok = ok && b[i];
		if (b[i])
			memset(b[i], 1, PG);
	}
	T_OK(ok && resident(b[0], 4 * PG) == 4 * PG, "four pages in use, "
						     "in memory");
	for (int i = 0; i < 4; i++)
		spx_iobuf_put(p, b[i]);
	T_INT(resident(b[0], 4 * PG), PG, "given back, one page keeps its "
					  "memory");
	T_INT(resident(b[0], PG), PG, "the first given back");
	T_OK(spx_iobuf_get(p, PG) == b[0], "and it is the page given next");
	T_OK(spx_iobuf_get(p, PG) && resident(b[0], 4 * PG) == PG,
	     "another page starts with no memory");
	spx_iobuf_pool_free(p);
}

/* Does f(p, buf) abort? */
static bool aborts(struct spx_iobuf_pool *p, void *buf)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGABRT, SIG_DFL);
		spx_iobuf_put(p, buf);
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) &&
	       WTERMSIG(st) == SIGABRT;
}

static void misuse(void)
{
	struct spx_iobuf_pool *p = spx_iobuf_pool_new(3 * PG, 8 * PG);
	char *a, *b;

	T_OK(p, "a pool of three pages");
	if (!p)
		return;
	a = spx_iobuf_get(p, MIB);
	b = spx_iobuf_get(p, 2 * PG);
	T_OK(a && b, "a buffer and a run");
	T_OK(aborts(p, a + 4096), "a pointer inside a buffer aborts");
	T_OK(aborts(p, b + PG), "so does one inside a run");
	T_OK(aborts(p, a + MIB), "and a buffer never given out");
	T_OK(spx_iobuf_put(p, a), "the buffer back");
	T_OK(aborts(p, a), "given back twice: abort");
	T_OK(!spx_iobuf_pool_new(SIZE_MAX, 0) && spx_errstatus() == SPX_USAGE,
	     "a pool too large to map is refused: %s", spx_errmsg());
	spx_iobuf_pool_free(p);
	p = spx_iobuf_pool_new(0, 8 * PG);
	T_OK(p && spx_iobuf_get(p, PG) && !spx_iobuf_get(p, SPX_IOBUF_MIN),
	     "a pool of 0 bytes has one page");
	spx_iobuf_pool_free(p);
	spx_iobuf_pool_free(NULL);
}

/* A random sequence against a model. */
static void random_ops(void)
{
	enum { LIVE = 24, OPS = 4000 };
	/* Keeping two pages, the others' memory comes and goes. */
	struct spx_iobuf_pool *p = spx_iobuf_pool_new(8 * PG, 2 * PG);
	struct {
		unsigned char *b;
		size_t len;
		unsigned char fill;
	} live[LIVE] = { { 0 } };
	unsigned seed = 12345, got = 0, refused = 0, bad = 0;

	if (!p) {
		T_OK(0, "a pool of eight pages");
		return;
	}
	for (int op = 0; op < OPS; op++) {
		size_t i = (seed = seed * 1103515245 + 12345) >> 16;
		size_t len;

		i %= LIVE;
		if (live[i].b) {
			for (size_t j = 0; j < live[i].len; j += 4093)
				bad += live[i].b[j] != live[i].fill;
			bad += live[i].b[live[i].len - 1] != live[i].fill;
			bad += !spx_iobuf_put(p, live[i].b);
			live[i].b = NULL;
			continue;
		}
		seed = seed * 1103515245 + 12345;
		/* Sizes from the smallest class to a run of three pages. */
		len = SPX_IOBUF_MIN + (seed >> 8) % (3 * PG - SPX_IOBUF_MIN);
		if ((seed >> 4) % 4)
			len = SPX_IOBUF_MIN << ((seed >> 12) % 6);
		live[i].b = spx_iobuf_get(p, len);
		if (!live[i].b) {
			refused++;
			continue;
		}
		got++;
		bad += !aligned_to(live[i].b, 4096);
		for (size_t j = 0; j < LIVE; j++)
			if (j != i && live[j].b &&
			    live[j].b < live[i].b + len &&
			    live[i].b < live[j].b + live[j].len)
				bad++;
		live[i].len = len;
		live[i].fill = (unsigned char)op;
		memset(live[i].b, live[i].fill, len);
	}
	for (size_t i = 0; i < LIVE; i++)
		if (live[i].b)
			bad += !spx_iobuf_put(p, live[i].b);
	T_OK(!bad, "%u buffers given, %u refused: none overlapped another, "
		   "each kept its bytes, each came back",
	     got, refused);
	T_OK(got > OPS / 4 && refused > 0,
	     "the sequence both filled the pool and used it");
	T_OK(spx_iobuf_get(p, 8 * PG), "every page is free at the end");
	spx_iobuf_pool_free(p);
}

int main(void)
{
	classes();
	pages_and_runs();
	misuse();
	memory();
	random_ops();
	return t_done();
}
