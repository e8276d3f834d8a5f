/* ec2err.c: lib/ec2 failure codes to AWS errors (contract in ec2err.h). */
#include "spx.h"

#include "ec2/ec2err.h"

int spx_ec2_status(int rc)
{
	switch (rc) {
	case SPX_EC2_OK:
		return SPX_OK;
	case SPX_EC2_KEYPAIR_DUPLICATE:
	case SPX_EC2_KEYPAIR_NOTFOUND:
		return SPX_NO;
	case SPX_EC2_INVALID:
	case SPX_EC2_KEY_FORMAT:
	case SPX_EC2_TAG_LIMIT:
		return SPX_USAGE;
	default:
		return SPX_FAIL;
	}
}

int spx_ec2_error(int rc, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	spx_error(spx_ec2_status(rc), "%s", msg);
	return rc;
}

void spx_ec2_error_info(int rc, const char *subject, struct spx_apierr *out,
			char *buf, size_t bufsz)
{
	const char *s = subject ? subject : "";

	out->message = buf;

	out->http = 400;
	switch (rc) {
	case SPX_EC2_INVALID:
		out->code = "InvalidParameterValue";
		snprintf(buf, bufsz, "%s", spx_errmsg());
		return;
	case SPX_EC2_TAG_LIMIT:
		out->code = "TagLimitExceeded";
		snprintf(buf, bufsz, "%s", spx_errmsg());
		return;
	case SPX_EC2_KEYPAIR_DUPLICATE:
		out->code = "InvalidKeyPair.Duplicate";
		snprintf(buf, bufsz,
			 "The keypair '%.400s' already exists.", s);
		return;
	case SPX_EC2_KEYPAIR_NOTFOUND:
		out->code = "InvalidKeyPair.NotFound";
		snprintf(buf, bufsz,
			 "The key pair '%.400s' does not exist", s);
		return;
	case SPX_EC2_KEY_FORMAT:
		out->code = "InvalidKey.Format";
		snprintf(buf, bufsz,
			 "Key is not in valid OpenSSH public key format");
		return;
	default:
		out->http = 500;
		out->code = "InternalError";
		snprintf(buf, bufsz,
			 "An internal error has occurred");
		return;
	}
}
