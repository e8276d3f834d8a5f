/* iobuf.c: large buffers for O_DIRECT I/O, in transparent huge pages
 * (the contract and the reason are in iobuf.h). */
#include "spx.h"

#include <sys/mman.h>

#include "iobuf.h"

/* Size classes: SPX_IOBUF_MIN << k for k < NCLASS; the last is a page. */
#define NCLASS 6
_Static_assert((SPX_IOBUF_MIN << (NCLASS - 1)) == SPX_IOBUF_PAGE,
	       "the largest class is one page");
_Static_assert(SPX_IOBUF_PAGE / SPX_IOBUF_MIN <= 32,
	       "a page's buffers fit a 32-bit mask");

enum { PG_FREE = -1, PG_RUN = NCLASS, PG_TAIL = NCLASS + 1 };

struct page {
	int8_t use;	/* PG_FREE, a class, or a run's first page or rest */
	bool resident;	/* may hold memory: not given back since last used */
	uint32_t free;	/* a class's page: one bit a buffer not given */
	size_t run;	/* a run's first page: its pages */
};

struct spx_iobuf_pool {
	char *base;	/* SPX_IOBUF_PAGE aligned */
	size_t npages;
	size_t keep;		/* free pages that may stay resident */
	size_t kept;		/* free pages resident now */
	struct page pg[];
};

static uint32_t all_free(int k)
{
	unsigned n = SPX_IOBUF_PAGE / (SPX_IOBUF_MIN << k);

	return n == 32 ? UINT32_MAX : (1u << n) - 1;
}

struct spx_iobuf_pool *spx_iobuf_pool_new(size_t bytes, size_t keep)
{
	size_t n = bytes / SPX_IOBUF_PAGE + (bytes % SPX_IOBUF_PAGE != 0);
	struct spx_iobuf_pool *p;
	size_t len;
	uintptr_t a;
	char *m;

	if (!n)
		n = 1;
	if (n > SIZE_MAX / SPX_IOBUF_PAGE - 1) {
		spx_error(SPX_USAGE, "an I/O buffer pool of %zu bytes is too "
				     "large",
			  bytes);
		return NULL;
	}
	len = n * SPX_IOBUF_PAGE;
	/* One page more, to cut the mapping at a page boundary: only a
	 * whole aligned 2 MiB can be a huge page. */
	m = mmap(NULL, len + SPX_IOBUF_PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		spx_error_errno(SPX_FAIL, "cannot map an I/O buffer pool of "
					  "%zu bytes",
				len);
		return NULL;
	}
	a = ((uintptr_t)m + SPX_IOBUF_PAGE - 1) &
	    ~(uintptr_t)(SPX_IOBUF_PAGE - 1);
	if (a > (uintptr_t)m)
		munmap(m, a - (uintptr_t)m);
	munmap((char *)a + len, (uintptr_t)m + SPX_IOBUF_PAGE - a);
	/* EINVAL without THP in the kernel: ordinary pages, still fine. */
	(void)madvise((char *)a, len, MADV_HUGEPAGE);
	p = calloc(1, sizeof(*p) + n * sizeof(p->pg[0]));
	if (!p) {
		munmap((char *)a, len);
		spx_error(SPX_FAIL, "out of memory");
		return NULL;
	}
	p->base = (char *)a;
	p->npages = n;
	p->keep = keep / SPX_IOBUF_PAGE;
	for (size_t i = 0; i < n; i++)
		p->pg[i].use = PG_FREE;
	return p;
}

void spx_iobuf_pool_free(struct spx_iobuf_pool *p)
{
	if (!p)
		return;
	munmap(p->base, p->npages * SPX_IOBUF_PAGE);
	free(p);
}

/* Page i is in use from now on. */
static void take(struct spx_iobuf_pool *p, size_t i, int8_t use)
{
	if (p->pg[i].resident)
		p->kept--;
	p->pg[i].resident = true;
	p->pg[i].use = use;
}

/* Page i is free now: its memory goes back to the kernel beyond the
 * pages the pool keeps. */
static void release(struct spx_iobuf_pool *p, size_t i)
{
	p->pg[i].use = PG_FREE;
	if (p->kept < p->keep) {
		p->kept++;
		return;
	}
	(void)madvise(p->base + i * SPX_IOBUF_PAGE, SPX_IOBUF_PAGE,
		      MADV_DONTNEED);
	p->pg[i].resident = false;
}

static void *run_get(struct spx_iobuf_pool *p, size_t len)
{
	size_t want = (len + SPX_IOBUF_PAGE - 1) / SPX_IOBUF_PAGE;

	for (size_t i = 0, got = 0; i < p->npages; i++) {
		got = p->pg[i].use == PG_FREE ? got + 1 : 0;
		if (got < want)
			continue;
		i -= want - 1;
		take(p, i, PG_RUN);
		p->pg[i].run = want;
		for (size_t j = 1; j < want; j++)
			take(p, i + j, PG_TAIL);
		return p->base + i * SPX_IOBUF_PAGE;
	}
	return NULL;
}

void *spx_iobuf_get(struct spx_iobuf_pool *p, size_t len)
{
	size_t blank = p->npages;
	int k = 0;

	if (len < SPX_IOBUF_MIN)
		return NULL;
	if (len > SPX_IOBUF_PAGE)
		return run_get(p, len);
	while ((size_t)SPX_IOBUF_MIN << k < len)
		k++;
	/* A page of the class with a buffer left, before a free page (one
	 * still resident first): the classes keep to as few pages as they
	 * can, and faults are few. */
	for (size_t i = 0; i < p->npages; i++) {
		struct page *g = &p->pg[i];

		if (g->use == k && g->free) {
			unsigned b = (unsigned)__builtin_ctz(g->free);

			g->free &= ~(1u << b);
			return p->base + i * SPX_IOBUF_PAGE +
			       (size_t)b * (SPX_IOBUF_MIN << k);
		}
		if (g->use == PG_FREE &&
		    (blank == p->npages ||
		     (g->resident && !p->pg[blank].resident)))
			blank = i;
	}
	if (blank == p->npages)
		return NULL;
	take(p, blank, (int8_t)k);
	p->pg[blank].free = all_free(k) & ~1u;
	return p->base + blank * SPX_IOBUF_PAGE;
}

bool spx_iobuf_put(struct spx_iobuf_pool *p, void *buf)
{
	uintptr_t b = (uintptr_t)buf, base = (uintptr_t)p->base;
	size_t i, off;
	struct page *g;

	if (!buf || b < base || b - base >= p->npages * SPX_IOBUF_PAGE)
		return false;
	i = (b - base) / SPX_IOBUF_PAGE;
	off = (b - base) % SPX_IOBUF_PAGE;
	g = &p->pg[i];
	if (g->use == PG_RUN && !off) {
		for (size_t j = 0, n = g->run; j < n; j++)
			release(p, i + j);
		return true;
	}
	if (g->use >= 0 && g->use < NCLASS &&
	    !(off % (SPX_IOBUF_MIN << g->use))) {
		uint32_t bit = 1u << (off / (SPX_IOBUF_MIN << g->use));

		if (!(g->free & bit)) {
			g->free |= bit;
			if (g->free == all_free(g->use))
				release(p, i);
			return true;
		}
	}
	/* Not a buffer the pool gave, or given back twice: the caller's
	 * bookkeeping is broken, and a second owner of a buffer would
	 * corrupt data. */
	abort();
}
