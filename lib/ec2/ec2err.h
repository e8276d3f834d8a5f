/* ec2err.h: the failure codes of lib/ec2 and the AWS errors they become.
 *
 * Every lib/ec2 function returns 0 or one of the negative codes below and,
 * on failure, records a message with spx_error() (read it back with
 * spx_errmsg()) whose exit status is spx_ec2_status(rc). SPX_EC2_FAIL is
 * -1, so `return spx_error(SPX_FAIL, ...)` is a valid failure of every
 * function here.
 *
 * The gateway turns a code into an EC2 error document with
 * spx_ec2_error_info(): the AWS error code, the HTTP status and the
 * message AWS words for it. For SPX_EC2_INVALID and SPX_EC2_TAG_LIMIT the
 * recorded spx_errmsg() is already worded as AWS words it (it names the
 * parameter and the reason) and is used as the message; the other codes
 * have a fixed wording that names the subject the request gave.
 */
#ifndef SPX_EC2_EC2ERR_H
#define SPX_EC2_EC2ERR_H

enum spx_ec2_rc {
	SPX_EC2_OK = 0,
	/* InternalError, 500: I/O, a corrupt record, OpenSSL failed. */
	SPX_EC2_FAIL = -1,
	/* InvalidParameterValue, 400: a bad name, tag or value. */
	SPX_EC2_INVALID = -2,
	/* InvalidKeyPair.Duplicate, 400: the account has that key name. */
	SPX_EC2_KEYPAIR_DUPLICATE = -3,
	/* InvalidKeyPair.NotFound, 400: no such key pair name or id. */
	SPX_EC2_KEYPAIR_NOTFOUND = -4,
	/* InvalidKey.Format, 400: public key material we cannot accept. */
	SPX_EC2_KEY_FORMAT = -5,
	/* TagLimitExceeded, 400: more than 50 tags on a resource. */
	SPX_EC2_TAG_LIMIT = -6,
};

/* The exit status (SPX_OK, SPX_NO, SPX_USAGE, SPX_FAIL) of a code:
 * not-found and duplicate are SPX_NO, the other client errors SPX_USAGE. */
int spx_ec2_status(int rc);

/* Record a failure of class rc (an spx_ec2_rc) with spx_error() at
 * spx_ec2_status(rc) and return rc. */
int spx_ec2_error(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Fill *out (an spx_apierr: status, code, message) for rc, a negative
 * code a lib/ec2 function returned on this thread just now (the message
 * may come from spx_errmsg()); out->message points into buf, which holds
 * bufsz bytes. subject is the key name or id the request named, for the
 * messages that quote one; NULL is allowed. An unknown code is reported
 * as SPX_EC2_FAIL. */
void spx_ec2_error_info(int rc, const char *subject, struct spx_apierr *out,
			char *buf, size_t bufsz);

#endif
