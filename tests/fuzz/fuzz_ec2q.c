/* fuzz_ec2q: the model-driven Query parser on hostile forms.
 *
 * The first byte picks an operation of the generated EC2 or STS model;
 * the rest is a form body. Whatever ec2q_parse accepts must be a value of
 * the operation's input shape: it is rendered back along that shape (which
 * fails on anything that does not fit) and dumped as JSON (which fails on
 * invalid UTF-8). A refusal must carry an EC2 error code. */
#include "spx.h"

#include "ec2/fault.h"
#include "gw/ec2q.h"
#include "gw/ec2q_model.h"
#include "http/query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ec2q_service *svc;
	const struct ec2q_op *op;
	struct spx_kvlist params = SPX_KVLIST_INIT;
	json_t *out = NULL;
	size_t nops;

	if (size < 1)
		return 0;
	nops = ec2q_ec2.n_ops + ec2q_sts.n_ops;
	if (data[0] % nops < ec2q_ec2.n_ops) {
		svc = &ec2q_ec2;
		op = &svc->ops[data[0] % nops];
	} else {
		svc = &ec2q_sts;
		op = &svc->ops[data[0] % nops - ec2q_ec2.n_ops];
	}
	if (spx_query_parse_max((const char *)data + 1, size - 1, SPX_URI_PLUS,
				2000, 65536, &params) < 0) {
		spx_kv_free(&params);
		return 0;
	}
	if (ec2q_parse(svc, op, &params, &out) < 0) {
		if (out || !spx_ec2_fault_code(NULL))
			abort();
	} else {
		struct ec2q_op echo = { op->name, op->input, op->input, NULL };
		struct spx_buf b = SPX_BUF_INIT;
		struct spx_xml x;
		char *s;

		if (!json_is_object(out))
			abort();
		spx_xml_begin_buf(&x, &b);
		if (op->input != EC2Q_NONE &&
		    (ec2q_render(&x, svc, &echo, out, "r") < 0 ||
		     spx_xml_end(&x) < 0)) {
			fprintf(stderr, "render: %s\n", spx_errmsg());
			abort();
		}
		s = json_dumps(out, JSON_COMPACT);
		if (!s)
			abort();
		free(s);
		spx_buf_release(&b);
	}
	json_decref(out);
	spx_kv_free(&params);
	return 0;
}
