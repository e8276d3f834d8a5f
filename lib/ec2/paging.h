/* paging.h: MaxResults and NextToken for Describe actions.
 *
 * A Describe handler builds its items sorted by a unique key (a resource
 * id, a name), filtered, and hands them here with the request; paging
 * keeps the page and makes the token:
 *
 *   struct spx_ec2_pager pg = { secret, account, "DescribeTags", 5, 1000, 0 };
 *   struct spx_ec2_page p;
 *   if (spx_ec2_page_begin(&pg, in, &p) < 0)        bad MaxResults or token
 *           return -1;
 *   ... items = the matching items with key > p.after, sorted ...
 *   spx_ec2_page_take(&p, items, key_of, &next);   items cut to the page
 *   spx_ec2_page_release(&p);
 *
 * The token names the key of the last item returned, so the next page
 * starts after it whatever was created or deleted meanwhile (stable order,
 * no item twice), and carries an HMAC-SHA256 with the node's secret over
 * the account, the action, the normalised query (the request without
 * NextToken, MaxResults and DryRun: a client may change its page size) and
 * that key. A token that was not made here, or is reused with other
 * filters or by another account, is InvalidParameterValue "Value ( T ) for
 * parameter NextToken is invalid. The token is invalid." as EC2 says.
 */
#ifndef SPX_EC2_PAGING_H
#define SPX_EC2_PAGING_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define SPX_EC2_PAGE_SECRET 32
/* Bytes of a sort key a token can carry. The longest is DescribeTags'
 * "RESOURCE-ID KEY" (lib/gw/ec2_tags.c, which asserts that it fits): an
 * id and a tag key of 127 characters, up to 4 bytes each in UTF-8, so
 * about 560 bytes. A token is the base64 of a version byte, the key and
 * a 16-byte MAC, so at most 1388 characters; a longer one is refused
 * before it is decoded. */
#define SPX_EC2_PAGE_KEYMAX 1024

struct spx_ec2_pager {
	const unsigned char *secret; /* SPX_EC2_PAGE_SECRET bytes */
	const char *account;
	const char *action;
	/* The MaxResults range, checked here when min < max (the model
	 * checks it when it has one). */
	int64_t min, max;
	/* Items per page when the request has no MaxResults; 0: all. */
	size_t def;
};

struct spx_ec2_page {
	const struct spx_ec2_pager *pg;
	size_t max;	/* items in this page; 0: no limit */
	char *after;	/* resume after this key; NULL: from the start */
	char *query;	/* the normalised query */
};

int spx_ec2_page_begin(const struct spx_ec2_pager *pg, const json_t *in,
		       struct spx_ec2_page *p);
/* items: an array sorted by key (strcmp) holding only keys after p->after.
 * Cuts it to the page and sets *next to a new token (free it) when more
 * remain, else NULL. key returns an item's sort key. */
int spx_ec2_page_take(struct spx_ec2_page *p, json_t *items,
		      const char *(*key)(const json_t *item), char **next);
void spx_ec2_page_release(struct spx_ec2_page *p);

/* Helpers for handlers: does key come after p->after? */
int spx_ec2_page_after(const struct spx_ec2_page *p, const char *key);

#endif
