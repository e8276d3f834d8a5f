/* fault.h: errors in EC2's words.
 *
 * EC2 answers a failure with a code ("InvalidKeyPair.NotFound"), an HTTP
 * status and a message, each as AWS gives them. The EC2 logic in lib/ec2
 * and the gateway's handlers record such an error with spx_ec2_fault(),
 * which also records it in the ordinary error slot (spx_error) with the
 * exit class of its status, so a command-line tool calling the same
 * function prints the message and exits 1 (a NotFound or Duplicate), 100
 * (any other 4xx) or 111 (5xx). The gateway reads the code back with
 * spx_ec2_fault_code() in one place and renders the error document; a
 * failure recorded with plain spx_error() is answered by its class
 * (SPX_USAGE: 400 InvalidParameterValue; else 500 InternalError).
 */
#ifndef SPX_EC2_FAULT_H
#define SPX_EC2_FAULT_H

#define SPX_EC2_FAULT_CODEMAX 64

/* Record the error; always returns -1. */
int spx_ec2_fault(int http, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The code of the last error if spx_ec2_fault() recorded it and nothing
 * was recorded since (*http, may be NULL, gets its status); else NULL. */
const char *spx_ec2_fault_code(int *http);

/* The common ones, worded as EC2 words them. Each returns -1. */
/* MissingParameter: "The request must contain the parameter NAME". */
int spx_ec2_fault_missing(const char *name);
/* InvalidParameterValue: "Value (VALUE) for parameter NAME is invalid.
 * WHY" (WHY may be NULL). */
int spx_ec2_fault_invalid(const char *name, const char *value, const char *why);

/* Record the error a lib/ec2 function returned as a code (enum spx_ec2_rc,
 * ec2err.h) the way EC2 words it; subject is the name or id the request
 * gave, for the messages that quote one. Returns -1. */
int spx_ec2_fault_rc(int rc, const char *subject);

#endif
