/* fuzz_cgi: spx-gw cgi's reading of a request from CGI/1.1 variables and
 * stdin (lib/http/cgi.c), through the gateway to the answer it writes.
 *
 * The input is "NAME=value" lines (the environment: REQUEST_METHOD,
 * REQUEST_URI or PATH_INFO and QUERY_STRING, CONTENT_LENGTH, HTTP_*, ...),
 * a blank line, then the body on stdin. The low bit of the first byte
 * picks the listener (EC2 or S3). The answer must be a whole CGI response:
 * a "Status:" line first. */
#include "spx.h"

#include <sys/mman.h>

#include "gwnode.h"
#include "http/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	int in, out;
	char head[16] = "";
	ssize_t got;
	struct spx_gw *gw = fuzz_gw();

	if (size > 1 << 16)
		return 0;
	clearenv();
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		char *line = spx_strndup(p, (size_t)(e - p)), *eq;

		p = nl ? nl + 1 : end;
		if (!*line) {
			free(line);
			break;
		}
		/* setenv refuses a name with '=' or an empty one: fine. */
		if ((eq = strchr(line, '=')) && eq != line) {
			*eq = '\0';
			setenv(line, eq + 1, 1);
		}
		free(line);
	}
	in = memfd_create("body", 0);
	out = memfd_create("answer", 0);
	if (in < 0 || out < 0)
		abort();
	if (p < end && write(in, p, (size_t)(end - p)) != end - p)
		abort();
	lseek(in, 0, SEEK_SET);
	if (spx_http_cgi(size && (data[0] & 1) ? SPX_HTTP_S3 : SPX_HTTP_EC2,
			 spx_gw_limits(gw), spx_gw_handler(gw), NULL, in,
			 out) == 0) {
		lseek(out, 0, SEEK_SET);
		got = read(out, head, sizeof(head) - 1);
		if (got < 8 || strncmp(head, "Status: ", 8))
			abort();
	}
	spx_error_clear();
	close(in);
	close(out);
	return 0;
}
