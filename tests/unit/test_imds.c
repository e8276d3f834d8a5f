/* test_imds: the instance metadata service (lib/vm/imds.c): metadata.json
 * checks, the request reader, and the answers: listings, leaves, public
 * keys, user data, IMDSv2 tokens (issued, checked, expired, forged,
 * required), refusals. */
#include "spx.h"

#include "t.h"
#include "vm/imds.h"

static const char md_json[] =
	"{\"meta-data\": {\"instance-id\": \"i-0123456789abcdef0\", "
	"\"ami-id\": \"ami-0123456789abcdef0\", \"instance-type\": "
	"\"t3.micro\", \"local-ipv4\": \"169.254.169.15\", \"placement\": "
	"{\"availability-zone\": \"us-east-1a\", \"region\": \"us-east-1\"}, "
	"\"block-device-mapping\": {\"ami\": \"/dev/xvda\", \"root\": "
	"\"/dev/xvda\"}}, "
	"\"public-keys\": [{\"name\": \"k1\", \"openssh-key\": "
	"\"ssh-ed25519 AAAAC3Nz k1\"}], "
	"\"dynamic\": {\"instance-identity\": {\"document\": "
	"\"{\\\"instanceId\\\": \\\"i-0123456789abcdef0\\\"}\"}}, "
	"\"user-data\": \"IyEvYmluL3NoCmVjaG8gaGkK\"}";

static const unsigned char key[SPX_IMDS_KEY_LEN] = "0123456789abcdef0123456789abcde";

/* Send one request text; the answer's status line and body. */
static int ask(const struct spx_imds *md, const char *req, time_t now,
	       struct spx_buf *out)
{
	struct spx_imds_req *r = spx_malloc(sizeof(*r));
	int used = spx_imds_parse(req, strlen(req), r);

	spx_buf_reset(out);
	if (used > 0)
		spx_imds_answer(md, r, key, now, out);
	free(r);
	return used;
}

static const char *body(const struct spx_buf *b)
{
	const char *p = strstr(b->p, "\r\n\r\n");

	return p ? p + 4 : "";
}

static int code(const struct spx_buf *b)
{
	return b->len > 12 ? (int)strtol(b->p + 9, NULL, 10) : -1;
}

#define GET(path) "GET " path " HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n"

static void test_answers(void)
{
	struct spx_imds *md;
	struct spx_buf out = SPX_BUF_INIT;
	static const struct {
		const char *req;
		int code;
		const char *body;
	} t[] = {
		{ GET("/"), 200, "latest" },
		{ GET("/latest/"), 200, "dynamic\nmeta-data\nuser-data" },
		{ GET("/latest/dynamic/"), 200, "instance-identity/" },
		{ GET("/latest/dynamic/instance-identity/"), 200, "document" },
		{ GET("/2021-03-23/dynamic/instance-identity/document"), 200,
		  "{\"instanceId\": \"i-0123456789abcdef0\"}" },
		{ GET("/latest/dynamic/instance-identity/pkcs7"), 404, "404\n" },
		{ GET("/latest/dynamic/instance-identity/document/x"), 404,
		  "404\n" },
		{ GET("/latest/meta-data/"), 200,
		  "ami-id\nblock-device-mapping/\ninstance-id\ninstance-type\n"
		  "local-ipv4\nplacement/\npublic-keys/" },
		{ GET("/latest/meta-data/instance-id"), 200,
		  "i-0123456789abcdef0" },
		{ GET("/2009-04-04/meta-data/instance-id"), 200,
		  "i-0123456789abcdef0" },
		{ GET("/latest/meta-data/placement/availability-zone"), 200,
		  "us-east-1a" },
		{ GET("/latest/meta-data/placement"), 200,
		  "availability-zone\nregion" },
		{ GET("/latest/meta-data/public-keys/"), 200, "0=k1" },
		{ GET("/latest/meta-data/public-keys/0/"), 200, "openssh-key" },
		{ GET("/latest/meta-data/public-keys/0/openssh-key"), 200,
		  "ssh-ed25519 AAAAC3Nz k1\n" },
		{ GET("/latest/meta-data/public-keys/1/openssh-key"), 404, "404\n" },
		{ GET("/latest/meta-data/public-keys/00/openssh-key"), 404, "404\n" },
		{ GET("/latest/meta-data/public-keys/0/x"), 404, "404\n" },
		{ GET("/latest/user-data"), 200, "#!/bin/sh\necho hi\n" },
		{ GET("/latest/meta-data/nosuch"), 404, "404\n" },
		{ GET("/latest/meta-data/instance-id/x"), 404, "404\n" },
		{ GET("/latest/meta-data/../user-data"), 404, "404\n" },
		{ GET("/1.0/meta-data/instance-id"), 404, "404\n" },
		{ GET("/latest/api/token"), 405, "405\n" },
		{ "DELETE /latest/meta-data/ HTTP/1.1\r\n\r\n", 405, "405\n" },
		{ "PUT /latest/meta-data/ HTTP/1.1\r\n\r\n", 405, "405\n" },
		{ "PUT /latest/api/token HTTP/1.1\r\n\r\n", 400, "400\n" },
		{ "PUT /latest/api/token HTTP/1.1\r\n"
		  "X-aws-ec2-metadata-token-ttl-seconds: 0\r\n\r\n",
		  400, "400\n" },
		{ "PUT /latest/api/token HTTP/1.1\r\n"
		  "X-aws-ec2-metadata-token-ttl-seconds: 21601\r\n\r\n",
		  400, "400\n" },
		{ "PUT /latest/api/token HTTP/1.1\r\n"
		  "X-aws-ec2-metadata-token-ttl-seconds: 1e3\r\n\r\n",
		  400, "400\n" },
		{ "PUT /latest/api/token HTTP/1.1\r\n"
		  "X-aws-ec2-metadata-token-ttl-seconds: 60\r\n"
		  "X-Forwarded-For: 10.0.0.1\r\n\r\n",
		  403, "403\n" },
		{ "GET /latest/meta-data/instance-id HTTP/1.1\r\n"
		  "X-aws-ec2-metadata-token: 99999999999.AAAA\r\n\r\n",
		  401, "401\n" },
	};
	size_t i;

	T_INT(spx_imds_load(md_json, strlen(md_json), &md), 0, "load: %s",
	      spx_errmsg());
	for (i = 0; i < SPX_ARRAY_SIZE(t); i++) {
		T_OK(ask(md, t[i].req, 1000000, &out) > 0, "parsed %zu", i);
		T_INT(code(&out), t[i].code, "code %zu", i);
		T_STR(body(&out), t[i].body, "body %zu", i);
	}
	/* HEAD: the headers of the GET, no body. */
	ask(md, "HEAD /latest/meta-data/instance-id HTTP/1.1\r\n\r\n", 1000000,
	    &out);
	T_OK(strstr(out.p, "Content-Length: 19\r\n") != NULL, "HEAD length");
	T_STR(body(&out), "", "HEAD has no body");
	ask(md, "GET / HTTP/1.0\r\n\r\n", 1000000, &out);
	T_OK(strstr(out.p, "Connection: close\r\n") != NULL, "1.0 closes");
	ask(md, GET("/"), 1000000, &out);
	T_OK(strstr(out.p, "Connection: keep-alive\r\n") != NULL,
	     "1.1 keeps the connection");
	ask(md, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 1000000, &out);
	T_OK(strstr(out.p, "Connection: close\r\n") != NULL, "asked to close");
	spx_buf_release(&out);
	spx_imds_free(md);
}

static void test_tokens(void)
{
	struct spx_imds *md;
	struct spx_buf out = SPX_BUF_INIT;
	char tok[128], req[512], forged[128];
	static const char required[] =
		"{\"meta-data\": {\"instance-id\": \"i-1\"}, "
		"\"http-tokens\": \"required\"}";

	T_INT(spx_imds_load(required, strlen(required), &md), 0, "load");
	ask(md, GET("/latest/meta-data/instance-id"), 1000, &out);
	T_INT(code(&out), 401, "required: no token, no answer");
	ask(md,
	    "PUT /latest/api/token HTTP/1.1\r\n"
	    "x-aws-ec2-metadata-token-ttl-seconds: 60\r\n\r\n",
	    1000, &out);
	T_INT(code(&out), 200, "a token");
	T_OK(strstr(out.p, "X-aws-ec2-metadata-token-ttl-seconds: 60\r\n") !=
		     NULL,
	     "its ttl");
	snprintf(tok, sizeof(tok), "%s", body(&out));
	T_OK(strncmp(tok, "1060.", 5) == 0, "expires at now + ttl: %s", tok);
	snprintf(req, sizeof(req),
		 "GET /latest/meta-data/instance-id HTTP/1.1\r\n"
		 "X-aws-ec2-metadata-token: %s\r\n\r\n",
		 tok);
	ask(md, req, 1059, &out);
	T_INT(code(&out), 200, "the token is taken");
	T_STR(body(&out), "i-1", "and the answer given");
	ask(md, req, 1060, &out);
	T_INT(code(&out), 401, "not once it has expired");
	/* The same expiry with another MAC, and a later expiry with this
	 * MAC. */
	snprintf(forged, sizeof(forged), "%s", tok);
	forged[strlen(forged) - 1] ^= 1;
	snprintf(req, sizeof(req),
		 "GET /latest/meta-data/instance-id HTTP/1.1\r\n"
		 "X-aws-ec2-metadata-token: %s\r\n\r\n",
		 forged);
	ask(md, req, 1000, &out);
	T_INT(code(&out), 401, "a forged MAC");
	snprintf(req, sizeof(req),
		 "GET /latest/meta-data/instance-id HTTP/1.1\r\n"
		 "X-aws-ec2-metadata-token: 2060%s\r\n\r\n",
		 strchr(tok, '.'));
	ask(md, req, 1000, &out);
	T_INT(code(&out), 401, "a moved expiry");
	spx_imds_free(md);

	static const char off[] = "{\"meta-data\": {}, \"http-endpoint\": "
				  "\"disabled\"}";
	T_INT(spx_imds_load(off, strlen(off), &md), 0, "load disabled");
	ask(md, GET("/latest/meta-data/"), 1000, &out);
	T_INT(code(&out), 403, "a disabled endpoint");
	spx_imds_free(md);
	spx_buf_release(&out);
}

/* The hop limit: EC2's default of 1, or what metadata.json says; and
 * which requests it is for. */
static void test_hops(void)
{
	static const struct {
		const char *text;
		int hops;
	} t[] = {
		{ "{\"meta-data\": {}}", 1 },
		{ "{\"meta-data\": {}, \"http-put-response-hop-limit\": 1}", 1 },
		{ "{\"meta-data\": {}, \"http-put-response-hop-limit\": 2}", 2 },
		{ "{\"meta-data\": {}, \"http-put-response-hop-limit\": 64}", 64 },
	};
	struct spx_imds_req *r = spx_malloc(sizeof(*r));
	struct spx_imds *md;
	static const char *const reqs[] = {
		"PUT /latest/api/token HTTP/1.1\r\n"
		"X-aws-ec2-metadata-token-ttl-seconds: 60\r\n\r\n",
		"GET /latest/api/token HTTP/1.1\r\n\r\n",
		"PUT /latest/api/token/ HTTP/1.1\r\n\r\n",
		"PUT /latest/meta-data/ HTTP/1.1\r\n\r\n",
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++) {
		T_INT(spx_imds_load(t[i].text, strlen(t[i].text), &md), 0,
		      "hops %zu loads", i);
		T_INT(md ? spx_imds_hop_limit(md) : 0, t[i].hops, "hops %zu",
		      i);
		spx_imds_free(md);
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(reqs); i++) {
		T_OK(spx_imds_parse(reqs[i], strlen(reqs[i]), r) > 0,
		     "request %zu parses", i);
		T_OK(spx_imds_token_put(r) == (i == 0),
		     "request %zu %s the token's", i, i ? "is not" : "is");
	}
	free(r);
}

static void test_load(void)
{
	static const char *bad[] = {
		"",
		"[]",
		"{}",
		"{\"meta-data\": []}",
		"{\"meta-data\": {\"a\": 1}}",
		"{\"meta-data\": {\"a/b\": \"x\"}}",
		"{\"meta-data\": {\"..\": \"x\"}}",
		"{\"meta-data\": {\"public-keys\": {}}}",
		"{\"meta-data\": {\"a\": {\"b\": {\"c\": {\"d\": {\"e\": "
		"{\"f\": \"x\"}}}}}}}",
		"{\"meta-data\": {\"a b\": \"x\"}}",
		"{\"meta-data\": {\"a\\u0000b\": \"x\"}}",
		"{\"meta-data\": {}, \"public-keys\": [{\"name\": \"a\\nb\", "
		"\"openssh-key\": \"k\"}]}",
		"{\"meta-data\": {}, \"public-keys\": [{\"name\": \"a\"}]}",
		"{\"meta-data\": {}, \"user-data\": \"!!\"}",
		"{\"meta-data\": {}, \"http-tokens\": \"always\"}",
		"{\"meta-data\": {}, \"other\": 1}",
		"{\"meta-data\": {}, \"dynamic\": []}",
		"{\"meta-data\": {}, \"dynamic\": {\"a\": 1}}",
		"{\"meta-data\": {}, \"meta-data\": {}}",
		"{\"meta-data\": {}, \"http-put-response-hop-limit\": 0}",
		"{\"meta-data\": {}, \"http-put-response-hop-limit\": 65}",
		"{\"meta-data\": {}, \"http-put-response-hop-limit\": \"2\"}",
		"{\"meta-data\": {}, \"http-put-response-hop-limit\": 2.0}",
	};
	struct spx_buf big = SPX_BUF_INIT;
	struct spx_imds *md;
	size_t i;

	for (i = 0; i < SPX_ARRAY_SIZE(bad); i++) {
		T_INT(spx_imds_load(bad[i], strlen(bad[i]), &md), -1,
		      "refused %zu: %s", i, bad[i]);
		T_OK(md == NULL, "nothing made %zu", i);
	}
	/* A key pair name with '/' and '=', as EC2 takes: listed as it is,
	 * the key fetched by its index. */
	{
		static const char ok[] =
			"{\"meta-data\": {}, \"public-keys\": [{\"name\": "
			"\"team/dev=1\", \"openssh-key\": \"ssh-ed25519 AAAA\"}]}";
		struct spx_buf out = SPX_BUF_INIT;

		T_INT(spx_imds_load(ok, strlen(ok), &md), 0,
		      "a key pair named team/dev=1 is taken");
		if (md) {
			ask(md, GET("/latest/meta-data/public-keys/"), 1000000,
			    &out);
			T_STR(body(&out), "0=team/dev=1",
			      "and listed as 0=team/dev=1");
			ask(md, GET("/latest/meta-data/public-keys/0/openssh-key"),
			    1000000, &out);
			T_STR(body(&out), "ssh-ed25519 AAAA\n",
			      "its key fetched by index");
			spx_imds_free(md);
		}
		spx_buf_release(&out);
	}
	/* User data past EC2's 16 KiB. */
	spx_buf_adds(&big, "{\"meta-data\": {}, \"user-data\": \"");
	for (i = 0; i < (SPX_IMDS_UD_MAX / 3 + 1) * 4; i++)
		spx_buf_addc(&big, 'A');
	spx_buf_adds(&big, "\"}");
	T_INT(spx_imds_load(big.p, big.len, &md), -1, "user data too big");
	spx_buf_release(&big);
	spx_error_clear();
}

/* EC2's deepest path, a MAC address naming its directory. */
static void test_network(void)
{
	static const char net[] =
		"{\"meta-data\": {\"mac\": \"02:0a:0b:0c:0d:0e\", "
		"\"network\": {\"interfaces\": {\"macs\": "
		"{\"02:0a:0b:0c:0d:0e\": {\"device-number\": \"0\", "
		"\"local-ipv4s\": \"169.254.169.15\"}}}}}}";
	struct spx_buf out = SPX_BUF_INIT;
	struct spx_imds *md = NULL;

	T_INT(spx_imds_load(net, strlen(net), &md), 0, "the network tree: %s",
	      md ? "" : spx_errmsg());
	if (!md)
		return;
	ask(md, GET("/latest/meta-data/network/interfaces/macs/"), 0, &out);
	T_STR(body(&out), "02:0a:0b:0c:0d:0e/", "macs lists the MAC");
	ask(md, GET("/latest/meta-data/network/interfaces/macs/"
		    "02:0a:0b:0c:0d:0e/local-ipv4s"), 0, &out);
	T_INT(code(&out), 200, "the deepest leaf");
	T_STR(body(&out), "169.254.169.15", "its text");
	ask(md, GET("/latest/meta-data/network/interfaces/macs/"
		    "02:0a:0b:0c:0d:0f/local-ipv4s"), 0, &out);
	T_INT(code(&out), 404, "another MAC");
	ask(md, GET("/latest/meta-data/mac"), 0, &out);
	T_STR(body(&out), "02:0a:0b:0c:0d:0e", "mac");
	spx_buf_release(&out);
	spx_imds_free(md);
}

static void test_parse(void)
{
	struct spx_imds_req *r = spx_malloc(sizeof(*r));
	char big[SPX_IMDS_REQ_MAX + 10];
	static const struct {
		const char *req;
		int rc; /* > 0: the whole text is used */
	} t[] = {
		{ "GET / HTTP/1.1\r\n\r\n", 1 },
		{ "GET / HTTP/1.1\n\n", 1 },
		{ "GET / HTTP/1.1\r\nA: b\r\n\r\n", 1 },
		{ "GET / HTTP/1.1\r\nA: b\r\n", 0 },
		{ "GET / HTTP/1.1", 0 },
		{ "GET / HTTP/2\r\n\r\n", -1 },
		{ "get / HTTP/1.1\r\n\r\n", -1 },
		{ "GET x HTTP/1.1\r\n\r\n", -1 },
		{ "GET /a b HTTP/1.1\r\n\r\n", -1 },
		{ "GET / HTTP/1.1\r\n folded\r\n\r\n", -1 },
		{ "GET / HTTP/1.1\r\nNo colon\r\n\r\n", -1 },
		{ "GET / HTTP/1.1\r\n: v\r\n\r\n", -1 },
		{ "GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", -1 },
		{ "GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 1 },
		{ "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", -1 },
		{ "GET / HTTP/1.1\r\nA: \x01\r\n\r\n", -1 },
		{ "\r\n\r\n", -1 },
	};
	size_t i;

	for (i = 0; i < SPX_ARRAY_SIZE(t); i++) {
		int rc = spx_imds_parse(t[i].req, strlen(t[i].req), r);

		T_INT(rc > 0 ? 1 : rc, t[i].rc, "parse %zu", i);
		if (rc > 0)
			T_INT(rc, strlen(t[i].req), "used all of %zu", i);
	}
	/* Two requests in one read: the first is used, the second follows. */
	T_INT(spx_imds_parse("GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
			     38, r),
	      19, "pipelined: the first");
	T_STR(r->path, "/a", "pipelined path");
	/* A request with a NUL. */
	T_INT(spx_imds_parse("GET /\0 HTTP/1.1\r\n\r\n", 20, r), -1, "a NUL");
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /", 5);
	T_INT(spx_imds_parse(big, sizeof(big), r), -1, "too long");
	T_INT(spx_imds_parse(big, SPX_IMDS_REQ_MAX - 1, r), 0,
	      "not yet too long");
	free(r);
}

int main(void)
{
	test_answers();
	test_tokens();
	test_load();
	test_hops();
	test_network();
	test_parse();
	return t_done();
}
