/* Unit tests for lib/conf/toml: every feature, every escape, every error
 * class with its exact position, redefinitions and the limits. */
#include "spx.h"

#include "conf/toml.h"

#include "t.h"

/* A compact rendering of a tree: {k:v,...}, [v,...], "s", 12, true. Keys
 * that are not bare and the bytes of strings below 0x20 are escaped. */
static void dump(struct spx_buf *b, const struct spx_toml *t)
{
	const unsigned char *s;

	switch (t->type) {
	case SPX_TOML_TABLE:
		spx_buf_addc(b, '{');
		for (size_t i = 0; i < t->n; i++) {
			bool bare = t->ent[i].key[0] != '\0';

			if (i)
				spx_buf_addc(b, ',');
			for (s = (const unsigned char *)t->ent[i].key; *s; s++)
				bare = bare && (strchr("abcdefghijklmnopqrstuv"
						       "wxyzABCDEFGHIJKLMNOPQ"
						       "RSTUVWXYZ0123456789_-",
						       *s) != NULL);
			if (bare)
				spx_buf_adds(b, t->ent[i].key);
			else
				spx_buf_addf(b, "\"%s\"", t->ent[i].key);
			spx_buf_addc(b, ':');
			dump(b, t->ent[i].val);
		}
		spx_buf_addc(b, '}');
		break;
	case SPX_TOML_ARRAY:
		spx_buf_addc(b, '[');
		for (size_t i = 0; i < t->n; i++) {
			if (i)
				spx_buf_addc(b, ',');
			dump(b, t->item[i]);
		}
		spx_buf_addc(b, ']');
		break;
	case SPX_TOML_STRING:
		spx_buf_addc(b, '"');
		for (s = (const unsigned char *)t->v.s; *s; s++) {
			if (*s == '"' || *s == '\\')
				spx_buf_addf(b, "\\%c", *s);
			else if (*s < 0x20 || *s == 0x7f)
				spx_buf_addf(b, "\\x%02x", *s);
			else
				spx_buf_addc(b, (char)*s);
		}
		spx_buf_addc(b, '"');
		break;
	case SPX_TOML_INTEGER:
		spx_buf_addf(b, "%lld", (long long)t->v.i);
		break;
	case SPX_TOML_BOOL:
		spx_buf_adds(b, t->v.b ? "true" : "false");
		break;
	}
}

struct tcase {
	const char *in;
	size_t len;		/* 0: strlen(in) */
	const char *want;	/* the dump, or NULL when an error is due */
	const char *err;	/* a substring of the error */
	size_t max;		/* 0: 1 MiB */
};

static const struct tcase cases[] = {
	/* documents, comments, newlines */
	{ "", 0, "{}", NULL, 0 },
	{ "\n\n\n", 0, "{}", NULL, 0 },
	{ "# only a comment\n", 0, "{}", NULL, 0 },
	{ "# no newline at the end", 0, "{}", NULL, 0 },
	{ "a = 1", 0, "{a:1}", NULL, 0 },
	{ "a=1\nb=2\n", 0, "{a:1,b:2}", NULL, 0 },
	{ "a = 1\r\nb = 2\r\n", 0, "{a:1,b:2}", NULL, 0 },
	{ "\xef\xbb\xbf" "a = 1\n", 0, "{a:1}", NULL, 0 },
	{ "  \ta = 1 # comment\t\n\t# indented comment\n", 0, "{a:1}", NULL,
	  0 },
	{ "a = 1 # comentário, ünïcödé €\n", 0, "{a:1}", NULL, 0 },
	{ "a = 1 #\r\n", 0, "{a:1}", NULL, 0 },
	/* keys */
	{ "A-b_9 = 1\n1234 = 2\n-_- = 3\n", 0, "{A-b_9:1,1234:2,-_-:3}", NULL,
	  0 },
	{ "\"a b\" = 1\n'c.d' = 2\n\"\" = 3\n", 0,
	  "{\"a b\":1,\"c.d\":2,\"\":3}", NULL, 0 },
	{ "\"\\u00e9\" = 1\n", 0, "{\"\xc3\xa9\":1}", NULL, 0 },
	{ "\"a\\tb\" = 1\n", 0, "{\"a\tb\":1}", NULL, 0 },
	{ "a.b.c = 1\na.b.d = 2\na.e = 3\n", 0, "{a:{b:{c:1,d:2},e:3}}", NULL,
	  0 },
	{ "a . b\t.\tc = 1\n", 0, "{a:{b:{c:1}}}", NULL, 0 },
	{ "a.\"b.c\".'d' = 1\n", 0, "{a:{\"b.c\":{d:1}}}", NULL, 0 },
	{ "1.2 = 3\n", 0, "{1:{2:3}}", NULL, 0 },
	{ "true = false\n", 0, "{true:false}", NULL, 0 },
	/* tables */
	{ "[a]\nx = 1\n[b]\ny = 2\n", 0, "{a:{x:1},b:{y:2}}", NULL, 0 },
	{ "[a.b.c]\nx = 1\n", 0, "{a:{b:{c:{x:1}}}}", NULL, 0 },
	{ "[ a . \"b\" ]\n", 0, "{a:{b:{}}}", NULL, 0 },
	{ "[a]\n", 0, "{a:{}}", NULL, 0 },
	{ "x = 0\n[a] # comment\n", 0, "{x:0,a:{}}", NULL, 0 },
	{ "[a.b]\nx=1\n[a]\ny=2\n", 0, "{a:{b:{x:1},y:2}}", NULL, 0 },
	{ "[a.b]\n[a.c]\n", 0, "{a:{b:{},c:{}}}", NULL, 0 },
	{ "[fruit]\napple.color = 1\n[fruit.apple.texture]\nsmooth = true\n",
	  0, "{fruit:{apple:{color:1,texture:{smooth:true}}}}", NULL, 0 },
	{ "a.b.c = 1\n[a.b.d]\n", 0, "{a:{b:{c:1,d:{}}}}", NULL, 0 },
	{ "[a.b.c]\nz=1\n[a]\nb.d = 2\n", 0, "{a:{b:{c:{z:1},d:2}}}", NULL, 0 },
	{ "[a]\nb.c = 1\nb.d = 2\n", 0, "{a:{b:{c:1,d:2}}}", NULL, 0 },
	/* arrays of tables */
	{ "[[p]]\nn=1\n[[p]]\nn=2\n", 0, "{p:[{n:1},{n:2}]}", NULL, 0 },
	{ "[[a]]\n[[a]]\n", 0, "{a:[{},{}]}", NULL, 0 },
	{ "[[f]]\nn=1\n[f.phys]\nc=2\n[[f.v]]\nm=3\n[[f.v]]\nm=4\n[[f]]\nn=5\n"
	  "[[f.v]]\nm=6\n", 0,
	  "{f:[{n:1,phys:{c:2},v:[{m:3},{m:4}]},{n:5,v:[{m:6}]}]}", NULL, 0 },
	{ "[[a.b]]\nx=1\n[a]\ny=2\n", 0, "{a:{b:[{x:1}],y:2}}", NULL, 0 },
	{ "[[ a . b ]]\n", 0, "{a:{b:[{}]}}", NULL, 0 },
	{ "[[a]]\nb.c = 1\n[[a]]\nb.c = 2\n", 0, "{a:[{b:{c:1}},{b:{c:2}}]}",
	  NULL, 0 },
	/* basic strings and every escape */
	{ "s = \"\\b\\t\\n\\f\\r\\\"\\\\\"\n", 0,
	  "{s:\"\\x08\\x09\\x0a\\x0c\\x0d\\\"\\\\\"}", NULL, 0 },
	{ "s = \"\\u00e9\\u20AC\"\n", 0, "{s:\"\xc3\xa9\xe2\x82\xac\"}", NULL,
	  0 },
	{ "s = \"\\U0001F600\\U0010FFFF\"\n", 0,
	  "{s:\"\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"}", NULL, 0 },
	{ "s = \"\\u0001\\u007F\\u0080\\uFFFF\"\n", 0,
	  "{s:\"\\x01\\x7f\xc2\x80\xef\xbf\xbf\"}", NULL, 0 },
	{ "s = \"\\uD7FF\\uE000\"\n", 0, "{s:\"\xed\x9f\xbf\xee\x80\x80\"}",
	  NULL, 0 },
	{ "s = \"\"\n", 0, "{s:\"\"}", NULL, 0 },
	{ "s = \"a\tb 'q' #x\"\n", 0, "{s:\"a\\x09b 'q' #x\"}", NULL, 0 },
	{ "s = \"\xc3\xb1\xe2\x82\xac\xf0\x9f\x98\x80\"\n", 0,
	  "{s:\"\xc3\xb1\xe2\x82\xac\xf0\x9f\x98\x80\"}", NULL, 0 },
	/* literal strings */
	{ "s = 'C:\\path\\n \"q\"'\n", 0, "{s:\"C:\\\\path\\\\n \\\"q\\\"\"}",
	  NULL, 0 },
	{ "s = ''\n", 0, "{s:\"\"}", NULL, 0 },
	/* multi-line basic strings */
	{ "s = \"\"\"\nline1\nline2\"\"\"\n", 0, "{s:\"line1\\x0aline2\"}",
	  NULL, 0 },
	{ "s = \"\"\"\r\nline1\r\nline2\r\n\"\"\"\n", 0,
	  "{s:\"line1\\x0aline2\\x0a\"}", NULL, 0 },
	{ "s = \"\"\"\\\n   a \\\n\n  \tb\\   \n c\"\"\"\n", 0, "{s:\"a bc\"}",
	  NULL, 0 },
	{ "s = \"\"\"a\\\r\n  b\"\"\"\n", 0, "{s:\"ab\"}", NULL, 0 },
	{ "s = \"\"\"a\"\"b\"\"\"\n", 0, "{s:\"a\\\"\\\"b\"}", NULL, 0 },
	{ "s = \"\"\"\"\"x\"\"\"\"\"\n", 0, "{s:\"\\\"\\\"x\\\"\\\"\"}", NULL,
	  0 },
	{ "s = \"\"\"a\"\"\"\"\n", 0, "{s:\"a\\\"\"}", NULL, 0 },
	{ "s = \"\"\"\"\"\"\n", 0, "{s:\"\"}", NULL, 0 },
	{ "s = \"\"\"\\u00e9\\t\"\"\"\n", 0, "{s:\"\xc3\xa9\\x09\"}", NULL, 0 },
	/* multi-line literal strings */
	{ "s = '''\nraw \\n 'q' ''\n'''\n", 0, "{s:\"raw \\\\n 'q' ''\\x0a\"}",
	  NULL, 0 },
	{ "s = '''a''''\n", 0, "{s:\"a'\"}", NULL, 0 },
	{ "s = '''''a'''''\n", 0, "{s:\"''a''\"}", NULL, 0 },
	{ "s = '''\r\na\r\n'''\n", 0, "{s:\"a\\x0a\"}", NULL, 0 },
	/* integers */
	{ "a = 0\nb = +17\nc = -17\nd = 1_000\ne = 5_349_221\nf = +0\n"
	  "g = -0\n", 0, "{a:0,b:17,c:-17,d:1000,e:5349221,f:0,g:0}", NULL,
	  0 },
	{ "a = 0xDEAD_beef\nb = 0o755\nc = 0b1101\nd = 0x00ff\ne = 0o0\n"
	  "f = 0b0_1\n", 0, "{a:3735928559,b:493,c:13,d:255,e:0,f:1}", NULL,
	  0 },
	{ "a = 9223372036854775807\nb = -9223372036854775808\n"
	  "c = 0x7fffffffffffffff\nd = 0o777777777777777777777\n"
	  "e = +9_223_372_036_854_775_807\n", 0,
	  "{a:9223372036854775807,b:-9223372036854775808,"
	  "c:9223372036854775807,d:9223372036854775807,"
	  "e:9223372036854775807}", NULL, 0 },
	/* booleans */
	{ "t = true\nf = false\n", 0, "{t:true,f:false}", NULL, 0 },
	/* arrays */
	{ "a = [1, 2, 3]\nb = []\nc = [ ]\n", 0, "{a:[1,2,3],b:[],c:[]}", NULL,
	  0 },
	{ "a = [ [1], [\"x\", [true]], [] ]\n", 0,
	  "{a:[[1],[\"x\",[true]],[]]}", NULL, 0 },
	{ "a = [1, \"two\", true, {x = 1}, [2]]\n", 0,
	  "{a:[1,\"two\",true,{x:1},[2]]}", NULL, 0 },
	{ "a = [\n  1, # one\n  2,\n\n  # between\n]\n", 0, "{a:[1,2]}", NULL,
	  0 },
	{ "a = [1,2,]\n", 0, "{a:[1,2]}", NULL, 0 },
	{ "a = [\r\n1\r\n,\r\n2 # c\r\n]\r\n", 0, "{a:[1,2]}", NULL, 0 },
	{ "a = ['x', '''y''', \"\"\"z\"\"\"]\n", 0, "{a:[\"x\",\"y\",\"z\"]}",
	  NULL, 0 },
	{ "a = [{b = 1}, {b = 2}]\n", 0, "{a:[{b:1},{b:2}]}", NULL, 0 },
	/* inline tables */
	{ "p = { x = 1, y.z = 2, s = 'a' }\n", 0, "{p:{x:1,y:{z:2},s:\"a\"}}",
	  NULL, 0 },
	{ "e = {}\nf = { }\n", 0, "{e:{},f:{}}", NULL, 0 },
	{ "n = { a = { b = 1 }, c = [1,\n2] }\n", 0, "{n:{a:{b:1},c:[1,2]}}",
	  NULL, 0 },
	{ "[t]\np = {x=1}\n", 0, "{t:{p:{x:1}}}", NULL, 0 },
	{ "a.b = {c = 1}\na.d = 2\n", 0, "{a:{b:{c:1},d:2}}", NULL, 0 },

	/* errors: the input */
	{ "a = 1\n\0", 7, NULL, "t.toml:2:1: input contains a NUL byte", 0 },
	{ "s = \"a\0\"", 8, NULL, "t.toml:1:7: input contains a NUL byte", 0 },
	{ "s = \"\xff\"", 0, NULL, "t.toml:1:6: invalid UTF-8", 0 },
	{ "s = \"\xc0\xaf\"", 0, NULL, "t.toml:1:6: invalid UTF-8", 0 },
	{ "s = \"\xe0\x80\xaf\"", 0, NULL, "t.toml:1:6: invalid UTF-8", 0 },
	{ "s = \"\xed\xa0\x80\"", 0, NULL, "t.toml:1:6: invalid UTF-8", 0 },
	{ "s = \"\xf4\x90\x80\x80\"", 0, NULL, "t.toml:1:6: invalid UTF-8", 0 },
	{ "# \xe2\x82", 0, NULL, "t.toml:1:3: invalid UTF-8", 0 },
	{ "# \xe2\x82x", 0, NULL, "t.toml:1:3: invalid UTF-8", 0 },
	{ "\xc3\xa9\xc3\xa9 \x80", 0, NULL, "t.toml:1:4: invalid UTF-8", 0 },
	{ "a = 1\nb = 2\n", 0, NULL, "t.toml:2:3: input is larger than 8 bytes",
	  8 },
	{ "a = 1\n", 0, "{a:1}", NULL, 6 },
	{ "\xef\xbb\xbf", 0, NULL, "t.toml:1:1: input is larger than 1 bytes",
	  1 },
	{ "s = '\xc3\xa9'", 0, NULL, "t.toml:1:6: input is larger than 6 "
				      "bytes", 6 },
	{ "a = 1\r", 0, NULL,
	  "t.toml:1:6: carriage return without a line feed", 0 },
	{ "\r", 0, NULL, "t.toml:1:1: carriage return without a line feed",
	  0 },
	{ "# c\x01\n", 0, NULL, "t.toml:1:4: control character U+0001 in "
				"comment", 0 },
	{ "a = 1 # \x7f\n", 0, NULL, "t.toml:1:9: control character U+007F "
				     "in comment", 0 },
	{ "# c\rd\n", 0, NULL, "t.toml:1:4: control character U+000D in "
			       "comment", 0 },
	/* errors: keys and lines */
	{ "= 1", 0, NULL, "t.toml:1:1: expected a key, found '='", 0 },
	{ "a", 0, NULL, "t.toml:1:2: expected '=' after key 'a', found end of "
			"input", 0 },
	{ "a\nb = 1", 0, NULL, "t.toml:1:2: expected '=' after key 'a', found "
			       "end of line", 0 },
	{ "a b = 1", 0, NULL, "t.toml:1:3: expected '=' after key 'a', found "
			      "'b'", 0 },
	{ "a = ", 0, NULL, "t.toml:1:5: expected a value, found end of input",
	  0 },
	{ "a =\nb = 1", 0, NULL, "t.toml:1:4: expected a value, found end of "
				 "line", 0 },
	{ "a = 1 b = 2", 0, NULL, "t.toml:1:7: expected the end of the line, "
				  "found 'b'", 0 },
	{ "a = 1 2", 0, NULL, "t.toml:1:7: expected the end of the line, "
			      "found '2'", 0 },
	{ "a. = 1", 0, NULL, "t.toml:1:4: expected a key, found '='", 0 },
	{ ".a = 1", 0, NULL, "t.toml:1:1: expected a key, found '.'", 0 },
	{ "a..b = 1", 0, NULL, "t.toml:1:3: expected a key, found '.'", 0 },
	{ "a\xc3\xa9 = 1", 0, NULL, "t.toml:1:2: expected '=' after key 'a', "
				    "found a non-ASCII character", 0 },
	{ "\"\"\"a\"\"\" = 1", 0, NULL,
	  "t.toml:1:1: a multi-line string cannot be a key", 0 },
	{ "'''a''' = 1", 0, NULL,
	  "t.toml:1:1: a multi-line string cannot be a key", 0 },
	{ "\"a = 1", 0, NULL, "t.toml:1:1: unterminated string", 0 },
	{ "\x01 = 1", 0, NULL, "t.toml:1:1: expected a key, found U+0001", 0 },
	{ "s = \"\xc3\xa9\" x", 0, NULL, "t.toml:1:9: expected the end of the "
					 "line, found 'x'", 0 },
	{ "s = \"\"\"a\nb\"\"\" x", 0, NULL, "t.toml:2:6: expected the end of "
					     "the line, found 'x'", 0 },
	/* errors: headers */
	{ "[a", 0, NULL, "t.toml:1:3: expected ']' after the table name, found "
			 "end of input", 0 },
	{ "[[a]", 0, NULL, "t.toml:1:4: expected ']]' after the table name",
	  0 },
	{ "[[a] ]", 0, NULL, "t.toml:1:4: expected ']]' after the table name",
	  0 },
	{ "[]", 0, NULL, "t.toml:1:2: expected a key, found ']'", 0 },
	{ "[[]]", 0, NULL, "t.toml:1:3: expected a key, found ']'", 0 },
	{ "[a] b = 1", 0, NULL, "t.toml:1:5: expected the end of the line, "
				"found 'b'", 0 },
	{ "[ [a] ]", 0, NULL, "t.toml:1:3: expected a key, found '['", 0 },
	{ "[a.]", 0, NULL, "t.toml:1:4: expected a key, found ']'", 0 },
	{ "[a b]", 0, NULL, "t.toml:1:4: expected ']' after the table name, "
			    "found 'b'", 0 },
	{ "[a]\n[[b]]\n[a]", 0, NULL, "t.toml:3:1: table 'a' is already "
				      "defined at 1:1", 0 },
	/* errors: redefinitions */
	{ "a = 1\na = 2\n", 0, NULL, "t.toml:2:1: duplicate key 'a' (first "
				     "defined at 1:1)", 0 },
	{ "a = 1\n \"a\" = 2\n", 0, NULL, "t.toml:2:2: duplicate key 'a'", 0 },
	{ "a.b = 1\na.b = 2", 0, NULL, "t.toml:2:3: duplicate key 'a.b' (first "
				       "defined at 1:3)", 0 },
	{ "a = 1\na.b = 2\n", 0, NULL, "t.toml:2:1: cannot define key 'a.b': "
				       "'a' is an integer defined at 1:1", 0 },
	{ "a = [1]\na.b = 2\n", 0, NULL, "t.toml:2:1: cannot define key "
					 "'a.b': 'a' is an array", 0 },
	{ "[a]\n[a]\n", 0, NULL, "t.toml:2:1: table 'a' is already defined at "
				 "1:1", 0 },
	{ "[a.b]\n[a.b]\n", 0, NULL, "t.toml:2:1: table 'a.b' is already "
				     "defined at 1:1", 0 },
	{ "[a]\nb = 1\n[a.b]\n", 0, NULL, "t.toml:3:1: cannot define table "
					  "'a.b': it is already an integer "
					  "defined at 2:1", 0 },
	{ "[a]\nb = 1\n[a.b.c]\n", 0, NULL, "t.toml:3:4: cannot define table "
					    "'a.b.c': 'a.b' is an integer", 0 },
	{ "a = {}\n[a]\n", 0, NULL, "t.toml:2:1: table 'a' is already defined "
				    "at 1:5", 0 },
	{ "a = {}\n[a.b]\n", 0, NULL, "t.toml:2:2: cannot define table 'a.b': "
				      "inline table 'a' (1:5) cannot be "
				      "extended", 0 },
	{ "a = {b = 1}\na.c = 2\n", 0, NULL, "t.toml:2:1: cannot define key "
					     "'a.c': inline table 'a' (1:5) "
					     "cannot be extended", 0 },
	{ "a = {b = {}}\n[a.b.c]\n", 0, NULL, "t.toml:2:2: cannot define table "
					      "'a.b.c': inline table 'a'", 0 },
	{ "[fruit]\napple.color = 1\n[fruit.apple]\n", 0, NULL,
	  "t.toml:3:1: table 'fruit.apple' is already defined at 2:1", 0 },
	{ "a.b = 1\n[a]\n", 0, NULL, "t.toml:2:1: table 'a' is already defined "
				     "at 1:1", 0 },
	{ "[a.b.c]\nz=9\n[a]\nb.c.t = 1\n", 0, NULL,
	  "t.toml:4:3: cannot define key 'b.c.t': table 'b.c' is defined by "
	  "the header at 1:1", 0 },
	{ "[a.b.c.d]\nz=9\n[a]\nb.c.d.k.t = 1\n", 0, NULL,
	  "t.toml:4:5: cannot define key 'b.c.d.k.t': table 'b.c.d' is "
	  "defined by the header at 1:1", 0 },
	{ "[a.b.c]\n[a]\nb.d = 1\n[a.b]\n", 0, NULL,
	  "t.toml:4:1: table 'a.b' is already defined at 1:4", 0 },
	{ "[[a]]\n[a]\n", 0, NULL, "t.toml:2:1: cannot define table 'a': it is "
				   "already an array of tables defined at 1:3",
	  0 },
	{ "a = [1]\n[[a]]\n", 0, NULL, "t.toml:2:1: cannot define array of "
				       "tables 'a': 'a' is already a static "
				       "array defined at 1:1", 0 },
	{ "a = []\n[a.b]\n", 0, NULL, "t.toml:2:2: cannot define table 'a.b': "
				      "'a' is an array defined at 1:1", 0 },
	{ "[a]\n[[a]]\n", 0, NULL, "t.toml:2:1: cannot define array of tables "
				   "'a': 'a' is already a table defined at "
				   "1:2", 0 },
	{ "a = 1\n[[a]]\n", 0, NULL, "t.toml:2:1: cannot define array of "
				     "tables 'a': 'a' is already an integer",
	  0 },
	{ "[[a.b]]\n[a]\nb.y = 2\n", 0, NULL, "t.toml:3:1: cannot define key "
					      "'b.y': 'b' is an array of "
					      "tables defined at 1:5", 0 },
	{ "a = {x = 1, x = 2}", 0, NULL, "t.toml:1:13: duplicate key 'x' "
					 "(first defined at 1:6)", 0 },
	{ "a = {x.y = 1, x = 2}", 0, NULL, "t.toml:1:15: duplicate key 'x'",
	  0 },
	{ "a = {x = {y = 1}, x.z = 2}", 0, NULL,
	  "t.toml:1:19: cannot define key 'x.z': inline table 'x' (1:10) "
	  "cannot be extended", 0 },
	/* errors: inline tables and arrays */
	{ "a = {x = 1,}", 0, NULL, "t.toml:1:12: trailing comma in inline "
				   "table", 0 },
	{ "a = {x = 1\n}", 0, NULL, "t.toml:1:11: an inline table must be on "
				    "one line", 0 },
	{ "a = {\nx = 1}", 0, NULL, "t.toml:1:6: expected a key, found end of "
				    "line", 0 },
	{ "a = {x = 1 # c\n}", 0, NULL, "t.toml:1:12: an inline table must be "
					"on one line", 0 },
	{ "a = {x = 1 y = 2}", 0, NULL, "t.toml:1:12: expected ',' or '}' in "
					"inline table, found 'y'", 0 },
	{ "a = {x = 1", 0, NULL, "t.toml:1:5: unterminated inline table", 0 },
	{ "a = {", 0, NULL, "t.toml:1:6: expected a key, found end of input",
	  0 },
	{ "a = {,}", 0, NULL, "t.toml:1:6: expected a key, found ','", 0 },
	{ "a = [1 2]", 0, NULL, "t.toml:1:8: expected ',' or ']' in array, "
				"found '2'", 0 },
	{ "a = [1,", 0, NULL, "t.toml:1:5: unterminated array", 0 },
	{ "a = [1\n", 0, NULL, "t.toml:1:5: unterminated array", 0 },
	{ "a = [\n# c\n", 0, NULL, "t.toml:1:5: unterminated array", 0 },
	{ "a = [,]", 0, NULL, "t.toml:1:6: expected a value, found ','", 0 },
	{ "a = [1,,2]", 0, NULL, "t.toml:1:8: expected a value, found ','", 0 },
	{ "a = [1}", 0, NULL, "t.toml:1:7: expected ',' or ']' in array, found "
			      "'}'", 0 },
	{ "a = [\r1]", 0, NULL, "t.toml:1:6: carriage return without a line "
				"feed", 0 },
	{ "a = [ # \x02\n]", 0, NULL, "t.toml:1:9: control character U+0002 "
				      "in comment", 0 },
	{ "a = ]", 0, NULL, "t.toml:1:5: expected a value, found ']'", 0 },
	/* errors: strings */
	{ "s = \"abc", 0, NULL, "t.toml:1:5: unterminated string", 0 },
	{ "s = \"abc\ndef\"", 0, NULL, "t.toml:1:5: unterminated string", 0 },
	{ "s = \"abc\r\n\"", 0, NULL, "t.toml:1:5: unterminated string", 0 },
	{ "s = 'abc", 0, NULL, "t.toml:1:5: unterminated string", 0 },
	{ "s = 'abc\n'", 0, NULL, "t.toml:1:5: unterminated string", 0 },
	{ "s = \"\"\"abc", 0, NULL, "t.toml:1:5: unterminated string", 0 },
	{ "s = \"\"\"abc\"\"", 0, NULL, "t.toml:1:5: unterminated string", 0 },
	{ "s = '''abc\n''", 0, NULL, "t.toml:1:5: unterminated string", 0 },
	{ "s = \"\\", 0, NULL, "t.toml:1:6: invalid escape sequence", 0 },
	{ "s = \"a\\qb\"", 0, NULL, "t.toml:1:7: invalid escape sequence '\\q'",
	  0 },
	{ "s = \"\\x41\"", 0, NULL, "t.toml:1:6: invalid escape sequence '\\x'",
	  0 },
	{ "s = \"\\e\"", 0, NULL, "t.toml:1:6: invalid escape sequence '\\e'",
	  0 },
	{ "s = \"\\'\"", 0, NULL, "t.toml:1:6: invalid escape sequence '\\''",
	  0 },
	{ "s = \"\\0\"", 0, NULL, "t.toml:1:6: invalid escape sequence '\\0'",
	  0 },
	{ "s = \"a\\ b\"", 0, NULL, "t.toml:1:7: invalid escape sequence", 0 },
	{ "s = \"a\\\nb\"", 0, NULL, "t.toml:1:7: invalid escape sequence", 0 },
	{ "s = \"\\u12\"", 0, NULL, "t.toml:1:6: invalid escape sequence: "
				    "'\\u' takes 4 hex digits", 0 },
	{ "s = \"\\u12g4\"", 0, NULL, "t.toml:1:6: invalid escape sequence: "
				      "'\\u' takes 4 hex digits", 0 },
	{ "s = \"\\U0000004\"", 0, NULL, "t.toml:1:6: invalid escape sequence: "
					 "'\\U' takes 8 hex digits", 0 },
	{ "s = \"\\u", 0, NULL, "t.toml:1:6: invalid escape sequence: '\\u' "
				"takes 4 hex digits", 0 },
	{ "s = \"\\uD800\"", 0, NULL, "t.toml:1:6: invalid escape sequence: "
				      "U+D800 is not a unicode scalar value",
	  0 },
	{ "s = \"\\udfff\"", 0, NULL, "t.toml:1:6: invalid escape sequence: "
				      "U+DFFF is not a unicode scalar value",
	  0 },
	{ "s = \"\\U0000D800\"", 0, NULL, "t.toml:1:6: invalid escape "
					  "sequence: U+D800", 0 },
	{ "s = \"\\U00110000\"", 0, NULL, "t.toml:1:6: invalid escape "
					  "sequence: U+110000 is not", 0 },
	{ "s = \"\\UFFFFFFFF\"", 0, NULL, "t.toml:1:6: invalid escape "
					  "sequence: U+FFFFFFFF is not", 0 },
	{ "s = \"\\u0000\"", 0, NULL, "t.toml:1:6: unsupported escape "
				      "sequence: U+0000 (NUL)", 0 },
	{ "\"\\u0000\" = 1", 0, NULL, "t.toml:1:2: unsupported escape sequence",
	  0 },
	{ "s = \"\"\"a\\ b\"\"\"", 0, NULL,
	  "t.toml:1:9: invalid escape sequence: only whitespace may follow a "
	  "line-ending backslash", 0 },
	{ "s = \"\"\"\\q\"\"\"", 0, NULL, "t.toml:1:8: invalid escape sequence "
					  "'\\q'", 0 },
	{ "s = \"a\x01" "b\"", 0, NULL, "t.toml:1:7: control character "
					  "U+0001 in string", 0 },
	{ "s = \"a\x1f\"", 0, NULL, "t.toml:1:7: control character U+001F in "
				    "string", 0 },
	{ "s = 'a\x7f'", 0, NULL, "t.toml:1:7: control character U+007F in "
				  "string", 0 },
	{ "s = 'a\x08'", 0, NULL, "t.toml:1:7: control character U+0008", 0 },
	{ "s = \"\"\"\n\x0b\"\"\"", 0, NULL, "t.toml:2:1: control character "
					     "U+000B in string", 0 },
	{ "s = '''\nab\x1b'''", 0, NULL, "t.toml:2:3: control character "
					 "U+001B in string", 0 },
	{ "s = \"\"\"a\rb\"\"\"", 0, NULL, "t.toml:1:9: carriage return "
					   "without a line feed", 0 },
	{ "s = \"\"\"\rb\"\"\"", 0, NULL, "t.toml:1:8: carriage return "
					  "without a line feed", 0 },
	{ "s = \"a\rb\"", 0, NULL, "t.toml:1:5: unterminated string", 0 },
	{ "s = \"\"\"a\"\"\"\"\"\"", 0, NULL,
	  "t.toml:1:9: too many quotation marks", 0 },
	{ "s = '''a''''''", 0, NULL, "t.toml:1:9: too many quotation marks",
	  0 },
	{ "s = \"a\" \"b\"", 0, NULL, "t.toml:1:9: expected the end of the "
				      "line, found '\"'", 0 },
	/* errors: integers, floats, dates, bare words */
	{ "a = 01", 0, NULL, "t.toml:1:5: invalid integer '01': leading zeros "
			     "are not allowed", 0 },
	{ "a = -01", 0, NULL, "t.toml:1:5: invalid integer '-01': leading "
			      "zeros", 0 },
	{ "a = 0_0", 0, NULL, "t.toml:1:5: invalid integer '0_0': leading "
			      "zeros", 0 },
	{ "a = 1__0", 0, NULL, "t.toml:1:5: invalid integer '1__0': '_' must "
			       "be between digits", 0 },
	{ "a = 1_", 0, NULL, "t.toml:1:5: invalid integer '1_': '_' must be "
			     "between digits", 0 },
	{ "a = 0x_1", 0, NULL, "t.toml:1:5: invalid integer '0x_1': '_' must "
			       "be between digits", 0 },
	{ "a = _1", 0, NULL, "t.toml:1:5: invalid value '_1' (strings must be "
			     "quoted)", 0 },
	{ "a = 0x", 0, NULL, "t.toml:1:5: invalid integer '0x'", 0 },
	{ "a = 0xg", 0, NULL, "t.toml:1:5: invalid integer '0xg'", 0 },
	{ "a = 0X1", 0, NULL, "t.toml:1:5: invalid integer '0X1'", 0 },
	{ "a = 0o8", 0, NULL, "t.toml:1:5: invalid integer '0o8'", 0 },
	{ "a = 0b2", 0, NULL, "t.toml:1:5: invalid integer '0b2'", 0 },
	{ "a = 12abc", 0, NULL, "t.toml:1:5: invalid integer '12abc'", 0 },
	{ "a = 1-2", 0, NULL, "t.toml:1:5: invalid integer '1-2'", 0 },
	{ "a = +0x1", 0, NULL, "t.toml:1:5: invalid integer '+0x1': no sign is "
			       "allowed with a base prefix", 0 },
	{ "a = -0b1", 0, NULL, "t.toml:1:5: invalid integer '-0b1': no sign",
	  0 },
	{ "a = +-1", 0, NULL, "t.toml:1:5: invalid value '+-1'", 0 },
	{ "a = 9223372036854775808", 0, NULL,
	  "t.toml:1:5: integer '9223372036854775808' is out of range", 0 },
	{ "a = -9223372036854775809", 0, NULL,
	  "t.toml:1:5: integer '-9223372036854775809' is out of range", 0 },
	{ "a = 0x8000000000000000", 0, NULL,
	  "t.toml:1:5: integer '0x8000000000000000' is out of range", 0 },
	{ "a = 0xffffffffffffffffff", 0, NULL,
	  "t.toml:1:5: integer '0xffffffffffffffffff' is out of range", 0 },
	{ "a = 99999999999999999999999", 0, NULL,
	  "t.toml:1:5: integer '99999999999999999999999' is out of range", 0 },
	{ "a = 1.5", 0, NULL, "t.toml:1:5: floats are not supported", 0 },
	{ "a = -0.0", 0, NULL, "t.toml:1:5: floats are not supported", 0 },
	{ "a = 1e5", 0, NULL, "t.toml:1:5: floats are not supported", 0 },
	{ "a = 5E+22", 0, NULL, "t.toml:1:5: floats are not supported", 0 },
	{ "a = inf", 0, NULL, "t.toml:1:5: floats are not supported", 0 },
	{ "a = -inf", 0, NULL, "t.toml:1:5: floats are not supported", 0 },
	{ "a = +nan", 0, NULL, "t.toml:1:5: floats are not supported", 0 },
	{ "a = [1, nan]", 0, NULL, "t.toml:1:9: floats are not supported", 0 },
	{ "a = 1979-05-27", 0, NULL, "t.toml:1:5: dates and times are not "
				     "supported", 0 },
	{ "a = 1979-05-27T07:32:00Z", 0, NULL, "t.toml:1:5: dates and times "
					       "are not supported", 0 },
	{ "a = 1979-05-27 07:32:00", 0, NULL, "t.toml:1:5: dates and times",
	  0 },
	{ "a = 07:32:00", 0, NULL, "t.toml:1:5: dates and times are not "
				   "supported", 0 },
	{ "a = tru", 0, NULL, "t.toml:1:5: invalid value 'tru' (strings must "
			      "be quoted)", 0 },
	{ "a = True", 0, NULL, "t.toml:1:5: invalid value 'True'", 0 },
	{ "a = truex", 0, NULL, "t.toml:1:5: invalid value 'truex'", 0 },
	{ "a = hello world", 0, NULL, "t.toml:1:5: invalid value 'hello'", 0 },
	{ "a = .5", 0, NULL, "t.toml:1:5: invalid value '.5'", 0 },
	{ "a = @", 0, NULL, "t.toml:1:5: expected a value, found '@'", 0 },
	{ "a = \xc3\xa9", 0, NULL, "t.toml:1:5: expected a value, found a "
				   "non-ASCII character", 0 },
	{ "a = 1\nb = [\n  1,\n  x,\n]\n", 0, NULL,
	  "t.toml:4:3: invalid value 'x'", 0 },
};

/* Run one case; the error must be SPX_USAGE and contain c->err. */
static void run_case(size_t i, const struct tcase *c)
{
	size_t len = c->len ? c->len : strlen(c->in);
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_toml *t;

	spx_error_clear();
	t = spx_toml_parse("t.toml", c->in, len, c->max ? c->max : 1 << 20);
	if (c->want) {
		if (!t) {
			T_OK(0, "case %zu parses", i);
			printf("#   input '%s'\n#   error '%s'\n", c->in,
			       spx_errmsg());
			return;
		}
		dump(&b, t);
		T_STR(b.p, c->want, "case %zu parses to %s", i, c->want);
		spx_buf_release(&b);
		spx_toml_free(t);
		return;
	}
	if (t) {
		dump(&b, t);
		T_OK(0, "case %zu fails with '%s'", i, c->err);
		printf("#   input '%s'\n#   parsed '%s'\n", c->in, b.p);
		spx_buf_release(&b);
		spx_toml_free(t);
		return;
	}
	if (!T_OK(strstr(spx_errmsg(), c->err) &&
		  spx_errstatus() == SPX_USAGE,
		  "case %zu fails with '%s'", i, c->err))
		printf("#   got  '%s' (status %d)\n", spx_errmsg(),
		       spx_errstatus());
}

static char *repeat(const char *s, size_t n)
{
	struct spx_buf b = SPX_BUF_INIT;

	for (size_t i = 0; i < n; i++)
		spx_buf_adds(&b, s);
	return spx_buf_detach(&b, NULL);
}

/* Parse text expecting failure with want in the message. */
static void expect_err(const char *text, const char *want, const char *name)
{
	struct spx_toml *t = spx_toml_parse("t.toml", text, strlen(text),
					    1 << 20);

	if (!T_OK(!t && strstr(spx_errmsg(), want), "%s", name))
		printf("#   got '%s'\n", t ? "(parsed)" : spx_errmsg());
	spx_toml_free(t);
}

static void expect_ok(const char *text, const char *name)
{
	struct spx_toml *t = spx_toml_parse("t.toml", text, strlen(text),
					    1 << 20);

	if (!T_OK(t != NULL, "%s", name))
		printf("#   got '%s'\n", spx_errmsg());
	spx_toml_free(t);
}

static void test_limits(void)
{
	struct spx_buf b = SPX_BUF_INIT;
	char *o, *c, *k;

	/* a's value is at depth 1, so 32 nested arrays reach depth 32. */
	o = repeat("[", 32);
	c = repeat("]", 32);
	spx_buf_addf(&b, "a = %s%s", o, c);
	expect_ok(b.p, "32 nested arrays are allowed");
	free(o);
	free(c);
	spx_buf_reset(&b);
	o = repeat("[", 33);
	c = repeat("]", 33);
	spx_buf_addf(&b, "a = %s%s", o, c);
	expect_err(b.p, "t.toml:1:37: nesting deeper than 32 levels",
		   "33 nested arrays are refused at the 33rd");
	free(o);
	free(c);
	spx_buf_reset(&b);
	o = repeat("[", 31);
	c = repeat("]", 31);
	spx_buf_addf(&b, "a = %s1%s", o, c);
	expect_ok(b.p, "an integer inside 31 arrays is at depth 32");
	free(o);
	free(c);
	spx_buf_reset(&b);
	o = repeat("[", 32);
	c = repeat("]", 32);
	spx_buf_addf(&b, "a = %s1%s", o, c);
	expect_err(b.p, "t.toml:1:37: nesting deeper than 32 levels",
		   "an integer inside 32 arrays is refused");
	free(o);
	free(c);
	spx_buf_reset(&b);
	/* A hostile document nests far deeper; it must fail, not crash. */
	o = repeat("[", 100000);
	spx_buf_addf(&b, "a = %s", o);
	expect_err(b.p, "nesting deeper than 32 levels",
		   "100000 open brackets fail cleanly");
	free(o);
	spx_buf_reset(&b);
	o = repeat("{b = ", 100000);
	spx_buf_addf(&b, "a = %s", o);
	expect_err(b.p, "nesting deeper than 32 levels",
		   "100000 nested inline tables fail cleanly");
	free(o);
	spx_buf_reset(&b);
	o = repeat("a.", 31);
	spx_buf_addf(&b, "%sz = 1", o);
	expect_ok(b.p, "a dotted key of 32 parts");
	free(o);
	spx_buf_reset(&b);
	o = repeat("a.", 32);
	spx_buf_addf(&b, "%sz = 1", o);
	expect_err(b.p, "t.toml:1:65: key has more than 32 parts",
		   "a dotted key of 33 parts");
	free(o);
	spx_buf_reset(&b);
	o = repeat("a.", 31);
	spx_buf_addf(&b, "[%sz]", o);
	expect_ok(b.p, "a table header of 32 parts");
	spx_buf_reset(&b);
	spx_buf_addf(&b, "[%sz]\nx = 1", o);
	expect_err(b.p, "t.toml:2:5: nesting deeper than 32 levels",
		   "a key under a table at depth 32");
	free(o);
	spx_buf_reset(&b);
	o = repeat("a.", 31);
	spx_buf_addf(&b, "[[%sz]]\n", o);
	expect_err(b.p, "t.toml:1:1: nesting deeper than 32 levels",
		   "an array of tables whose tables pass depth 32");
	free(o);
	spx_buf_reset(&b);
	k = repeat("k", SPX_TOML_MAX_KEY);
	spx_buf_addf(&b, "%s = 1\n\"%s\" = 2", k, k);
	expect_err(b.p, "t.toml:2:1: duplicate key", "a key of 256 bytes");
	spx_buf_reset(&b);
	spx_buf_addf(&b, "a = 1\nb.%sk = 1", k);
	expect_err(b.p, "t.toml:2:3: key longer than 256 bytes",
		   "a key of 257 bytes");
	spx_buf_reset(&b);
	spx_buf_addf(&b, "'%sk' = 1", k);
	expect_err(b.p, "t.toml:1:1: key longer than 256 bytes",
		   "a quoted key of 257 bytes");
	free(k);
	spx_buf_reset(&b);
	o = repeat("1", 200);
	spx_buf_addf(&b, "a = %s", o);
	expect_err(b.p, "t.toml:1:5: value is too long", "a 200-digit number");
	free(o);
	spx_buf_release(&b);
}

static void test_tree(void)
{
	const char *doc = "a = 1\n"
			  "[t]\n"
			  "  b = \"x\"\n"
			  "[[arr]]\n"
			  "c = [1, 2]\n"
			  "d.e = true\n"
			  "[s.u]\n";
	struct spx_toml *t = spx_toml_parse("t.toml", doc, strlen(doc), 4096);
	const struct spx_toml *v;
	const struct spx_toml_entry *e;

	if (!T_OK(t != NULL, "the position document parses"))
		return;
	T_INT(t->line * 100 + t->col, 101, "the root is at 1:1");
	v = spx_toml_get(t, "a");
	T_INT(v->line * 100 + v->col, 105, "a's value is at 1:5");
	T_INT(v->type, SPX_TOML_INTEGER, "a is an integer");
	v = spx_toml_get(t, "t");
	T_INT(v->line * 100 + v->col, 201, "t is at its header, 2:1");
	e = spx_toml_get_entry(t, "t");
	T_INT(e->line * 100 + e->col, 202, "t's key is at 2:2");
	v = spx_toml_path(t, "t.b");
	T_INT(v->line * 100 + v->col, 307, "t.b's value is at 3:7");
	T_STR(v->v.s, "x", "path finds t.b");
	e = spx_toml_get_entry(spx_toml_get(t, "t"), "b");
	T_INT(e->line * 100 + e->col, 303, "t.b's key is at 3:3");
	v = spx_toml_get(t, "arr");
	T_INT(v->type, SPX_TOML_ARRAY, "arr is an array");
	T_INT(spx_toml_len(v), 1, "arr has one table");
	v = spx_toml_at(v, 0);
	T_INT(v->line * 100 + v->col, 401, "arr[0] is at 4:1");
	v = spx_toml_get(v, "c");
	T_INT(v->line * 100 + v->col, 505, "c is at 5:5");
	T_INT(spx_toml_at(v, 1)->line * 100 + spx_toml_at(v, 1)->col, 509,
	      "c[1] is at 5:9");
	T_INT(spx_toml_at(v, 1)->v.i, 2, "c[1] is 2");
	T_OK(spx_toml_at(v, 2) == NULL, "c[2] is out of range");
	v = spx_toml_get(spx_toml_at(spx_toml_get(t, "arr"), 0), "d");
	T_INT(v->line * 100 + v->col, 601, "the dotted table d is at 6:1");
	v = spx_toml_path(t, "s");
	T_INT(v->line * 100 + v->col, 702, "the implicit table s is at 7:2");
	T_OK(spx_toml_path(t, "s.u") != NULL, "path finds s.u");
	T_OK(spx_toml_path(t, "s.x") == NULL, "path misses s.x");
	T_OK(spx_toml_path(t, "a.b") == NULL, "path stops at a non-table");
	T_OK(spx_toml_get(spx_toml_get(t, "a"), "x") == NULL,
	     "get on an integer is NULL");
	T_OK(spx_toml_get(NULL, "x") == NULL, "get on NULL is NULL");
	T_INT(spx_toml_len(t), 4, "the root has 4 keys");
	T_INT(spx_toml_len(spx_toml_get(t, "a")), 0, "an integer has length 0");
	T_INT(spx_toml_at(t, 1)->type, SPX_TOML_TABLE,
	      "at() on a table gives its values in order");
	T_STR(spx_toml_type_name(SPX_TOML_BOOL), "boolean", "type names");
	T_STR(spx_toml_type_name(SPX_TOML_TABLE), "table", "type names");
	spx_toml_free(t);

	t = spx_toml_parse(NULL, "x", 1, 10);
	T_OK(!t && !strncmp(spx_errmsg(), "<input>:1:2: ", 13),
	     "a NULL file name reads <input>");
	t = spx_toml_parse("t.toml", NULL, 0, 10);
	T_OK(t && t->n == 0, "NULL text of length 0 is an empty document");
	spx_toml_free(t);
	spx_toml_free(NULL);
}

/* Tables large enough to be indexed keep order and find every key. */
static void test_big_table(void)
{
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_toml *t;
	char key[32];
	bool ok = true;

	for (int i = 0; i < 2000; i++)
		spx_buf_addf(&b, "k%d = %d\n", i, i);
	t = spx_toml_parse("t.toml", b.p, b.len, 1 << 20);
	if (T_OK(t != NULL, "a table of 2000 keys parses")) {
		for (int i = 0; i < 2000; i++) {
			snprintf(key, sizeof(key), "k%d", i);
			ok = ok && spx_toml_get(t, key) &&
			     spx_toml_get(t, key)->v.i == i &&
			     !strcmp(t->ent[i].key, key);
		}
		T_OK(ok, "every key is found and in order");
		T_OK(!spx_toml_get(t, "k2000"), "a missing key is missing");
	}
	spx_toml_free(t);
	spx_buf_addf(&b, "k1234 = 0\n");
	t = spx_toml_parse("t.toml", b.p, b.len, 1 << 20);
	T_OK(!t && strstr(spx_errmsg(), "t.toml:2001:1: duplicate key 'k1234' "
					 "(first defined at 1235:1)"),
	     "a duplicate among 2000 keys is found");
	spx_buf_release(&b);
}

int main(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++)
		run_case(i, &cases[i]);
	test_limits();
	test_tree();
	test_big_table();
	return t_done();
}
