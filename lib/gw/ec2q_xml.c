/* ec2q_xml.c: a handler's JSON answer -> the response document, along the
 * operation's output shape (see ec2q.h); and EC2's timestamps. */
#include "spx.h"

#include <math.h>

#include "gw/ec2q.h"

void ec2q_time_format(double t, char *out, size_t outsz)
{
	time_t secs = (time_t)floor(t);
	long ms = lround((t - floor(t)) * 1000.0);
	struct tm tm;

	if (ms >= 1000) {
		secs++;
		ms -= 1000;
	}
	gmtime_r(&secs, &tm);
	snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ms);
}

static int digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

int ec2q_time_parse(const char *s, double *t)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30,
				     31, 31, 30, 31, 30, 31 };
	const char *p = s;
	struct tm tm = { 0 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0;
	double frac = 0, scale = 0.1;
	time_t secs;

	/* Seconds since the epoch: digits, an optional fraction. */
	if (*p >= '0' && *p <= '9' && !strchr(p, '-') && !strchr(p, ':')) {
		char *end;

		errno = 0;
		*t = strtod(p, &end);
		return *end || errno || !isfinite(*t) ? -1 : 0;
	}
	if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) ||
	    *p++ != '-' || digits(&p, 2, &d) || (*p != 'T' && *p != 't'))
		return -1;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) ||
	    *p++ != ':' || digits(&p, 2, &sec))
		return -1;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -1;
		for (int n = 0; *p >= '0' && *p <= '9'; p++, n++) {
			if (n > 9)
				return -1;
			frac += (*p - '0') * scale;
			scale /= 10;
		}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1;

		if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) ||
		    oh > 23 || om > 59)
			return -1;
		oh *= sign;
		om *= sign;
	} else {
		return -1;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
	    mi > 59 || sec > 60)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	secs = timegm(&tm);
	*t = (double)secs - oh * 3600 - om * 60 + frac;
	return 0;
}

static int bad(const struct ec2q_shape *s, const char *elem, const char *why)
{
	return spx_error(SPX_FAIL, "answer: <%s> (%s): %s", elem, s->name, why);
}

static int number(struct spx_xml *x, const char *elem, double d)
{
	char b[40];

	/* The shortest form that reads back as the same double. */
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(b, sizeof(b), "%.*g", prec, d);
		if (strtod(b, NULL) == d)
			break;
	}
	return spx_xml_elem(x, elem, b);
}

static int value(struct spx_xml *x, const struct ec2q_service *svc,
		 const struct ec2q_shape *s, const char *elem,
		 const json_t *v);

static int members(struct spx_xml *x, const struct ec2q_service *svc,
		   const struct ec2q_shape *s, const char *elem,
		   const json_t *v)
{
	const char *k;
	json_t *c;

	if (!json_is_object(v))
		return bad(s, elem, "not an object");
	json_object_foreach((json_t *)v, k, c)
		if (!ec2q_member_find(svc, s, k)) {
			spx_error(SPX_FAIL, "answer: <%s> (%s): no member %s",
				  elem, s->name, k);
			return -1;
		}
	for (size_t i = 0; i < s->n; i++) {
		const struct ec2q_member *m = &s->members[i];

		c = json_object_get(v, m->name);
		if (c && value(x, svc, ec2q_shape(svc, m->shape), m->xml, c) < 0)
			return -1;
	}
	return 0;
}

static int value(struct spx_xml *x, const struct ec2q_service *svc,
		 const struct ec2q_shape *s, const char *elem,
		 const json_t *v)
{
	char tb[40];
	size_t i;
	json_t *e;

	if (!s)
		return spx_error(SPX_FAIL, "answer: <%s>: bad shape", elem);
	if (json_is_null(v))
		return 0; /* absent */
	switch (s->type) {
	case EC2Q_STRUCTURE:
		spx_xml_open(x, elem);
		if (members(x, svc, s, elem, v) < 0)
			return -1;
		return spx_xml_close(x);
	case EC2Q_LIST:
		if (!json_is_array(v))
			return bad(s, elem, "not an array");
		spx_xml_open(x, elem);
		json_array_foreach(v, i, e)
			if (value(x, svc, ec2q_shape(svc, s->elem), s->elem_xml,
				  e) < 0)
				return -1;
		return spx_xml_close(x);
	case EC2Q_MAP: {
		const char *k;

		if (!json_is_object(v))
			return bad(s, elem, "not an object");
		spx_xml_open(x, elem);
		json_object_foreach((json_t *)v, k, e) {
			spx_xml_open(x, "entry");
			spx_xml_elem(x, s->elem_xml, k);
			if (value(x, svc, ec2q_shape(svc, s->value),
				  s->value_xml, e) < 0)
				return -1;
			spx_xml_close(x);
		}
		return spx_xml_close(x);
	}
	case EC2Q_STRING:
	case EC2Q_BLOB: /* its base64 text */
		if (!json_is_string(v))
			return bad(s, elem, "not a string");
		return spx_xml_elemn(x, elem, json_string_value(v),
				     json_string_length(v));
	case EC2Q_INTEGER:
	case EC2Q_LONG:
		if (!json_is_integer(v))
			return bad(s, elem, "not an integer");
		return spx_xml_elem_i64(x, elem, json_integer_value(v));
	case EC2Q_BOOLEAN:
		if (!json_is_boolean(v))
			return bad(s, elem, "not a boolean");
		return spx_xml_elem_bool(x, elem, json_is_true(v));
	case EC2Q_DOUBLE:
	case EC2Q_FLOAT:
		if (!json_is_number(v))
			return bad(s, elem, "not a number");
		return number(x, elem, json_number_value(v));
	case EC2Q_TIMESTAMP:
		if (json_is_string(v))
			return spx_xml_elem(x, elem, json_string_value(v));
		if (!json_is_number(v))
			return bad(s, elem, "not a timestamp");
		ec2q_time_format(json_number_value(v), tb, sizeof(tb));
		return spx_xml_elem(x, elem, tb);
	default:
		return bad(s, elem, "unknown type");
	}
}

int ec2q_render(struct spx_xml *x, const struct ec2q_service *svc,
		const struct ec2q_op *op, const json_t *answer,
		const char *reqid)
{
	const struct ec2q_shape *out = op->output == EC2Q_NONE
					       ? NULL
					       : ec2q_shape(svc, op->output);
	char name[128];

	snprintf(name, sizeof(name), "%sResponse", op->name);
	spx_xml_open_ns(x, name, svc->ns);
	if (svc->proto == EC2Q_PROTO_EC2) {
		spx_xml_elem(x, "requestId", reqid);
		if (!out)
			spx_xml_elem(x, "return", "true");
		else if (answer && members(x, svc, out, name, answer) < 0)
			return -1;
	} else {
		char res[128];

		snprintf(res, sizeof(res), "%sResult", op->name);
		spx_xml_open(x, op->result ? op->result : res);
		if (out && answer && members(x, svc, out, name, answer) < 0)
			return -1;
		spx_xml_close(x);
		spx_xml_open(x, "ResponseMetadata");
		spx_xml_elem(x, "RequestId", reqid);
		spx_xml_close(x);
	}
	spx_xml_close(x);
	return x->failed ? -1 : 0;
}
