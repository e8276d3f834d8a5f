/* ec2q_parse.c: a Query request's parameters -> the JSON value of the
 * operation's input shape (see ec2q.h).
 *
 * Two passes. The first reads each parameter in request order, walks its
 * key one component at a time down the shapes, checks and converts the
 * value and puts it in a tree of JSON objects in which a list or map is
 * still an object keyed by the request's own element numbers. The second
 * walks the tree along the shapes, turns those objects into arrays (in
 * numeric order) and maps, checks element counts and required members.
 * Nothing recurses on the request's input beyond EC2Q_MAX_DEPTH components
 * and the depth of the (non-recursive) input shapes. */
#include "spx.h"

#include <math.h>

#include "checksum.h"
#include "ec2/fault.h"
#include "gw/ec2q.h"
#include "utf8.h"

const struct ec2q_op *ec2q_op_find(const struct ec2q_service *svc,
				   const char *name)
{
	for (size_t i = 0; i < svc->n_ops; i++)
		if (!strcmp(svc->ops[i].name, name))
			return &svc->ops[i];
	return NULL;
}

const struct ec2q_shape *ec2q_shape(const struct ec2q_service *svc,
				    uint16_t i)
{
	return i < svc->n_shapes ? &svc->shapes[i] : NULL;
}

uint16_t ec2q_shape_find(const struct ec2q_service *svc, const char *name)
{
	for (size_t i = 0; i < svc->n_shapes; i++)
		if (!strcmp(svc->shapes[i].name, name))
			return (uint16_t)i;
	return EC2Q_NONE;
}

const struct ec2q_member *ec2q_member_find(const struct ec2q_service *svc,
					   const struct ec2q_shape *s,
					   const char *name)
{
	(void)svc;
	if (s->type != EC2Q_STRUCTURE)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->members[i].name, name))
			return &s->members[i];
	return NULL;
}

void ec2q_prune(const struct ec2q_service *svc, uint16_t shape, json_t *v)
{
	const struct ec2q_shape *s = ec2q_shape(svc, shape);
	const char *k;
	json_t *c;
	void *tmp;
	size_t i;

	if (!s)
		return;
	switch (s->type) {
	case EC2Q_STRUCTURE:
		json_object_foreach_safe(v, tmp, k, c) {
			const struct ec2q_member *m = ec2q_member_find(svc, s, k);

			if (!m)
				json_object_del(v, k);
			else
				ec2q_prune(svc, m->shape, c);
		}
		break;
	case EC2Q_LIST:
		json_array_foreach(v, i, c)
			ec2q_prune(svc, s->elem, c);
		break;
	case EC2Q_MAP:
		json_object_foreach(v, k, c)
			ec2q_prune(svc, s->value, c);
		break;
	default:
		break;
	}
}

/* Parameters that are not the operation's: the API's own and SigV4's
 * presigned query parameters. */
static bool skipped(const char *k)
{
	static const char *const names[] = {
		"Action",	     "Version",		"X-Amz-Algorithm",
		"X-Amz-Credential",  "X-Amz-Date",	"X-Amz-Expires",
		"X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token",
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(names); i++)
		if (!strcmp(k, names[i]))
			return true;
	return false;
}

static int unknown(const char *key)
{
	return spx_ec2_fault(400, "UnknownParameter",
			     "The parameter %s is not recognized", key);
}

/* N of Name.N: 1..EC2Q_MAX_INDEX, decimal, no sign, no leading zero. */
static long parse_index(const char *s, size_t n)
{
	long v = 0;

	if (n == 0 || n > 6 || s[0] == '0')
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v <= EC2Q_MAX_INDEX ? v : -1;
}

static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	const char *p = s;
	bool neg = false;
	uint64_t v = 0, lim;

	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	if (!*p)
		return -1;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (v > (lim - (uint64_t)(*p - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (neg)
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		*out = (int64_t)v;
	return *out < lo || *out > hi ? -1 : 0;
}

static int range_error(const char *param, const char *value,
		       const struct ec2q_shape *s, int64_t v)
{
	char why[128];

	/* EC2's own words, "greater than" for an inclusive minimum. */
	if ((s->flags & EC2Q_HAS_MIN) && v < s->min)
		snprintf(why, sizeof(why), "Expecting a value greater than %lld.",
			 (long long)s->min);
	else
		snprintf(why, sizeof(why),
			 "Expecting a value less than or equal to %lld.",
			 (long long)s->max);
	return spx_ec2_fault(400, "InvalidParameterValue",
			     "Value ( %s ) for parameter %s is invalid. %s",
			     value, param, why);
}

static int enum_error(const char *param, const char *value,
		      const struct ec2q_shape *s)
{
	struct spx_buf b = SPX_BUF_INIT;
	int rc;

	for (size_t i = 0; i < s->n; i++)
		spx_buf_addf(&b, "%s%s", i ? ", " : "", s->enums[i]);
	rc = spx_ec2_fault(400, "InvalidParameterValue",
			   "Value (%s) for parameter %s is invalid. Valid "
			   "values are: %s",
			   value, param, b.p);
	spx_buf_release(&b);
	return rc;
}

/* The value of a scalar shape; NULL after recording the error. */
static json_t *scalar(const struct ec2q_shape *s, const char *param,
		      const char *v)
{
	size_t len = strlen(v);
	int64_t i;
	double d;
	char *end;

	switch (s->type) {
	case EC2Q_STRING: {
		ssize_t chars = spx_utf8_count(v, len);

		if (chars < 0) {
			spx_ec2_fault_invalid(param, v, "It is not valid UTF-8.");
			return NULL;
		}
		if ((s->flags & EC2Q_HAS_MIN) && chars < s->min) {
			char why[96];

			snprintf(why, sizeof(why),
				 chars ? "It must be at least %lld characters "
					 "long."
				       : "The value cannot be empty",
				 (long long)s->min);
			spx_ec2_fault_invalid(param, v, why);
			return NULL;
		}
		if ((s->flags & EC2Q_HAS_MAX) && chars > s->max) {
			char why[96];

			snprintf(why, sizeof(why),
				 "It must be at most %lld characters long.",
				 (long long)s->max);
			spx_ec2_fault_invalid(param, v, why);
			return NULL;
		}
		if (s->enums && !(s->flags & EC2Q_OPEN_ENUM)) {
			size_t k;

			for (k = 0; k < s->n && strcmp(s->enums[k], v); k++)
				;
			if (k == s->n) {
				enum_error(param, v, s);
				return NULL;
			}
		}
		return json_stringn(v, len);
	}
	case EC2Q_INTEGER:
	case EC2Q_LONG: {
		int64_t lo = s->type == EC2Q_INTEGER ? INT32_MIN : INT64_MIN;
		int64_t hi = s->type == EC2Q_INTEGER ? INT32_MAX : INT64_MAX;

		if (parse_int(v, lo, hi, &i) < 0) {
			spx_ec2_fault_invalid(param, v, "It is not a valid integer.");
			return NULL;
		}
		if (((s->flags & EC2Q_HAS_MIN) && i < s->min) ||
		    ((s->flags & EC2Q_HAS_MAX) && i > s->max)) {
			range_error(param, v, s, i);
			return NULL;
		}
		return json_integer((json_int_t)i);
	}
	case EC2Q_BOOLEAN:
		if (!strcasecmp(v, "true"))
			return json_true();
		if (!strcasecmp(v, "false"))
			return json_false();
		spx_ec2_fault_invalid(param, v, "It must be true or false.");
		return NULL;
	case EC2Q_DOUBLE:
	case EC2Q_FLOAT:
		errno = 0;
		d = *v && !strchr(" \t\n", *v) ? strtod(v, &end) : 0;
		if (!*v || strchr(" \t\n", *v) || *end || errno || !isfinite(d)) {
			spx_ec2_fault_invalid(param, v, "It is not a valid number.");
			return NULL;
		}
		return json_real(d);
	case EC2Q_TIMESTAMP:
		if (ec2q_time_parse(v, &d) < 0) {
			spx_ec2_fault_invalid(param, v,
					"It is not a valid ISO 8601 date-time.");
			return NULL;
		}
		if (d == floor(d) && fabs(d) < 1e15)
			return json_integer((json_int_t)d);
		return json_real(d);
	case EC2Q_BLOB: {
		/* Checked here, decoded by the handler that wants it. */
		size_t n = 0;
		unsigned char *tmp = spx_malloc(len / 4 * 3 + 3);
		int rc = spx_base64_decode(v, len, tmp, len / 4 * 3 + 3, &n);

		free(tmp);
		if (rc < 0) {
			spx_ec2_fault_invalid(param, "...", "It is not valid base64.");
			return NULL;
		}
		if (((s->flags & EC2Q_HAS_MIN) && (int64_t)n < s->min) ||
		    ((s->flags & EC2Q_HAS_MAX) && (int64_t)n > s->max)) {
			spx_ec2_fault_invalid(param, "...",
					"Its length is out of range.");
			return NULL;
		}
		return json_stringn(v, len);
	}
	default:
		spx_ec2_fault(500, "InternalError",
			      "shape %s: type %d is not a scalar", s->name,
			      s->type);
		return NULL;
	}
}

static bool is_container(const struct ec2q_shape *s)
{
	return s->type == EC2Q_STRUCTURE || s->type == EC2Q_LIST ||
	       s->type == EC2Q_MAP;
}

/* The child named name of node, made (an object) if absent. NULL with an
 * error when it exists and is not an object: a scalar was already put
 * where a container is needed (Name=x and Name.1=y). */
static json_t *child_obj(json_t *node, const char *name, const char *key)
{
	json_t *c = json_object_get(node, name);

	if (!c) {
		c = json_object();
		json_object_set_new(node, name, c);
		return c;
	}
	if (!json_is_object(c)) {
		unknown(key);
		return NULL;
	}
	return c;
}

/* Put one parameter into the tree. */
static int insert(const struct ec2q_service *svc, json_t *root,
		  const struct ec2q_shape *s, const char *key, const char *v)
{
	const char *p = key, *param = key;
	json_t *node = root;
	int depth = 0;

	for (;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		bool last = !dot;
		char comp[EC2Q_MAX_KEY + 1], idx[24];
		const struct ec2q_shape *cs;
		const char *name;
		json_t *val;
		long at;

		if (++depth > EC2Q_MAX_DEPTH || n == 0)
			return unknown(key);
		memcpy(comp, p, n);
		comp[n] = '\0';
		switch (s->type) {
		case EC2Q_STRUCTURE: {
			const struct ec2q_member *m = NULL;

			for (size_t i = 0; i < s->n && !m; i++)
				if (!strcmp(s->members[i].query, comp))
					m = &s->members[i];
			if (!m)
				return unknown(key);
			cs = ec2q_shape(svc, m->shape);
			name = m->name;
			param = m->param;
			break;
		}
		case EC2Q_LIST:
			if (s->elem_query) {
				/* query protocol: Name.member.N */
				if (strcmp(comp, s->elem_query) || last)
					return unknown(key);
				p = dot + 1;
				dot = strchr(p, '.');
				n = dot ? (size_t)(dot - p) : strlen(p);
				last = !dot;
			}
			at = parse_index(p, n);
			if (at < 0)
				return unknown(key);
			snprintf(idx, sizeof(idx), "%ld", at);
			cs = ec2q_shape(svc, s->elem);
			name = idx;
			break;
		case EC2Q_MAP: {
			json_t *entry;

			/* Name.entry.N.Key / Name.entry.N.Value */
			if (strcmp(comp, "entry") || last)
				return unknown(key);
			p = dot + 1;
			dot = strchr(p, '.');
			n = dot ? (size_t)(dot - p) : strlen(p);
			at = dot ? parse_index(p, n) : -1;
			if (at < 0)
				return unknown(key);
			snprintf(idx, sizeof(idx), "%ld", at);
			entry = child_obj(node, idx, key);
			if (!entry)
				return -1;
			p = dot + 1;
			if (strchr(p, '.'))
				return unknown(key);
			if (!strcmp(p, s->elem_query)) {
				cs = ec2q_shape(svc, s->elem);
				name = "k";
			} else if (!strcmp(p, s->value_query)) {
				cs = ec2q_shape(svc, s->value);
				name = "v";
			} else {
				return unknown(key);
			}
			if (is_container(cs))
				return unknown(key); /* scalar keys and values */
			node = entry;
			last = true;
			break;
		}
		default:
			return unknown(key);
		}
		if (!cs)
			return spx_ec2_fault(500, "InternalError",
					     "model: bad shape index");
		if (last) {
			if (is_container(cs)) {
				/* Name= with nothing after: an empty list (the
				 * query protocol's way to send one). */
				if (cs->type == EC2Q_STRUCTURE || *v)
					return unknown(key);
				return child_obj(node, name, key) ? 0 : -1;
			}
			if (json_object_get(node, name))
				return spx_ec2_fault(
					400, "InvalidParameterValue",
					"The parameter %s is given more than once",
					key);
			val = scalar(cs, param, v);
			if (!val)
				return -1;
			json_object_set_new(node, name, val);
			return 0;
		}
		if (!is_container(cs))
			return unknown(key);
		node = child_obj(node, name, key);
		if (!node)
			return -1;
		s = cs;
		p = dot + 1;
	}
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

static int count_error(const char *path, const struct ec2q_shape *s,
		       size_t n)
{
	if ((s->flags & EC2Q_HAS_MIN) && (int64_t)n < s->min)
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "The parameter %s must have at least "
				     "%lld values",
				     path, (long long)s->min);
	return spx_ec2_fault(400, "InvalidParameterValue",
			     "The parameter %s may have at most %lld values",
			     path, (long long)s->max);
}

/* Turn the tree under node (of shape s, reached by the request key path)
 * into its final value: *out, a new reference. */
static int finish(const struct ec2q_service *svc, json_t *node,
		  const struct ec2q_shape *s, const char *path, json_t **out)
{
	*out = NULL;
	if (!is_container(s)) {
		*out = json_incref(node);
		return 0;
	}
	if (s->type == EC2Q_STRUCTURE) {
		json_t *obj = json_object();

		for (size_t i = 0; i < s->n; i++) {
			const struct ec2q_member *m = &s->members[i];
			json_t *c = json_object_get(node, m->name), *v;
			char *sub = spx_xprintf("%s%s%s", path, *path ? "." : "",
						m->query);
			int rc;

			if (!c) {
				rc = (m->flags & EC2Q_REQUIRED)
					     ? spx_ec2_fault_missing(sub)
					     : 0;
			} else {
				rc = finish(svc, c, ec2q_shape(svc, m->shape),
					    sub, &v);
				if (rc == 0)
					json_object_set_new(obj, m->name, v);
			}
			free(sub);
			if (rc < 0) {
				json_decref(obj);
				return -1;
			}
		}
		*out = obj;
		return 0;
	}

	/* A list or map: the object keyed by element numbers, in order. */
	size_t n = json_object_size(node), k = 0;
	long *idx = spx_calloc(n ? n : 1, sizeof(*idx));
	const char *name;
	json_t *c, *res;
	int rc = 0;

	json_object_foreach(node, name, c)
		idx[k++] = strtol(name, NULL, 10);
	qsort(idx, n, sizeof(*idx), cmp_long);
	if (((s->flags & EC2Q_HAS_MIN) && (int64_t)n < s->min) ||
	    ((s->flags & EC2Q_HAS_MAX) && (int64_t)n > s->max)) {
		free(idx);
		return count_error(path, s, n);
	}
	res = s->type == EC2Q_LIST ? json_array() : json_object();
	for (k = 0; k < n && rc == 0; k++) {
		char num[24], *sub;
		json_t *v = NULL;

		snprintf(num, sizeof(num), "%ld", idx[k]);
		c = json_object_get(node, num);
		if (s->type == EC2Q_LIST) {
			sub = s->elem_query ? spx_xprintf("%s.%s.%s", path,
							  s->elem_query, num)
					    : spx_xprintf("%s.%s", path, num);
			rc = finish(svc, c, ec2q_shape(svc, s->elem), sub, &v);
			if (rc == 0)
				json_array_append_new(res, v);
		} else {
			json_t *mk = json_object_get(c, "k");
			json_t *mv = json_object_get(c, "v");

			sub = spx_xprintf("%s.entry.%s.%s", path, num,
					  mk ? s->value_query : s->elem_query);
			if (!mk || !mv)
				rc = spx_ec2_fault_missing(sub);
			else if (json_object_get(res, json_string_value(mk)))
				rc = spx_ec2_fault(400, "InvalidParameterValue",
						   "The key %s is given more "
						   "than once in %s",
						   json_string_value(mk), path);
			else
				json_object_set(res, json_string_value(mk), mv);
		}
		free(sub);
	}
	free(idx);
	if (rc < 0) {
		json_decref(res);
		return -1;
	}
	*out = res;
	return 0;
}

int ec2q_parse(const struct ec2q_service *svc, const struct ec2q_op *op,
	       const struct spx_kvlist *params, json_t **out)
{
	const struct ec2q_shape *in = op->input == EC2Q_NONE
					      ? NULL
					      : ec2q_shape(svc, op->input);
	json_t *tree = json_object();
	int rc = 0;

	*out = NULL;
	for (size_t i = 0; i < params->n && rc == 0; i++) {
		const char *k = params->v[i].k;

		if (skipped(k))
			continue;
		if (!in || strlen(k) > EC2Q_MAX_KEY)
			rc = unknown(k);
		else
			rc = insert(svc, tree, in, k, params->v[i].v);
	}
	if (rc == 0 && in)
		rc = finish(svc, tree, in, "", out);
	else if (rc == 0)
		*out = json_object();
	json_decref(tree);
	return rc;
}
