/* fault.c: errors in EC2's words (see fault.h). */
#include "spx.h"

#include "ec2/ec2err.h"
#include "ec2/fault.h"

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
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return spx_api_error(class_of(http, code), http, code, "%s", msg);
}

const char *spx_ec2_fault_code(int *http)
{
	return spx_api_errcode(http);
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
	struct spx_apierr e;
	char msg[512];

	spx_ec2_error_info(rc, subject, &e, msg, sizeof(msg));
	if (e.http >= 500)
		spx_log(SPX_LOG_ERROR, "ec2: %s", spx_errmsg());
	return spx_ec2_fault(e.http, e.code, "%s", e.message);
}
