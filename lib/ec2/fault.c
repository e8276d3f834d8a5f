/* fault.c: errors in EC2's words (see fault.h). */
#include "spx.h"

#include "ec2/ec2err.h"
#include "ec2/fault.h"

static _Thread_local struct {
	int http;
	char code[SPX_EC2_FAULT_CODEMAX];
	char msg[1024];
} last;

static int class_of(int http, const char *code)
{
	size_t n = strlen(code);

	if (http >= 500)
		return SPX_FAIL;
	if ((n > 9 && !strcmp(code + n - 9, ".NotFound")) ||
	    (n > 10 && !strcmp(code + n - 10, ".Duplicate")))
		return SPX_NO;
	return SPX_USAGE;
}

int spx_ec2_fault(int http, const char *code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last.msg, sizeof(last.msg), fmt, ap);
	va_end(ap);
	snprintf(last.code, sizeof(last.code), "%s", code);
	last.http = http;
	return spx_error(class_of(http, code), "%s", last.msg);
}

const char *spx_ec2_fault_code(int *http)
{
	/* The slot is ours only while the message is still ours: anything
	 * recorded with spx_error() since has replaced it. */
	if (!last.code[0] || strcmp(spx_errmsg(), last.msg))
		return NULL;
	if (http)
		*http = last.http;
	return last.code;
}

int spx_ec2_fault_missing(const char *name)
{
	return spx_ec2_fault(400, "MissingParameter",
			     "The request must contain the parameter %s", name);
}

int spx_ec2_fault_invalid(const char *name, const char *value, const char *why)
{
	return spx_ec2_fault(400, "InvalidParameterValue",
			     "Value (%s) for parameter %s is invalid.%s%s",
			     value, name, why ? " " : "", why ? why : "");
}

int spx_ec2_fault_rc(int rc, const char *subject)
{
	struct spx_ec2_err e;

	spx_ec2_error_info(rc, subject, &e);
	if (e.http >= 500)
		spx_log(SPX_LOG_ERROR, "ec2: %s", spx_errmsg());
	return spx_ec2_fault(e.http, e.code, "%s", e.message);
}
