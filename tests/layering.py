#!/usr/bin/env python3
"""Layering test (issue 15): reads `nm` of every object of the library and
of the CLI and fails when

  1. an object uses a symbol defined in a folder it may not use (the arrows
     of src/README.md, copied into ALLOWED below);
  2. two objects depend on each other, directly or through others (a
     file-level cycle: every strongly connected component of the graph
     "object A uses a symbol that object B defines" must be one object);
  3. a function declared in include/moeplan/*.h is missing from the
     dynamic symbol table of the shared library (a public function without
     MP_EXPORT), or the shared library exports a symbol that no public
     header declares;
  4. a function in src/placement/ or src/replan/ (the solver and
     re-planning) is longer than MAX_FUNCTION_LINES lines, counted from the
     line of its opening brace to the line of its closing brace (issue 15:
     no function that needs scrolling). Longer functions in the other
     folders are listed, not failed.

Usage: layering.py BUILD_DIR SOURCE_ROOT [NM]
Run by `meson test layering`; prints every violation, exits 1 on any.
With --graph it prints the object graph (one "A -> B" line per edge);
with --lengths the length of every function in src/, longest first.
"""
import os
import re
import subprocess
import sys

# Layers, lowest first, and the layers each may use (src/README.md):
#   base       src/base/: errors, documents, random numbers, loads and the
#              placement as data
#   placement  src/placement/: the solver
#   replan     src/replan/: re-planning
#   model      src/model/: the models (roofline, capacity, comm, step,
#              simulation) and the scenario they read
#   io         src/io/: file formats (loaders, result documents, export,
#              SVG and plots)
#   plan       src/plan/: decisions (widths, plan, search, pools, deploy)
#   cli        src/cli/: the moeplan program
# A layer uses itself and those listed; never one above it.
ALLOWED = {
    "base": {"base"},
    "placement": {"base", "placement"},
    "replan": {"base", "placement", "replan"},
    "model": {"base", "model"},
    "io": {"base", "model", "io"},
    "plan": {"base", "placement", "replan", "model", "io", "plan"},
    "cli": {"base", "placement", "replan", "model", "io", "plan", "cli"},
}
LIB_FOLDERS = ("base", "placement", "replan", "model", "io", "plan")
# Headers in include/moeplan/ that are not API (not installed: meson.build).
PRIVATE_HEADERS = {"svg.h", "plots.h"}
# Longest function allowed in the folders of STRICT_LENGTH (lines, both
# braces counted).
MAX_FUNCTION_LINES = 150
STRICT_LENGTH = ("placement", "replan")


def folder_of(obj):
    """An object's layer and source name: 'placement_bound.c.o' ->
    ('placement', 'bound.c'); objects of src/cli/ are the program's."""
    name = os.path.basename(obj)[: -len(".o")]
    if os.path.basename(os.path.dirname(obj)).startswith("moeplan.p"):
        return "cli", name
    for f in LIB_FOLDERS:
        if name.startswith(f + "_"):
            return f, name[len(f) + 1:]
    raise SystemExit(f"layering: {obj}: not in a folder of src/ (src/README.md lists them)")


def nm(tool, path, *flags):
    out = subprocess.run([tool, *flags, path], check=True, capture_output=True, text=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def objects(build):
    found = []
    for d in ("src/libmoeplan.a.p", "src/cli/moeplan.p"):
        p = os.path.join(build, d)
        for n in sorted(os.listdir(p)):
            if n.endswith(".o"):
                found.append(os.path.join(p, n))
    return found


def graph(build, tool):
    defined = {}
    objs = objects(build)
    uses = {o: set() for o in objs}
    # One nm over every object: a line "PATH:" starts each object's symbols.
    out = subprocess.run([tool, *objs], check=True, capture_output=True, text=True).stdout
    cur = None
    for line in out.splitlines():
        if line.endswith(":") and line[:-1] in uses:
            cur = line[:-1]
            continue
        f = line.split()
        if cur is None or not f:
            continue
        if len(f) == 2 and f[0] == "U":
            uses[cur].add(f[1])
        elif len(f) == 3 and f[1] in "TDBRGSVW":
            defined.setdefault(f[2], cur)
    edges = {o: set() for o in uses}
    for o, syms in uses.items():
        for s in syms:
            d = defined.get(s)
            if d and d != o:
                edges[o].add(d)
    return edges


def sccs(edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def short(o):
    f, n = folder_of(o)
    return f + "/" + n


def public_functions(root):
    """Names of the functions declared in include/moeplan/*.h."""
    names = set()
    inc = os.path.join(root, "include", "moeplan")
    for h in sorted(os.listdir(inc)):
        if not h.endswith(".h") or h in PRIVATE_HEADERS:
            continue
        text = open(os.path.join(inc, h), encoding="utf-8").read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        text = re.sub(r"^\s*#.*$", "", text, flags=re.M)
        for m in re.finditer(r"\bMP_EXPORT\b[^;{]*?\b([A-Za-z_]\w*)\s*\(", text):
            names.add(m.group(1))
        for m in re.finditer(r"^[A-Za-z_][\w \t\*]*?\b(mp_\w+)\s*\([^;{]*\)\s*;", text, flags=re.M):
            names.add(m.group(1))
    return names


def strip_c(text):
    """C source with comments, string and character literals and
    preprocessor directives blanked out; newlines are kept, so that line
    numbers stay."""
    out = []
    i, n = 0, len(text)
    bol = True  # at the start of a line, before anything but blanks
    while i < n:
        c = text[i]
        if bol and c in " \t":
            out.append(c)
            i += 1
            continue
        if bol and c == "#":
            # a directive, with its backslash-newline continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        bol = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
            continue
        if c == "\n":
            bol = True
        out.append(c)
        i += 1
    return "".join(out)


def functions(text):
    """(name, line, lines) of every function defined in C source text:
    line is that of its opening brace, lines counts from there to the line
    of its closing brace, both included. A function is a top-level brace
    block whose head ends with a parameter list ')' (struct, enum and
    initialiser blocks do not); its name is the identifier before that
    list's '('. None when the braces do not balance."""
    s = strip_c(text)
    found = []
    depth = 0
    start = None
    for i, c in enumerate(s):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                return None
            if depth > 0:
                continue
            head = s[:start].rstrip()
            if not head.endswith(")"):
                continue
            d, k = 0, len(head) - 1
            while k >= 0:
                d += {")": 1, "(": -1}.get(head[k], 0)
                if d == 0:
                    break
                k -= 1
            m = re.search(r"(\w+)\s*$", head[:k])
            if m:
                first = s.count("\n", 0, start) + 1
                last = s.count("\n", 0, i) + 1
                found.append((m.group(1), first, last - first + 1))
    return found if depth == 0 else None


def function_lengths(root):
    """(lines, 'src/...c:line', name, folder) of every function in src/."""
    out = []
    src = os.path.join(root, "src")
    for d, _, names in sorted(os.walk(src)):
        for n in sorted(names):
            if not n.endswith(".c"):
                continue
            path = os.path.join(d, n)
            rel = os.path.relpath(path, root)
            folder = os.path.relpath(d, src).split(os.sep)[0]
            fns = functions(open(path, encoding="utf-8").read())
            if fns is None:
                out.append((None, rel, None, folder))
                continue
            for name, line, lines in fns:
                out.append((lines, f"{rel}:{line}", name, folder))
    return out


def check_lengths(root):
    """Prints functions over MAX_FUNCTION_LINES; returns the number that
    fail (those in STRICT_LENGTH, and files that cannot be read)."""
    bad = 0
    strict_max = (0, "-", "-")
    for lines, where, name, folder in function_lengths(root):
        if lines is None:
            print(f"length: {where}: braces do not balance; cannot measure its functions")
            bad += 1
            continue
        strict = folder in STRICT_LENGTH
        if strict and lines > strict_max[0]:
            strict_max = (lines, where, name)
        if lines <= MAX_FUNCTION_LINES:
            continue
        if strict:
            print(f"length: {where}: {name} has {lines} lines (at most {MAX_FUNCTION_LINES} in "
                  f"src/{folder}/: split it into named stages)")
            bad += 1
        else:
            print(f"note: {where}: {name} has {lines} lines (over {MAX_FUNCTION_LINES}; not failed "
                  f"outside src/{{{','.join(STRICT_LENGTH)}}}/)")
    print(f"longest function in src/{{{','.join(STRICT_LENGTH)}}}/: {strict_max[2]} "
          f"({strict_max[1]}), {strict_max[0]} lines; at most {MAX_FUNCTION_LINES}")
    return bad


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    build, root = args[0], args[1]
    tool = args[2] if len(args) > 2 else "nm"
    if "--lengths" in sys.argv:
        for lines, where, name, _ in sorted(function_lengths(root), key=lambda f: -(f[0] or 0)):
            print(f"{lines} {where} {name}")
        return 0
    edges = graph(build, tool)
    if "--graph" in sys.argv:
        for o in sorted(edges):
            for d in sorted(edges[o]):
                print(f"{short(o)} -> {short(d)}")
        return 0
    bad = 0
    for o in sorted(edges):
        fo, _ = folder_of(o)
        for d in sorted(edges[o]):
            fd, _ = folder_of(d)
            if fd not in ALLOWED[fo]:
                print(f"layering: {short(o)} uses {short(d)}: '{fo}' may not use '{fd}' (src/README.md)")
                bad += 1
    for comp in sccs(edges):
        if len(comp) > 1:
            print("cycle: " + " <-> ".join(short(o) for o in comp))
            bad += 1
    so = os.path.join(build, "src", "libmoeplan.so")
    if os.path.exists(so):
        exported = {f[2] for f in nm(tool, so, "-D", "--defined-only")
                    if len(f) == 3 and f[1] in "TDBRW" and not f[2].startswith("_")}
        api = public_functions(root)
        for s in sorted(api - exported):
            print(f"export: {s} is declared in include/moeplan/ but not exported (add MP_EXPORT)")
            bad += 1
        for s in sorted(exported - api):
            print(f"export: libmoeplan.so exports {s}, which no public header declares")
            bad += 1
        print(f"libmoeplan.so exports {len(exported)} symbols; include/moeplan declares {len(api)} functions")
    bad += check_lengths(root)
    print(f"{len(edges)} objects, {sum(len(e) for e in edges.values())} edges, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
