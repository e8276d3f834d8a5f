/* ec2q.h: the model-driven Query layer.
 *
 * scripts/gen-ec2.py turns botocore's models of EC2 (protocol "ec2") and
 * STS (protocol "query") into the tables below, for the actions listed in
 * scripts/ec2-actions.txt (ec2q_model.c, generated and committed). Two
 * generic functions work from them:
 *
 *   ec2q_parse   a request's decoded parameters -> a JSON value of the
 *                operation's input shape, with AWS's parameter errors
 *   ec2q_render  a handler's JSON answer -> the response document
 *
 * The JSON value of a shape is what botocore and the SDKs show: a
 * structure is an object keyed by member names ("KeyName", "Filters"), a
 * list an array, a map an object, a string a string, an integer or long an
 * integer, a boolean true/false, a double a real. A timestamp is a number
 * of seconds since the epoch (an integer, or a real with the fraction), and
 * the renderer also takes an ISO 8601 string as it is. A blob is its
 * base64 text: the parser checks it and the handler decodes it.
 *
 * Request keys (the "ec2" protocol, as botocore's EC2Serializer writes
 * them): a member's key is its queryName, else its locationName with the
 * first letter upper-cased, else its name; a list's elements are numbered
 * right after the list's key from 1 (Filter.1.Value.2); a map's entries are
 * KEY.entry.N.Key / .Value. The "query" protocol puts "member" (or the list
 * member's locationName) before the number and uses locationNames as they
 * are. Response elements are locationName (else the member's name), a
 * list's elements are its member's locationName (EC2: "item").
 */
#ifndef SPX_EC2Q_H
#define SPX_EC2Q_H

#include <jansson.h>

#include "spx.h"

#include "xml/xml.h"

enum ec2q_type {
	EC2Q_STRUCTURE = 1,
	EC2Q_LIST,
	EC2Q_MAP,
	EC2Q_STRING,
	EC2Q_INTEGER,
	EC2Q_LONG,
	EC2Q_BOOLEAN,
	EC2Q_DOUBLE,
	EC2Q_FLOAT,
	EC2Q_TIMESTAMP,
	EC2Q_BLOB,
};

enum ec2q_proto {
	EC2Q_PROTO_EC2,	  /* EC2's own: flattened lists, capitalised names */
	EC2Q_PROTO_QUERY, /* STS, IAM: Name.member.N, result wrappers */
};

/* A shape index that means "none". */
#define EC2Q_NONE 0xffff

/* ec2q_shape.flags */
#define EC2Q_HAS_MIN 0x01
#define EC2Q_HAS_MAX 0x02
/* An enum the handler checks against its own authority: the model's list
 * of values is not checked (it lacks newer values). */
#define EC2Q_OPEN_ENUM 0x04

/* ec2q_member.flags */
#define EC2Q_REQUIRED 0x01
#define EC2Q_IDEMPOTENCY 0x02

struct ec2q_member {
	const char *name;  /* its key in the JSON value */
	const char *query; /* its key in a request */
	const char *xml;   /* its element in a response */
	const char *param; /* its name in EC2's messages: "maxResults" */
	uint16_t shape;
	uint16_t flags;
};

struct ec2q_shape {
	const char *name;
	uint8_t type;  /* enum ec2q_type */
	uint8_t flags; /* EC2Q_HAS_MIN, ... */
	uint16_t n;    /* members (structure) or enum values (string) */
	uint16_t elem; /* list: member shape; map: key shape */
	uint16_t value; /* map: value shape */
	/* list: the element's key in a request (query protocol; NULL for
	 * EC2) and its element in a response. map: the key's. */
	const char *elem_query, *elem_xml;
	const char *value_query, *value_xml; /* map: the value's */
	/* string, blob: length; list, map: entries; integer, long: value */
	int64_t min, max;
	const struct ec2q_member *members;
	const char *const *enums;
};

struct ec2q_op {
	const char *name;
	uint16_t input, output; /* EC2Q_NONE: none */
	const char *result;	/* query protocol: the result's wrapper */
};

struct ec2q_service {
	const char *name; /* "ec2", "sts" */
	enum ec2q_proto proto;
	const char *version; /* the Version parameter, "2016-11-15" */
	const char *ns;	     /* the responses' XML namespace */
	const struct ec2q_shape *shapes;
	size_t n_shapes;
	const struct ec2q_op *ops;
	size_t n_ops;
};

/* Bounds on what ec2q_parse accepts from a request, beyond the gateway's
 * own cap on the number of parameters. */
#define EC2Q_MAX_KEY 512     /* bytes in one parameter's name */
#define EC2Q_MAX_DEPTH 12    /* components in one parameter's name */
#define EC2Q_MAX_INDEX 100000 /* the N of Name.N */

/* The operation called name, or NULL. */
const struct ec2q_op *ec2q_op_find(const struct ec2q_service *svc,
				   const char *name);
const struct ec2q_shape *ec2q_shape(const struct ec2q_service *svc,
				    uint16_t i);
/* The index of the shape called name, or EC2Q_NONE. */
uint16_t ec2q_shape_find(const struct ec2q_service *svc, const char *name);
/* The member of a structure shape called name (its JSON key), or NULL. */
const struct ec2q_member *ec2q_member_find(const struct ec2q_service *svc,
					   const struct ec2q_shape *s,
					   const char *name);

/* Drop from v, a value of shape, every member the shape does not have,
 * recursively (the renderer refuses them): for items made for a newer
 * model than the generated tables (the instance type catalogue carries
 * members botocore added after 2023). */
void ec2q_prune(const struct ec2q_service *svc, uint16_t shape, json_t *v);

/* Turn params (decoded names and values; Action, Version and SigV4's query
 * parameters are skipped) into *out, a new object of op's input shape (an
 * empty object when op has none). On failure returns -1 with an EC2 error
 * recorded (ec2/fault.h), *out NULL:
 *   UnknownParameter       a key that is not in the shape, a malformed or
 *                          out-of-range index, a key given twice
 *   InvalidParameterValue  a value of the wrong type, out of range, not in
 *                          the enum, a list with too many or few elements
 *   MissingParameter       a required member absent
 * Errors are reported for the first offending parameter in the order the
 * request gives them; MissingParameter after every key was read. */
int ec2q_parse(const struct ec2q_service *svc, const struct ec2q_op *op,
	       const struct spx_kvlist *params, json_t **out);

/* Render op's answer (NULL, or an object of its output shape; members the
 * shape does not have are a bug and fail) as the response document into
 * x, which holds the XML declaration and nothing else yet:
 *   ec2:   <OpResponse xmlns="NS"><requestId>ID</requestId>members...
 *          (an op without output shape: <return>true</return>)
 *   query: <OpResponse xmlns="NS"><OpResult>members...</OpResult>
 *          <ResponseMetadata><RequestId>ID</RequestId>...
 * Returns 0, or -1 with spx_error (SPX_FAIL: a value that does not fit
 * its shape). */
int ec2q_render(struct spx_xml *x, const struct ec2q_service *svc,
		const struct ec2q_op *op, const json_t *answer,
		const char *reqid);

/* A timestamp as EC2 writes it: "2023-01-02T03:04:05.000Z" (milliseconds,
 * UTC) into out (at least 25 bytes). t: seconds since the epoch. */
void ec2q_time_format(double t, char *out, size_t outsz);
/* Parse an ISO 8601 date-time ("2023-01-02T03:04:05Z", with an optional
 * fraction and an optional +hh:mm offset) or a number of seconds since the
 * epoch. Returns 0 with *t, or -1 (no error recorded). */
int ec2q_time_parse(const char *s, double *t);

#endif
