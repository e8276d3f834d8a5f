#!/usr/bin/env python3
"""gen-ec2.py: C tables for the Query layer from botocore's service models.

    scripts/gen-ec2.py [--models DIR] [--actions FILE] [--out DIR]

Reads the actions listed in scripts/ec2-actions.txt, follows their input
and output shapes transitively in the model Debian's awscli ships, and
writes OUT/ec2q_model.c and OUT/ec2q_model.h (OUT defaults to lib/gw). The
output depends only on the model and the list, so it is committed and a
build needs no awscli; `make ec2-model` regenerates it and
tests/bats/ec2-model.bats checks that the committed files are what this
script makes now.

Plain python3 standard library. A model feature the C side does not
handle (a flattened list in an EC2 request, a recursive input shape, ...)
stops the generator with a message rather than emitting a wrong table.
"""

import argparse
import json
import os
import sys

MODELS = "/usr/lib/python3/dist-packages/awscli/botocore/data"
HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

TYPES = {
    "structure": "EC2Q_STRUCTURE",
    "list": "EC2Q_LIST",
    "map": "EC2Q_MAP",
    "string": "EC2Q_STRING",
    "integer": "EC2Q_INTEGER",
    "long": "EC2Q_LONG",
    "boolean": "EC2Q_BOOLEAN",
    "double": "EC2Q_DOUBLE",
    "float": "EC2Q_FLOAT",
    "timestamp": "EC2Q_TIMESTAMP",
    "blob": "EC2Q_BLOB",
}


def die(msg):
    sys.stderr.write("gen-ec2.py: %s\n" % msg)
    sys.exit(1)


def read_actions(path):
    """[(service, dir, [actions], {open enums})] in file order."""
    services = []
    cur = None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            words = line.split()
            where = "%s:%d" % (path, lineno)
            if words[0] == "service" and len(words) == 3:
                cur = {"name": words[1], "dir": words[2], "actions": [],
                       "open": set(), "members": []}
                services.append(cur)
            elif words[0] == "member" and len(words) == 5:
                if cur is None:
                    die("%s: member before any service" % where)
                cur["members"].append((where, words[1], words[2], words[3],
                                       words[4]))
            elif words[0] in ("action", "open-enum") and len(words) == 2:
                if cur is None:
                    die("%s: %s before any service" % (where, words[0]))
                if words[0] == "action":
                    if words[1] in cur["actions"]:
                        die("%s: %s listed twice" % (where, words[1]))
                    cur["actions"].append(words[1])
                else:
                    cur["open"].add(words[1])
            else:
                die("%s: cannot read '%s'" % (where, line))
    if not services:
        die("%s: no service" % path)
    return services


def cstr(s):
    if s is None:
        return "NULL"
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            die("non-ASCII name %r" % s)
    return '"' + "".join(out) + '"'


def ident(s):
    return "".join(c if c.isalnum() else "_" for c in s)


def upper_first(s):
    return s[:1].upper() + s[1:]


def lower_first(s):
    return s[:1].lower() + s[1:]


class Service:
    def __init__(self, spec, models):
        path = os.path.join(models, spec["dir"], "service-2.json")
        try:
            with open(path, encoding="utf-8") as f:
                self.model = json.load(f)
        except OSError as e:
            die("cannot read the model: %s" % e)
        self.path = spec["dir"] + "/service-2.json"
        self.name = spec["name"]
        self.meta = self.model["metadata"]
        self.proto = self.meta["protocol"]
        if self.proto not in ("ec2", "query"):
            die("%s: protocol %s is not a Query protocol" % (self.name,
                                                            self.proto))
        self.shapes = self.model["shapes"]
        # Members a newer model has, added before anything is walked: a
        # structure that has the member already, or a target shape the
        # model lacks, stops the generator.
        for where, sname, mname, target, loc in spec["members"]:
            st = self.shapes.get(sname)
            if st is None or st.get("type") != "structure":
                die("%s: member: %s is not a structure" % (where, sname))
            if mname in st["members"]:
                die("%s: member: %s has %s already" % (where, sname, mname))
            if target not in self.shapes:
                die("%s: member: no shape %s" % (where, target))
            st["members"][mname] = {"shape": target, "locationName": loc}
        self.open = spec["open"]
        self.actions = spec["actions"]
        self.used = {}  # shape name -> set of "in" / "out"
        for a in self.actions:
            op = self.model["operations"].get(a)
            if op is None:
                die("%s: no operation %s in %s" % (self.name, a, self.path))
            if "input" in op:
                self.walk(op["input"]["shape"], "in", [])
            if "output" in op:
                self.walk(op["output"]["shape"], "out", [])
        for e in self.open:
            if e not in self.used:
                die("%s: open-enum %s is not used by any action" %
                    (self.name, e))
            if "enum" not in self.shapes[e]:
                die("%s: open-enum %s is not an enum" % (self.name, e))
        self.names = sorted(self.used)
        self.index = {n: i for i, n in enumerate(self.names)}

    def walk(self, name, way, stack):
        s = self.shapes.get(name)
        if s is None:
            die("%s: no shape %s" % (self.name, name))
        if s["type"] not in TYPES:
            die("%s: shape %s has type %s" % (self.name, name, s["type"]))
        if name in stack:
            if way == "in":
                die("%s: input shape %s is recursive" % (self.name, name))
            return
        seen = self.used.setdefault(name, set())
        if way in seen:
            return
        seen.add(way)
        stack = stack + [name]
        t = s["type"]
        if t == "list":
            if s.get("flattened"):
                die("%s: list %s is flattened" % (self.name, name))
            self.walk(s["member"]["shape"], way, stack)
        elif t == "map":
            if s.get("flattened"):
                die("%s: map %s is flattened" % (self.name, name))
            self.walk(s["key"]["shape"], way, stack)
            self.walk(s["value"]["shape"], way, stack)
        elif t == "structure":
            for m in s["members"].values():
                if m.get("flattened"):
                    die("%s: member of %s is flattened" % (self.name, name))
                self.walk(m["shape"], way, stack)

    # The name of a member in a request: botocore's EC2Serializer
    # (queryName, else locationName with its first letter upper-cased, else
    # the member's name) or QuerySerializer (locationName is not used for
    # structure members: the member's name).
    def query_name(self, mname, m):
        if self.proto == "ec2":
            if "queryName" in m:
                return m["queryName"]
            if "locationName" in m:
                return upper_first(m["locationName"])
            return mname
        return m.get("locationName", mname)

    def xml_name(self, mname, m):
        return m.get("locationName", mname)

    def emit(self, c, prefix):
        p = prefix
        for n in self.names:
            s = self.shapes[n]
            i = self.index[n]
            if s["type"] == "structure" and s["members"]:
                req = set(s.get("required", []))
                for r in req:
                    if r not in s["members"]:
                        die("%s: %s requires unknown member %s" %
                            (self.name, n, r))
                c.append("static const struct ec2q_member %s_m%d[] = {"
                         % (p, i))
                for mname, m in s["members"].items():
                    flags = []
                    if mname in req:
                        flags.append("EC2Q_REQUIRED")
                    if m.get("idempotencyToken"):
                        flags.append("EC2Q_IDEMPOTENCY")
                    c.append("\t{ %s, %s, %s, %s, %d, %s }," % (
                        cstr(mname), cstr(self.query_name(mname, m)),
                        cstr(self.xml_name(mname, m)),
                        cstr(lower_first(m.get("locationName", mname))),
                        self.index[m["shape"]],
                        " | ".join(flags) if flags else "0"))
                c.append("};")
            if "enum" in s and n not in self.open:
                c.append("static const char *const %s_e%d[] = {" % (p, i))
                for v in s["enum"]:
                    c.append("\t%s," % cstr(v))
                c.append("};")
        c.append("")
        c.append("static const struct ec2q_shape %s_shapes[] = {" % p)
        for n in self.names:
            s = self.shapes[n]
            i = self.index[n]
            t = s["type"]
            flags = []
            lo = hi = 0
            if "min" in s and t not in ("double", "float"):
                flags.append("EC2Q_HAS_MIN")
                lo = int(s["min"])
            if "max" in s and t not in ("double", "float"):
                flags.append("EC2Q_HAS_MAX")
                hi = int(s["max"])
            if n in self.open:
                flags.append("EC2Q_OPEN_ENUM")
            count = 0
            members = enums = "NULL"
            elem = value = "EC2Q_NONE"
            eq = ex = vq = vx = None
            if t == "structure":
                count = len(s["members"])
                if count:
                    members = "%s_m%d" % (p, i)
            elif "enum" in s and n not in self.open:
                count = len(s["enum"])
                enums = "%s_e%d" % (p, i)
            if t == "list":
                mem = s["member"]
                elem = str(self.index[mem["shape"]])
                # EC2 requests number the elements right after the
                # list's name; the query protocol puts "member" (or the
                # member's locationName) between.
                if self.proto == "query":
                    eq = mem.get("locationName", "member")
                ex = mem.get("locationName", "member")
            elif t == "map":
                k, v = s["key"], s["value"]
                elem = str(self.index[k["shape"]])
                value = str(self.index[v["shape"]])
                eq, vq = k.get("locationName", "key"), v.get("locationName",
                                                              "value")
                if self.proto == "ec2":
                    # Only a locationName is capitalised, not the default.
                    if "locationName" in k:
                        eq = upper_first(eq)
                    if "locationName" in v:
                        vq = upper_first(vq)
                ex, vx = k.get("locationName", "key"), v.get("locationName",
                                                              "value")
            c.append("\t[%d] = { %s, %s, %s, %d, %s, %s, %s, %s, %s, %s, "
                     "%dLL, %dLL, %s, %s }," % (
                         i, cstr(n), TYPES[t],
                         " | ".join(flags) if flags else "0", count, elem,
                         value, cstr(eq), cstr(ex), cstr(vq), cstr(vx), lo,
                         hi, members, enums))
        c.append("};")
        c.append("")
        c.append("static const struct ec2q_op %s_ops[] = {" % p)
        for a in self.actions:
            op = self.model["operations"][a]
            inp = op.get("input", {}).get("shape")
            out = op.get("output", {}).get("shape")
            wrap = op.get("output", {}).get("resultWrapper")
            c.append("\t{ %s, %s, %s, %s }," % (
                cstr(a), self.index[inp] if inp else "EC2Q_NONE",
                self.index[out] if out else "EC2Q_NONE", cstr(wrap)))
        c.append("};")
        c.append("")
        ns = self.meta.get("xmlNamespace", "")
        if self.proto == "ec2" and not ns.endswith("/"):
            # EC2 answers with a trailing slash on the namespace.
            ns += "/"
        c.append("const struct ec2q_service ec2q_%s = {" % self.name)
        c.append("\t.name = %s," % cstr(self.name))
        c.append("\t.proto = %s," % ("EC2Q_PROTO_EC2" if self.proto == "ec2"
                                     else "EC2Q_PROTO_QUERY"))
        c.append("\t.version = %s," % cstr(self.meta["apiVersion"]))
        c.append("\t.ns = %s," % cstr(ns))
        c.append("\t.shapes = %s_shapes," % p)
        c.append("\t.n_shapes = %d," % len(self.names))
        c.append("\t.ops = %s_ops," % p)
        c.append("\t.n_ops = %d," % len(self.actions))
        c.append("};")


def generate(services):
    c = ["/* ec2q_model.c: generated by scripts/gen-ec2.py from botocore's "
         "models",
         " * (" + ", ".join(s.path for s in services) + ")",
         " * for the actions in scripts/ec2-actions.txt. Do not edit: run",
         " * `make ec2-model`. */",
         '#include "gw/ec2q_model.h"', ""]
    h = ["/* ec2q_model.h: generated by scripts/gen-ec2.py; do not edit. "
         "The",
         " * operations of each service, in the order of "
         "scripts/ec2-actions.txt,",
         " * index its ops[] table. */",
         "#ifndef SPX_EC2Q_MODEL_H", "#define SPX_EC2Q_MODEL_H", "",
         '#include "gw/ec2q.h"', ""]
    for s in services:
        s.emit(c, "q_" + ident(s.name))
        c.append("")
        h.append("enum {")
        for i, a in enumerate(s.actions):
            h.append("\tEC2Q_%s_%s = %d," % (ident(s.name).upper(), a, i))
        h.append("};")
        h.append("extern const struct ec2q_service ec2q_%s;" % s.name)
        h.append("")
    h.append("#endif")
    while c and c[-1] == "":
        c.pop()
    return "\n".join(c) + "\n", "\n".join(h) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=MODELS,
                    help="botocore's data directory [%(default)s]")
    ap.add_argument("--actions", default=os.path.join(HERE,
                                                      "ec2-actions.txt"))
    ap.add_argument("--out", default=os.path.join(TOP, "lib", "gw"))
    a = ap.parse_args()
    services = [Service(spec, a.models) for spec in read_actions(a.actions)]
    names = [s.name for s in services]
    if len(set(names)) != len(names):
        die("a service is listed twice")
    csrc, hsrc = generate(services)
    for name, text in (("ec2q_model.c", csrc), ("ec2q_model.h", hsrc)):
        path = os.path.join(a.out, name)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)


if __name__ == "__main__":
    main()
