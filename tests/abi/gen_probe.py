#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
"""Generate the ABI probe of the librdmacm public headers.

Reads the headers as a compiler sees them (CC -E for declarations, CC -dM -E
for macros) and writes a C program that prints the size, alignment and
offset of every struct member, the value of every enum constant and macro,
and that checks at compile time that every member and function has the type
the scanned headers give it.  The same program compiled against another set
of headers (ours) must print the same lines.

  gen_probe.py [--cc CC] [-I DIR] probe OUT.c   write the probe
  gen_probe.py [--cc CC] [-I DIR] names         list what was found

Anything the parser does not understand is an error, so that nothing is
silently left out of the probe.
"""
import argparse
import re
import shlex
import subprocess
import sys

HEADERS = ["rdma/rdma_cma.h", "rdma/rdma_verbs.h", "rdma/rsocket.h", "infiniband/ib.h"]
# The system headers the public headers include (current rdma-core adds
# sys/epoll.h to rsocket.h): their macros are not ours to compare.
BASELINE = [
    "netinet/in.h", "sys/socket.h", "infiniband/verbs.h", "infiniband/sa.h", "assert.h",
    "errno.h", "poll.h", "sys/select.h", "sys/mman.h", "sys/epoll.h", "linux/types.h",
    "endian.h", "string.h",
]

TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<num>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*)
  | (?P<id>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<punct>\.\.\.|->|<<|>>|[-+*/%&|^~!<>=?:;,.(){}\[\]#])
""", re.X)


class ProbeError(Exception):
    pass


def tokenize(text):
    toks, pos = [], 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise ProbeError("cannot tokenize near %r" % text[pos:pos + 40])
        pos = m.end()
        if m.lastgroup != "ws":
            toks.append(m.group())
    return toks


def run(cmd, stdin):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        raise ProbeError("%s failed:\n%s" % (" ".join(cmd), p.stderr))
    return p.stdout


def includes(names):
    return "".join("#include <%s>\n" % n for n in names)


def header_text(cc, incdir):
    """The declarations that come from the public headers, and their paths."""
    out = run(cc + incdir + ["-E", "-x", "c", "-"], includes(HEADERS))
    keep, cur, paths = [], None, set()
    for line in out.splitlines():
        m = re.match(r'#\s*\d+\s+"([^"]*)"', line)
        if m:
            cur = m.group(1)
            continue
        if line.startswith("#"):
            continue
        if cur and any(cur.endswith("/" + h) for h in HEADERS):
            paths.add(cur)
            keep.append(line)
    return "\n".join(keep), paths


def macros(cc, incdir, names):
    out = run(cc + incdir + ["-dM", "-E", "-x", "c", "-"], includes(names))
    defs = {}
    for line in out.splitlines():
        m = re.match(r"#define ([A-Za-z_]\w*)(\([^)]*\))?(?: (.*))?$", line)
        if not m:
            raise ProbeError("cannot read macro line %r" % line)
        defs[m.group(1)] = (m.group(2), (m.group(3) or "").strip())
    return defs


def match(toks, i, open_, close):
    """Index of the token closing the bracket opened at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j] == open_:
            depth += 1
        elif toks[j] == close:
            depth -= 1
            if depth == 0:
                return j
    raise ProbeError("unbalanced %s" % open_)


def split_top(toks, sep):
    """Split toks at sep outside any bracket."""
    parts, cur, depth = [], [], 0
    for t in toks:
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        if t == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        parts.append(cur)
    return parts


def decl_name(toks):
    """Name declared by a simple declaration (no function pointers, one declarator)."""
    if "(" in toks or ":" in toks:
        raise ProbeError("unsupported declaration: %s" % " ".join(toks))
    if "," in split_top(toks, ";")[0] and len(split_top(toks, ",")) > 1:
        raise ProbeError("several declarators: %s" % " ".join(toks))
    depth, name = 0, None
    for k, t in enumerate(toks):
        if t == "[":
            depth += 1
        elif t == "]":
            depth -= 1
        elif depth == 0 and re.match(r"[A-Za-z_]", t):
            name = k
    if name is None:
        raise ProbeError("no name in: %s" % " ".join(toks))
    return name


def parse_members(toks, prefix, out):
    """Append (path, decl tokens or None, name index) for every member, depth first."""
    for m in split_top(toks, ";"):
        if not m:
            continue
        if m[0] in ("struct", "union") and "{" in m[:3]:
            b = m.index("{")
            e = match(m, b, "{", "}")
            rest = m[e + 1:]
            if len(rest) > 1:
                raise ProbeError("unsupported nested member: %s" % " ".join(m))
            if rest:
                path = prefix + rest[0]
                out.append((path, None, None))
                parse_members(m[b + 1:e], path + ".", out)
            else:
                parse_members(m[b + 1:e], prefix, out)
            continue
        k = decl_name(m)
        out.append((prefix + m[k], m, k))


def parse(text):
    toks = tokenize(text)
    structs, enums, funcs = [], [], []
    i = 0
    while i < len(toks):
        if toks[i] == ";":
            i += 1
            continue
        if toks[i] in ("struct", "union", "enum") and "{" in toks[i + 1:i + 3]:
            kind = toks[i]
            tag = toks[i + 1] if toks[i + 1] != "{" else None
            b = toks.index("{", i)
            e = match(toks, b, "{", "}")
            if toks[e + 1] != ";":
                raise ProbeError("declarator after %s %s body" % (kind, tag))
            body = toks[b + 1:e]
            if kind == "enum":
                consts = [c[0] for c in split_top(body, ",") if c]
                enums.append((tag, consts))
            else:
                if tag is None:
                    raise ProbeError("anonymous top-level %s" % kind)
                members = []
                parse_members(body, "", members)
                structs.append((kind, tag, members))
            i = e + 2
            continue
        if toks[i] in ("struct", "union", "enum") and toks[i + 2] == ";":
            i += 3  # forward declaration
            continue
        if toks[i] == "typedef":
            raise ProbeError("typedefs are not probed yet: extend gen_probe.py")
        # A function declaration or definition.
        j = i
        while j < len(toks) and toks[j] not in (";", "{"):
            j += 1
        decl = toks[i:j]
        if "(" not in decl:
            raise ProbeError("unsupported top-level declaration: %s" % " ".join(decl))
        p = decl.index("(")
        name = p - 1
        if not re.match(r"[A-Za-z_]", decl[name]) or decl[match(decl, p, "(", ")") + 1:]:
            raise ProbeError("unsupported function declaration: %s" % " ".join(decl))
        funcs.append((decl[name], decl, name))
        if j < len(toks) and toks[j] == "{":
            i = match(toks, j, "{", "}") + 1
        else:
            i = j + 1
    return structs, enums, funcs


NUMERIC = re.compile(r"^[\s0-9A-Fa-fxXuUlL()+\-*/%<>|&^~]*$")


def numeric(name, defs, seen=()):
    """Is the macro an integer constant expression (possibly through other macros)?"""
    if name in seen or name not in defs:
        return False
    args, body = defs[name]
    if args is not None or body == "":
        return False
    for t in tokenize(body):
        if re.match(r"[A-Za-z_]", t):
            if not numeric(t, defs, seen + (name,)):
                return False
        elif not NUMERIC.match(t):
            return False
    return True


def scan(cc, incdir):
    text, paths = header_text(cc, incdir)
    if len(paths) != len(HEADERS):
        raise ProbeError("found %s, want one file for each of %s" % (sorted(paths), HEADERS))
    structs, enums, funcs = parse(text)
    defs = macros(cc, incdir, HEADERS)
    base = macros(cc, incdir, BASELINE)
    names = set(n for n in defs if n not in base or defs[n] != base[n])
    for path in paths:
        with open(path) as f:
            for line in f:
                m = re.match(r"\s*#\s*define\s+([A-Za-z_]\w*)", line)
                if m:
                    names.add(m.group(1))
    for n in names:
        if n not in defs:
            raise ProbeError("macro %s is defined in a header but not after including all" % n)
        if defs[n][0] is not None:
            raise ProbeError("function-like macro %s: extend gen_probe.py" % n)
    return structs, enums, funcs, sorted(names), defs


def c_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_probe(out, structs, enums, funcs, names, defs):
    w = out.write
    w("/* Generated by tests/abi/gen_probe.py: do not edit. */\n")
    w("#include <stddef.h>\n#include <stdio.h>\n")
    w(includes(HEADERS))
    w("#define PROBE_STR_(...) #__VA_ARGS__\n#define PROBE_STR(...) PROBE_STR_(__VA_ARGS__)\n")
    w("#define PROBE_SAME_TYPE(a, b) _Static_assert(__builtin_types_compatible_p(a, b), "
      "#a \" is not \" #b)\n\n")
    # Types, checked at compile time: the declaration as scanned, renamed.
    n = 0
    for kind, tag, members in structs:
        for path, decl, k in members:
            if decl is None:
                continue
            n += 1
            t = "probe_member_%d" % n
            w("typedef %s;\n" % " ".join(decl[:k] + [t] + decl[k + 1:]))
            w("PROBE_SAME_TYPE(__typeof__(((%s %s *)0)->%s), %s);\n" % (kind, tag, path, t))
    for name, decl, k in funcs:
        decl = [t for t in decl if t not in ("static", "inline", "__inline", "extern")]
        k = decl.index(name)
        t = "probe_func_" + name
        w("typedef %s;\n" % " ".join(decl[:k] + [t] + decl[k + 1:]))
        w("PROBE_SAME_TYPE(__typeof__(%s), %s);\n" % (name, t))
    w("\nint main(void)\n{\n")
    for kind, tag, members in structs:
        ty = "%s %s" % (kind, tag)
        w('\tprintf("%%s size %%zu align %%zu\\n", %s, sizeof(%s), _Alignof(%s));\n'
          % (c_str(ty), ty, ty))
        for path, decl, k in members:
            lv = "((%s *)0)->%s" % (ty, path)
            w('\tprintf("%%s.%%s offset %%zu size %%zu class %%d\\n", %s, %s, offsetof(%s, %s), '
              'sizeof(%s), __builtin_classify_type(%s));\n'
              % (c_str(ty), c_str(path), ty, path, lv, lv))
    for tag, consts in enums:
        if tag:
            w('\tprintf("enum %%s size %%zu\\n", %s, sizeof(enum %s));\n' % (c_str(tag), tag))
        for c in consts:
            w('\tprintf("enum %%s %%s = %%lld\\n", %s, %s, (long long)%s);\n'
              % (c_str(tag or "(anonymous)"), c_str(c), c))
    for m in names:
        if numeric(m, defs):
            w('\tprintf("#define %%s %%llu size %%zu signed %%d\\n", %s, (unsigned long long)(%s), '
              'sizeof(%s), (%s) - (%s) - 1 < 0);\n' % (c_str(m), m, m, m, m))
        else:
            w('\tprintf("#define %%s \\"%%s\\"\\n", %s, PROBE_STR(%s));\n' % (c_str(m), m))
    w("\treturn 0;\n}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", default="cc")
    ap.add_argument("-I", dest="incdir", action="append", default=[])
    ap.add_argument("what", choices=["probe", "names"])
    ap.add_argument("out", nargs="?")
    a = ap.parse_args()
    cc = shlex.split(a.cc)
    incdir = ["-I" + d for d in a.incdir]
    try:
        structs, enums, funcs, names, defs = scan(cc, incdir)
    except ProbeError as e:
        sys.exit("gen_probe.py: %s" % e)
    if a.what == "probe":
        with open(a.out, "w") as f:
            write_probe(f, structs, enums, funcs, names, defs)
        return
    for kind, tag, members in structs:
        print("%s %s" % (kind, tag))
        for path, decl, k in members:
            print("%s %s.%s" % (kind, tag, path))
    for tag, consts in enums:
        if tag:
            print("enum %s" % tag)
        for c in consts:
            print("enum-constant %s" % c)
    for name, decl, k in funcs:
        print("function %s" % name)
    for m in names:
        print("macro %s" % m)


if __name__ == "__main__":
    main()
