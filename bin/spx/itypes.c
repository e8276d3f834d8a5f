/* spx get instance-types: the instance type catalogue (lib/ec2/itype.h),
 * the same entries DescribeInstanceTypes answers with. */
#include "spx.h"

#include "cli.h"
#include "ec2/itype.h"
#include "print.h"

static void row(struct spx_table *t, const struct spx_itype *it)
{
	char gpus[64];

	if (it->gpu.count)
		snprintf(gpus, sizeof(gpus), "%d x %s", it->gpu.count,
			 it->gpu.name);
	else
		snprintf(gpus, sizeof(gpus), "-");
	spx_table_row(t);
	spx_table_str(t, it->name);
	spx_table_int(t, it->vcpus);
	spx_table_int(t, it->memory_mib);
	spx_table_str(t, gpus);
	spx_table_str(t, it->network_performance);
}

int cmd_get_instance_types(const struct spx_args *a)
{
	struct spx_table *t;
	int rc;

	/* Names given: exactly those, in the order given. */
	for (int i = 0; i < a->argc; i++)
		if (!spx_itype_find(a->argv[i])) {
			spx_warn("%s: unknown instance type '%s'",
				 a->verb->name, a->argv[i]);
			return SPX_NO;
		}
	t = spx_table_new("NAME", "VCPUS", "MEMORY(MiB)", "GPUS", "NETWORK",
			  NULL);
	if (a->argc)
		for (int i = 0; i < a->argc; i++)
			row(t, spx_itype_find(a->argv[i]));
	else
		for (size_t i = 0; i < spx_itype_count(); i++)
			row(t, spx_itype_at(i));
	rc = spx_table_print(t, stdout, spx_flag(a, "json")) < 0 ? SPX_FAIL
								   : SPX_OK;
	spx_table_free(t);
	return rc;
}
