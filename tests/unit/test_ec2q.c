/* Unit tests for the model-driven Query layer: the parser (every error,
 * flattened lists, nested structures, maps, ranges, required members,
 * unknown parameters, both protocols) and the serializer (exact XML), on a
 * small hand-written model and on the generated EC2 and STS tables. */
#include "spx.h"

#include "ec2/fault.h"
#include "gw/ec2_int.h"
#include "gw/ec2q.h"
#include "gw/ec2q_model.h"
#include "http/query.h"
#include "t.h"

/* ---- a small model ------------------------------------------------ */

enum {
	S_REQ,
	S_STRING,
	S_COUNT,
	S_LONG,
	S_BOOL,
	S_DOUBLE,
	S_TIME,
	S_BLOB,
	S_KIND,
	S_OPEN,
	S_SHORT,
	S_IDS,
	S_FILTER,
	S_FILTERS,
	S_VALUES,
	S_ATTRS,
	S_SUB,
	S_RESULT,
	S_ITEMS,
	S_ITEM,
	S_QREQ,
	S_QNAMES,
	S_QRESULT,
};

static const struct ec2q_member req_m[] = {
	{ "Name", "Name", "name", "name", S_STRING, EC2Q_REQUIRED },
	{ "Count", "Count", "count", "count", S_COUNT, 0 },
	{ "Big", "Big", "big", "big", S_LONG, 0 },
	{ "Flag", "Flag", "flag", "flag", S_BOOL, 0 },
	{ "Ratio", "Ratio", "ratio", "ratio", S_DOUBLE, 0 },
	{ "When", "When", "when", "when", S_TIME, 0 },
	{ "Data", "Data", "data", "data", S_BLOB, 0 },
	{ "Kind", "Kind", "kind", "kind", S_KIND, 0 },
	{ "Open", "Open", "open", "open", S_OPEN, 0 },
	{ "Short", "Short", "short", "short", S_SHORT, 0 },
	{ "Ids", "Id", "idSet", "id", S_IDS, 0 },
	{ "Filters", "Filter", "filterSet", "filter", S_FILTERS, 0 },
	{ "Attrs", "Attr", "attrs", "attr", S_ATTRS, 0 },
	{ "Sub", "Sub", "sub", "sub", S_SUB, 0 },
	{ "ClientToken", "ClientToken", "clientToken", "clientToken",
	  S_STRING, EC2Q_IDEMPOTENCY },
};
static const struct ec2q_member filter_m[] = {
	{ "Name", "Name", "name", "name", S_STRING, 0 },
	{ "Values", "Value", "valueSet", "value", S_VALUES, 0 },
};
static const struct ec2q_member sub_m[] = {
	{ "X", "X", "x", "x", S_STRING, EC2Q_REQUIRED },
	{ "Y", "Y", "y", "y", S_COUNT, 0 },
};
static const struct ec2q_member result_m[] = {
	{ "Items", "Items", "itemSet", "items", S_ITEMS, 0 },
	{ "NextToken", "NextToken", "nextToken", "nextToken", S_STRING, 0 },
	{ "Total", "Total", "total", "total", S_LONG, 0 },
};
static const struct ec2q_member item_m[] = {
	{ "Id", "Id", "id", "id", S_STRING, 0 },
	{ "Ok", "Ok", "ok", "ok", S_BOOL, 0 },
	{ "Ratio", "Ratio", "ratio", "ratio", S_DOUBLE, 0 },
	{ "When", "When", "createTime", "when", S_TIME, 0 },
	{ "Attrs", "Attrs", "attrs", "attrs", S_ATTRS, 0 },
	{ "Tags", "Tags", "tagSet", "tags", S_IDS, 0 },
};
static const struct ec2q_member qreq_m[] = {
	{ "Names", "Names", "Names", "names", S_QNAMES, 0 },
	{ "Count", "Count", "Count", "count", S_COUNT, 0 },
};
static const struct ec2q_member qresult_m[] = {
	{ "Arn", "Arn", "Arn", "arn", S_STRING, 0 },
	{ "Names", "Names", "Names", "names", S_QNAMES, 0 },
};
static const char *const kind_e[] = { "small", "large" };

#define NO EC2Q_NONE
static const struct ec2q_shape shapes[] = {
	[S_REQ] = { "Req", EC2Q_STRUCTURE, 0, SPX_ARRAY_SIZE(req_m), NO, NO,
		    NULL, NULL, NULL, NULL, 0, 0, req_m, NULL },
	[S_STRING] = { "String", EC2Q_STRING, 0, 0, NO, NO, NULL, NULL, NULL,
		       NULL, 0, 0, NULL, NULL },
	[S_COUNT] = { "Count", EC2Q_INTEGER, EC2Q_HAS_MIN | EC2Q_HAS_MAX, 0,
		      NO, NO, NULL, NULL, NULL, NULL, 5, 100, NULL, NULL },
	[S_LONG] = { "Long", EC2Q_LONG, 0, 0, NO, NO, NULL, NULL, NULL, NULL,
		     0, 0, NULL, NULL },
	[S_BOOL] = { "Boolean", EC2Q_BOOLEAN, 0, 0, NO, NO, NULL, NULL, NULL,
		     NULL, 0, 0, NULL, NULL },
	[S_DOUBLE] = { "Double", EC2Q_DOUBLE, 0, 0, NO, NO, NULL, NULL, NULL,
		       NULL, 0, 0, NULL, NULL },
	[S_TIME] = { "DateTime", EC2Q_TIMESTAMP, 0, 0, NO, NO, NULL, NULL,
		     NULL, NULL, 0, 0, NULL, NULL },
	[S_BLOB] = { "Blob", EC2Q_BLOB, 0, 0, NO, NO, NULL, NULL, NULL, NULL,
		     0, 0, NULL, NULL },
	[S_KIND] = { "Kind", EC2Q_STRING, 0, 2, NO, NO, NULL, NULL, NULL,
		     NULL, 0, 0, NULL, kind_e },
	[S_OPEN] = { "Open", EC2Q_STRING, EC2Q_OPEN_ENUM, 2, NO, NO, NULL,
		     NULL, NULL, NULL, 0, 0, NULL, kind_e },
	[S_SHORT] = { "Short", EC2Q_STRING, EC2Q_HAS_MIN | EC2Q_HAS_MAX, 0,
		      NO, NO, NULL, NULL, NULL, NULL, 2, 4, NULL, NULL },
	[S_IDS] = { "IdList", EC2Q_LIST, EC2Q_HAS_MAX, 0, S_STRING, NO, NULL,
		    "item", NULL, NULL, 0, 3, NULL, NULL },
	[S_FILTER] = { "Filter", EC2Q_STRUCTURE, 0, 2, NO, NO, NULL, NULL,
		       NULL, NULL, 0, 0, filter_m, NULL },
	[S_FILTERS] = { "FilterList", EC2Q_LIST, 0, 0, S_FILTER, NO, NULL,
			"Filter", NULL, NULL, 0, 0, NULL, NULL },
	[S_VALUES] = { "ValueList", EC2Q_LIST, 0, 0, S_STRING, NO, NULL,
		       "item", NULL, NULL, 0, 0, NULL, NULL },
	[S_ATTRS] = { "AttrMap", EC2Q_MAP, 0, 0, S_STRING, S_STRING, "Key",
		      "key", "Value", "value", 0, 0, NULL, NULL },
	[S_SUB] = { "Sub", EC2Q_STRUCTURE, 0, 2, NO, NO, NULL, NULL, NULL,
		    NULL, 0, 0, sub_m, NULL },
	[S_RESULT] = { "Result", EC2Q_STRUCTURE, 0, 3, NO, NO, NULL, NULL,
		       NULL, NULL, 0, 0, result_m, NULL },
	[S_ITEMS] = { "ItemList", EC2Q_LIST, 0, 0, S_ITEM, NO, NULL, "item",
		      NULL, NULL, 0, 0, NULL, NULL },
	[S_ITEM] = { "Item", EC2Q_STRUCTURE, 0, SPX_ARRAY_SIZE(item_m), NO,
		     NO, NULL, NULL, NULL, NULL, 0, 0, item_m, NULL },
	[S_QREQ] = { "QReq", EC2Q_STRUCTURE, 0, 2, NO, NO, NULL, NULL, NULL,
		     NULL, 0, 0, qreq_m, NULL },
	[S_QNAMES] = { "NameList", EC2Q_LIST, 0, 0, S_STRING, NO, "member",
		       "member", NULL, NULL, 0, 0, NULL, NULL },
	[S_QRESULT] = { "QResult", EC2Q_STRUCTURE, 0, 2, NO, NO, NULL, NULL,
			NULL, NULL, 0, 0, qresult_m, NULL },
};

static const struct ec2q_op ops[] = {
	{ "DoThing", S_REQ, S_RESULT, NULL },
	{ "NoInput", NO, NO, NULL },
};
static const struct ec2q_service svc = {
	"test", EC2Q_PROTO_EC2, "2016-11-15", "http://example.com/doc/",
	shapes, SPX_ARRAY_SIZE(shapes), ops, SPX_ARRAY_SIZE(ops),
};
static const struct ec2q_op qops[] = {
	{ "Ask", S_QREQ, S_QRESULT, "AskResult" },
};
static const struct ec2q_service qsvc = {
	"qtest", EC2Q_PROTO_QUERY, "2011-06-15", "https://example.com/q/",
	shapes, SPX_ARRAY_SIZE(shapes), qops, SPX_ARRAY_SIZE(qops),
};

/* ---- the parser --------------------------------------------------- */

/* want: the compact, key-sorted JSON, or NULL with code and msg. */
static const struct {
	const struct ec2q_service *svc;
	const char *op;
	const char *form;
	const char *want;
	const char *code;
	const char *msg;
} parses[] = {
	{ &svc, "DoThing", "Action=DoThing&Version=2016-11-15&Name=a",
	  "{\"Name\":\"a\"}", NULL, NULL },
	/* Scalars of every type. */
	{ &svc, "DoThing",
	  "Name=a&Count=5&Big=-9223372036854775808&Flag=TRUE&Ratio=2.5"
	  "&Kind=large&Open=huge&Short=abcd&Data=aGVsbG8%3D",
	  "{\"Big\":-9223372036854775808,\"Count\":5,\"Data\":\"aGVsbG8=\","
	  "\"Flag\":true,\"Kind\":\"large\",\"Name\":\"a\",\"Open\":\"huge\","
	  "\"Ratio\":2.5,\"Short\":\"abcd\"}",
	  NULL, NULL },
	{ &svc, "DoThing", "Name=a&When=2023-01-02T03:04:05Z",
	  "{\"Name\":\"a\",\"When\":1672628645}", NULL, NULL },
	{ &svc, "DoThing", "Name=a&When=2023-01-02T03:04:05.5%2B01:00",
	  "{\"Name\":\"a\",\"When\":1672625045.5}", NULL, NULL },
	{ &svc, "DoThing", "Name=a&When=1672628645",
	  "{\"Name\":\"a\",\"When\":1672628645}", NULL, NULL },
	{ &svc, "DoThing", "Name=%C3%A9t%C3%A9&Short=%C3%A9%C3%A9%C3%A9%C3%A9",
	  "{\"Name\":\"\xc3\xa9t\xc3\xa9\",\"Short\":\"\xc3\xa9\xc3\xa9"
	  "\xc3\xa9\xc3\xa9\"}",
	  NULL, NULL },
	/* Flattened lists, in the order of their numbers. */
	{ &svc, "DoThing", "Name=a&Id.2=y&Id.1=x&Id.10=z",
	  "{\"Ids\":[\"x\",\"y\",\"z\"],\"Name\":\"a\"}", NULL, NULL },
	{ &svc, "DoThing",
	  "Name=a&Filter.1.Name=n1&Filter.1.Value.2=v2&Filter.1.Value.1=v1"
	  "&Filter.2.Name=n2",
	  "{\"Filters\":[{\"Name\":\"n1\",\"Values\":[\"v1\",\"v2\"]},"
	  "{\"Name\":\"n2\"}],\"Name\":\"a\"}",
	  NULL, NULL },
	{ &svc, "DoThing", "Name=a&Id=",
	  "{\"Ids\":[],\"Name\":\"a\"}", NULL, NULL },
	/* Maps, nested structures. */
	{ &svc, "DoThing",
	  "Name=a&Attr.entry.1.Key=k1&Attr.entry.1.Value=v1"
	  "&Attr.entry.2.Value=v2&Attr.entry.2.Key=k2",
	  "{\"Attrs\":{\"k1\":\"v1\",\"k2\":\"v2\"},\"Name\":\"a\"}", NULL,
	  NULL },
	{ &svc, "DoThing", "Name=a&Sub.X=1&Sub.Y=7",
	  "{\"Name\":\"a\",\"Sub\":{\"X\":\"1\",\"Y\":7}}", NULL, NULL },
	/* SigV4's query parameters are not the operation's. */
	{ &svc, "DoThing",
	  "Name=a&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00",
	  "{\"Name\":\"a\"}", NULL, NULL },
	{ &svc, "NoInput", "Action=NoInput", "{}", NULL, NULL },

	/* MissingParameter */
	{ &svc, "DoThing", "Count=5", NULL, "MissingParameter",
	  "The request must contain the parameter Name" },
	{ &svc, "DoThing", "Name=a&Sub.Y=7", NULL, "MissingParameter",
	  "The request must contain the parameter Sub.X" },
	{ &svc, "DoThing", "Name=a&Attr.entry.3.Key=k", NULL,
	  "MissingParameter",
	  "The request must contain the parameter Attr.entry.3.Value" },
	/* UnknownParameter */
	{ &svc, "DoThing", "Name=a&Colour=red", NULL, "UnknownParameter",
	  "The parameter Colour is not recognized" },
	{ &svc, "DoThing", "Name=a&name=b", NULL, "UnknownParameter",
	  "The parameter name is not recognized" },
	{ &svc, "DoThing", "Name=a&Filter.1.Colour=red", NULL,
	  "UnknownParameter", "The parameter Filter.1.Colour is not recognized" },
	{ &svc, "DoThing", "Name=a&Id.0=x", NULL, "UnknownParameter",
	  "The parameter Id.0 is not recognized" },
	{ &svc, "DoThing", "Name=a&Id.01=x", NULL, "UnknownParameter",
	  "The parameter Id.01 is not recognized" },
	{ &svc, "DoThing", "Name=a&Id.-1=x", NULL, "UnknownParameter",
	  "The parameter Id.-1 is not recognized" },
	{ &svc, "DoThing", "Name=a&Id.100001=x", NULL, "UnknownParameter",
	  "The parameter Id.100001 is not recognized" },
	{ &svc, "DoThing", "Name=a&Id.99999999999999999999=x", NULL,
	  "UnknownParameter",
	  "The parameter Id.99999999999999999999 is not recognized" },
	{ &svc, "DoThing", "Name=a&Id.x=x", NULL, "UnknownParameter",
	  "The parameter Id.x is not recognized" },
	{ &svc, "DoThing", "Name=a&Id.1.Deep=x", NULL, "UnknownParameter",
	  "The parameter Id.1.Deep is not recognized" },
	{ &svc, "DoThing", "Name=a&Id=x", NULL, "UnknownParameter",
	  "The parameter Id is not recognized" },
	{ &svc, "DoThing", "Name=a&Sub=x", NULL, "UnknownParameter",
	  "The parameter Sub is not recognized" },
	{ &svc, "DoThing", "Name=a&Name.1=x", NULL, "UnknownParameter",
	  "The parameter Name.1 is not recognized" },
	{ &svc, "DoThing", "Name=a&Filter..Name=x", NULL, "UnknownParameter",
	  "The parameter Filter..Name is not recognized" },
	{ &svc, "DoThing", "Name=a&Filter.1.=x", NULL, "UnknownParameter",
	  "The parameter Filter.1. is not recognized" },
	{ &svc, "DoThing", "Name=a&Attr.1.Key=x", NULL, "UnknownParameter",
	  "The parameter Attr.1.Key is not recognized" },
	{ &svc, "DoThing", "Name=a&Attr.entry.1.Name=x", NULL,
	  "UnknownParameter",
	  "The parameter Attr.entry.1.Name is not recognized" },
	{ &svc, "NoInput", "Name=a", NULL, "UnknownParameter",
	  "The parameter Name is not recognized" },
	{ &svc, "DoThing", "Name=a&Filter.1.Value.1.2.3.4.5.6.7.8.9.10.11=x",
	  NULL, "UnknownParameter",
	  "The parameter Filter.1.Value.1.2.3.4.5.6.7.8.9.10.11 is not "
	  "recognized" },
	/* InvalidParameterValue */
	{ &svc, "DoThing", "Name=a&Count=4", NULL, "InvalidParameterValue",
	  "Value ( 4 ) for parameter count is invalid. Expecting a value "
	  "greater than 5." },
	{ &svc, "DoThing", "Name=a&Count=101", NULL, "InvalidParameterValue",
	  "Value ( 101 ) for parameter count is invalid. Expecting a value "
	  "less than or equal to 100." },
	{ &svc, "DoThing", "Name=a&Count=ten", NULL, "InvalidParameterValue",
	  "Value (ten) for parameter count is invalid. It is not a valid "
	  "integer." },
	{ &svc, "DoThing", "Name=a&Count=", NULL, "InvalidParameterValue",
	  "Value () for parameter count is invalid. It is not a valid "
	  "integer." },
	{ &svc, "DoThing", "Name=a&Count=%2B", NULL, "InvalidParameterValue",
	  "Value (+) for parameter count is invalid. It is not a valid "
	  "integer." },
	{ &svc, "DoThing", "Name=a&Count=2147483648", NULL,
	  "InvalidParameterValue",
	  "Value (2147483648) for parameter count is invalid. It is not a "
	  "valid integer." },
	{ &svc, "DoThing", "Name=a&Big=9223372036854775808", NULL,
	  "InvalidParameterValue",
	  "Value (9223372036854775808) for parameter big is invalid. It is "
	  "not a valid integer." },
	{ &svc, "DoThing", "Name=a&Count=%205", NULL, "InvalidParameterValue",
	  "Value ( 5) for parameter count is invalid. It is not a valid "
	  "integer." },
	{ &svc, "DoThing", "Name=a&Flag=yes", NULL, "InvalidParameterValue",
	  "Value (yes) for parameter flag is invalid. It must be true or "
	  "false." },
	{ &svc, "DoThing", "Name=a&Ratio=nan", NULL, "InvalidParameterValue",
	  "Value (nan) for parameter ratio is invalid. It is not a valid "
	  "number." },
	{ &svc, "DoThing", "Name=a&Ratio=1e999", NULL, "InvalidParameterValue",
	  "Value (1e999) for parameter ratio is invalid. It is not a valid "
	  "number." },
	{ &svc, "DoThing", "Name=a&When=2023-02-30T00:00:00Z", NULL,
	  "InvalidParameterValue",
	  "Value (2023-02-30T00:00:00Z) for parameter when is invalid. It is "
	  "not a valid ISO 8601 date-time." },
	{ &svc, "DoThing", "Name=a&When=yesterday", NULL,
	  "InvalidParameterValue",
	  "Value (yesterday) for parameter when is invalid. It is not a valid "
	  "ISO 8601 date-time." },
	{ &svc, "DoThing", "Name=a&Data=aGVsbG8", NULL, "InvalidParameterValue",
	  "Value (...) for parameter data is invalid. It is not valid "
	  "base64." },
	{ &svc, "DoThing", "Name=a&Kind=medium", NULL, "InvalidParameterValue",
	  "Value (medium) for parameter kind is invalid. Valid values are: "
	  "small, large" },
	{ &svc, "DoThing", "Name=a&Short=a", NULL, "InvalidParameterValue",
	  "Value (a) for parameter short is invalid. It must be at least 2 "
	  "characters long." },
	{ &svc, "DoThing", "Name=a&Short=", NULL, "InvalidParameterValue",
	  "Value () for parameter short is invalid. The value cannot be "
	  "empty" },
	{ &svc, "DoThing", "Name=a&Short=abcde", NULL, "InvalidParameterValue",
	  "Value (abcde) for parameter short is invalid. It must be at most 4 "
	  "characters long." },
	{ &svc, "DoThing", "Name=%FF", NULL, "InvalidParameterValue",
	  "Value (\xff) for parameter name is invalid. It is not valid "
	  "UTF-8." },
	{ &svc, "DoThing", "Name=a&Id.1=x&Id.2=y&Id.3=z&Id.4=w", NULL,
	  "InvalidParameterValue", "The parameter Id may have at most 3 values" },
	{ &svc, "DoThing", "Name=a&Name=b", NULL, "InvalidParameterValue",
	  "The parameter Name is given more than once" },
	{ &svc, "DoThing",
	  "Name=a&Attr.entry.1.Key=k&Attr.entry.1.Value=1"
	  "&Attr.entry.2.Key=k&Attr.entry.2.Value=2",
	  NULL, "InvalidParameterValue",
	  "The key k is given more than once in Attr" },
	{ &svc, "DoThing", "Name=a&Sub.Y=1", NULL, "InvalidParameterValue",
	  "Value ( 1 ) for parameter y is invalid. Expecting a value greater "
	  "than 5." },

	/* The query protocol: Name.member.N. */
	{ &qsvc, "Ask", "Names.member.2=b&Names.member.1=a",
	  "{\"Names\":[\"a\",\"b\"]}", NULL, NULL },
	{ &qsvc, "Ask", "Names=", "{\"Names\":[]}", NULL, NULL },
	{ &qsvc, "Ask", "Names.1=a", NULL, "UnknownParameter",
	  "The parameter Names.1 is not recognized" },
	{ &qsvc, "Ask", "Names.member=a", NULL, "UnknownParameter",
	  "The parameter Names.member is not recognized" },

	/* The generated EC2 model, as the clients send it. */
	{ &ec2q_ec2, "CreateKeyPair",
	  "Action=CreateKeyPair&Version=2016-11-15&KeyName=k1&KeyType=ed25519"
	  "&KeyFormat=ppk&TagSpecification.1.ResourceType=key-pair"
	  "&TagSpecification.1.Tag.1.Key=a&TagSpecification.1.Tag.1.Value=1"
	  "&TagSpecification.1.Tag.2.Key=b&DryRun=false",
	  "{\"DryRun\":false,\"KeyFormat\":\"ppk\",\"KeyName\":\"k1\","
	  "\"KeyType\":\"ed25519\",\"TagSpecifications\":[{\"ResourceType\":"
	  "\"key-pair\",\"Tags\":[{\"Key\":\"a\",\"Value\":\"1\"},{\"Key\":"
	  "\"b\"}]}]}",
	  NULL, NULL },
	{ &ec2q_ec2, "CreateKeyPair", "Action=CreateKeyPair", NULL,
	  "MissingParameter", "The request must contain the parameter KeyName" },
	{ &ec2q_ec2, "CreateKeyPair", "KeyName=k&KeyType=dsa", NULL,
	  "InvalidParameterValue",
	  "Value (dsa) for parameter keyType is invalid. Valid values are: "
	  "rsa, ed25519" },
	{ &ec2q_ec2, "CreateKeyPair", "KeyName=k&dryRun=true", NULL,
	  "UnknownParameter", "The parameter dryRun is not recognized" },
	{ &ec2q_ec2, "DescribeKeyPairs",
	  "KeyName.1=a&KeyPairId.1=key-1&Filter.1.Name=key-name"
	  "&Filter.1.Value.1=a*&IncludePublicKey=true",
	  "{\"Filters\":[{\"Name\":\"key-name\",\"Values\":[\"a*\"]}],"
	  "\"IncludePublicKey\":true,\"KeyNames\":[\"a\"],\"KeyPairIds\":"
	  "[\"key-1\"]}",
	  NULL, NULL },
	{ &ec2q_ec2, "DescribeInstanceTypes",
	  "InstanceType.1=m8i.large&MaxResults=5",
	  "{\"InstanceTypes\":[\"m8i.large\"],\"MaxResults\":5}", NULL, NULL },
	{ &ec2q_ec2, "DescribeInstanceTypes", "MaxResults=4", NULL,
	  "InvalidParameterValue",
	  "Value ( 4 ) for parameter maxResults is invalid. Expecting a value "
	  "greater than 5." },
	{ &ec2q_ec2, "DescribeInstanceTypeOfferings", "LocationType=planet",
	  NULL, "InvalidParameterValue",
	  "Value (planet) for parameter locationType is invalid. Valid values "
	  "are: region, availability-zone, availability-zone-id" },
	{ &ec2q_ec2, "DescribeAccountAttributes",
	  "AttributeName.1=max-instances",
	  "{\"AttributeNames\":[\"max-instances\"]}", NULL, NULL },
	{ &ec2q_ec2, "CreateTags", "ResourceId.1=key-1", NULL,
	  "MissingParameter", "The request must contain the parameter Tag" },
	{ &ec2q_ec2, "ImportKeyPair",
	  "KeyName=k&PublicKeyMaterial=c3NoLWVkMjU1MTk%3D",
	  "{\"KeyName\":\"k\",\"PublicKeyMaterial\":\"c3NoLWVkMjU1MTk=\"}",
	  NULL, NULL },
	{ &ec2q_sts, "GetCallerIdentity", "Action=GetCallerIdentity", "{}",
	  NULL, NULL },
};

static void test_parse(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(parses); i++) {
		struct spx_kvlist params = SPX_KVLIST_INIT;
		const struct ec2q_op *op =
			ec2q_op_find(parses[i].svc, parses[i].op);
		json_t *out = (json_t *)1;
		int rc;

		if (!T_OK(op, "parse %zu: op %s", i, parses[i].op))
			continue;
		if (spx_query_parse(parses[i].form, strlen(parses[i].form),
				    SPX_URI_PLUS, &params) < 0) {
			T_OK(0, "parse %zu: form: %s", i, spx_errmsg());
			continue;
		}
		spx_error_clear();
		rc = ec2q_parse(parses[i].svc, op, &params, &out);
		if (parses[i].want) {
			char *got = out ? json_dumps(out, JSON_COMPACT |
							   JSON_SORT_KEYS)
					: NULL;

			T_INT(rc, 0, "parse %zu: %s", i, parses[i].form);
			if (rc)
				printf("#   %s\n", spx_errmsg());
			T_STR(got, parses[i].want, "parse %zu: value", i);
			free(got);
		} else {
			int http = 0;

			T_INT(rc, -1, "parse %zu refused: %s", i, parses[i].form);
			T_OK(out == NULL, "parse %zu: no value", i);
			T_STR(spx_ec2_fault_code(&http), parses[i].code,
			      "parse %zu: code", i);
			T_INT(http, 400, "parse %zu: status", i);
			T_STR(spx_errmsg(), parses[i].msg, "parse %zu: message",
			      i);
		}
		json_decref(out);
		spx_kv_free(&params);
	}
}

/* Hostile sizes: many parameters, deep keys, a huge index range. */
static void test_parse_bounds(void)
{
	const struct ec2q_op *op = ec2q_op_find(&svc, "DoThing");
	struct spx_kvlist p = SPX_KVLIST_INIT;
	struct spx_buf k = SPX_BUF_INIT;
	json_t *out;
	char key[64];

	spx_kv_add(&p, "Name", "a");
	for (int i = 1; i <= 5000; i++) {
		snprintf(key, sizeof(key), "Filter.%d.Value.%d", 100000 - i, i);
		spx_kv_add(&p, key, "v");
	}
	T_INT(ec2q_parse(&svc, op, &p, &out), 0, "5000 sparse filters");
	T_INT(json_array_size(json_object_get(out, "Filters")), 5000,
	      "5000 filters, in order");
	T_STR(json_string_value(json_array_get(json_object_get(
		      json_array_get(json_object_get(out, "Filters"), 0),
		      "Values"), 0)),
	      "v", "the first filter's value");
	json_decref(out);
	spx_kv_free(&p);

	spx_kv_add(&p, "Name", "a");
	spx_buf_adds(&k, "Filter");
	while (k.len < EC2Q_MAX_KEY + 10)
		spx_buf_adds(&k, ".1");
	spx_kv_add(&p, k.p, "x");
	T_INT(ec2q_parse(&svc, op, &p, &out), -1, "a key past the limit");
	T_STR(spx_ec2_fault_code(NULL), "UnknownParameter", "its code");
	spx_kv_free(&p);
	spx_buf_release(&k);
}

/* ---- the serializer ----------------------------------------------- */

static const struct {
	const struct ec2q_service *svc;
	const char *op;
	const char *answer; /* JSON, or NULL */
	const char *xml;    /* NULL: refused */
} renders[] = {
	{ &svc, "DoThing", "{}",
	  "<DoThingResponse xmlns=\"http://example.com/doc/\"><requestId>R"
	  "</requestId></DoThingResponse>" },
	{ &svc, "DoThing",
	  "{\"Total\":7,\"NextToken\":\"t&<\",\"Items\":[{\"Id\":\"a\","
	  "\"Ok\":true,\"Ratio\":0.1,\"When\":1672628645},{\"Id\":\"b\","
	  "\"Ok\":false,\"When\":1672628645.25,\"Tags\":[],\"Attrs\":{\"k\":"
	  "\"v\"}},{}]}",
	  "<DoThingResponse xmlns=\"http://example.com/doc/\"><requestId>R"
	  "</requestId><itemSet><item><id>a</id><ok>true</ok><ratio>0.1"
	  "</ratio><createTime>2023-01-02T03:04:05.000Z</createTime></item>"
	  "<item><id>b</id><ok>false</ok><createTime>2023-01-02T03:04:05.250Z"
	  "</createTime><attrs><entry><key>k</key><value>v</value></entry>"
	  "</attrs><tagSet></tagSet></item><item></item></itemSet><nextToken>"
	  "t&amp;&lt;</nextToken><total>7</total></DoThingResponse>" },
	{ &svc, "DoThing", "{\"Items\":[{\"When\":\"2020-01-01T00:00:00Z\"}]}",
	  "<DoThingResponse xmlns=\"http://example.com/doc/\"><requestId>R"
	  "</requestId><itemSet><item><createTime>2020-01-01T00:00:00Z"
	  "</createTime></item></itemSet></DoThingResponse>" },
	{ &svc, "DoThing", "{\"Total\":null}",
	  "<DoThingResponse xmlns=\"http://example.com/doc/\"><requestId>R"
	  "</requestId></DoThingResponse>" },
	{ &svc, "NoInput", NULL,
	  "<NoInputResponse xmlns=\"http://example.com/doc/\"><requestId>R"
	  "</requestId><return>true</return></NoInputResponse>" },
	{ &qsvc, "Ask", "{\"Arn\":\"arn:x\",\"Names\":[\"a\",\"b\"]}",
	  "<AskResponse xmlns=\"https://example.com/q/\"><AskResult><Arn>arn:x"
	  "</Arn><Names><member>a</member><member>b</member></Names>"
	  "</AskResult><ResponseMetadata><RequestId>R</RequestId>"
	  "</ResponseMetadata></AskResponse>" },
	/* Answers that do not fit their shape are bugs: refused. */
	{ &svc, "DoThing", "{\"Colour\":\"red\"}", NULL },
	{ &svc, "DoThing", "{\"Total\":\"7\"}", NULL },
	{ &svc, "DoThing", "{\"Items\":{}}", NULL },
	{ &svc, "DoThing", "{\"Items\":[{\"Ok\":1}]}", NULL },
	{ &svc, "DoThing", "{\"Items\":[\"a\"]}", NULL },
	{ &ec2q_ec2, "DescribeRegions",
	  "{\"Regions\":[{\"RegionName\":\"us-east-1\",\"Endpoint\":\"h:1\","
	  "\"OptInStatus\":\"opt-in-not-required\"}]}",
	  "<DescribeRegionsResponse xmlns=\"http://ec2.amazonaws.com/doc/"
	  "2016-11-15/\"><requestId>R</requestId><regionInfo><item>"
	  "<regionEndpoint>h:1</regionEndpoint><regionName>us-east-1"
	  "</regionName><optInStatus>opt-in-not-required</optInStatus></item>"
	  "</regionInfo></DescribeRegionsResponse>" },
	{ &ec2q_ec2, "CreateTags", NULL,
	  "<CreateTagsResponse xmlns=\"http://ec2.amazonaws.com/doc/"
	  "2016-11-15/\"><requestId>R</requestId><return>true</return>"
	  "</CreateTagsResponse>" },
	{ &ec2q_sts, "GetCallerIdentity",
	  "{\"Arn\":\"arn:aws:iam::123456789012:root\",\"UserId\":"
	  "\"123456789012\",\"Account\":\"123456789012\"}",
	  "<GetCallerIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/"
	  "2011-06-15/\"><GetCallerIdentityResult><UserId>123456789012"
	  "</UserId><Account>123456789012</Account><Arn>arn:aws:iam::"
	  "123456789012:root</Arn></GetCallerIdentityResult><ResponseMetadata>"
	  "<RequestId>R</RequestId></ResponseMetadata>"
	  "</GetCallerIdentityResponse>" },
};

static void test_render(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(renders); i++) {
		const struct ec2q_op *op =
			ec2q_op_find(renders[i].svc, renders[i].op);
		json_t *a = renders[i].answer
				    ? json_loads(renders[i].answer, 0, NULL)
				    : NULL;
		struct spx_buf b = SPX_BUF_INIT;
		struct spx_xml x;
		int rc;

		spx_xml_begin_buf(&x, &b);
		rc = ec2q_render(&x, renders[i].svc, op, a, "R");
		if (renders[i].xml) {
			T_INT(rc, 0, "render %zu", i);
			T_INT(spx_xml_end(&x), 0, "render %zu: complete", i);
			T_STR(b.p, renders[i].xml, "render %zu: XML", i);
		} else {
			T_INT(rc, -1, "render %zu refused", i);
			T_INT(spx_errstatus(), SPX_FAIL, "render %zu: a bug", i);
		}
		json_decref(a);
		spx_buf_release(&b);
	}
}

static void test_time(void)
{
	static const struct {
		double t;
		const char *s;
	} fmt[] = {
		{ 0, "1970-01-01T00:00:00.000Z" },
		{ 1672628645, "2023-01-02T03:04:05.000Z" },
		{ 1672628645.999, "2023-01-02T03:04:05.999Z" },
		{ 1672628645.9996, "2023-01-02T03:04:06.000Z" },
	};
	static const char *const bad[] = {
		"", "2023-", "2023-01-02", "2023-01-02T03:04Z",
		"2023-13-02T03:04:05Z", "2023-01-02T24:00:00Z",
		"2023-01-02T03:04:05", "2023-01-02T03:04:05.Z",
		"2023-01-02T03:04:05Zjunk", "2023-01-02 03:04:05Z",
		"12abc", "2023-01-02T03:04:05+5:00",
	};
	char b[40];
	double t;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(fmt); i++) {
		ec2q_time_format(fmt[i].t, b, sizeof(b));
		T_STR(b, fmt[i].s, "time format %zu", i);
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(bad); i++)
		T_INT(ec2q_time_parse(bad[i], &t), -1, "time '%s' refused",
		      bad[i]);
	T_INT(ec2q_time_parse("2023-01-02t03:04:05.123z", &t), 0,
	      "lowercase t and z");
	T_OK(t > 1672628645.12 && t < 1672628645.13, "with its fraction");
}

/* ---- the action tables agree with the model ----------------------- */

static void check_table(const struct ec2q_service *s,
			const struct ec2_action *t, size_t n)
{
	T_INT(n, s->n_ops, "%s: every generated operation has a row",
	      s->name);
	for (size_t i = 0; i < n; i++) {
		const struct ec2q_op *op = &s->ops[t[i].op];
		const struct ec2q_shape *in =
			op->input == EC2Q_NONE ? NULL
					       : ec2q_shape(s, op->input);
		bool dry = in && ec2q_member_find(s, in, "DryRun");
		bool tok = in && ec2q_member_find(s, in, "ClientToken");

		T_OK(t[i].fn, "%s: %s has a handler", s->name, op->name);
		T_INT(!!(t[i].flags & EC2_DRYRUN), dry,
		      "%s: %s: the DryRun flag follows the model", s->name,
		      op->name);
		T_INT(!!(t[i].flags & EC2_IDEMPOTENT), tok,
		      "%s: %s: the ClientToken flag follows the model",
		      s->name, op->name);
		for (size_t j = 0; j < i; j++)
			T_OK(t[j].op != t[i].op, "%s: %s: one row", s->name,
			     op->name);
	}
}

int main(void)
{
	test_parse();
	test_parse_bounds();
	test_render();
	test_time();
	check_table(&ec2q_ec2, gw_ec2_actions, gw_ec2_n_actions);
	check_table(&ec2q_sts, gw_sts_actions, gw_sts_n_actions);
	return t_done();
}
