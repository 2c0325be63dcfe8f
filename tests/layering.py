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
     header declares.

Usage: layering.py BUILD_DIR SOURCE_ROOT [NM]
Run by `meson test layering`; prints every violation, exits 1 on any.
With --graph it prints the object graph (one "A -> B" line per edge).
"""
import os
import re
import subprocess
import sys

# Layers, lowest first, and the layers each may use (src/README.md):
#   base       src/{diag,doc,rng,traffic,map}.c: errors, documents, random
#              numbers, loads and the placement as data
#   placement  src/placement/: the solver
#   replan     src/replan/: re-planning
#   lib        the other files in src/: models, loaders, plan, plots
#   cli        src/cli/: the moeplan program
# A layer uses itself and those listed; never one above it.
ALLOWED = {
    "base": {"base"},
    "placement": {"base", "placement"},
    "replan": {"base", "placement", "replan"},
    "lib": {"base", "placement", "replan", "lib"},
    "cli": {"base", "placement", "replan", "lib", "cli"},
}
BASE = {"map.c", "diag.c", "doc.c", "traffic.c", "rng.c"}
# Headers in include/moeplan/ that are not API (not installed: meson.build).
PRIVATE_HEADERS = {"svg.h", "plots.h"}


def folder_of(obj):
    """An object's layer and source name: 'placement_bound.c.o' ->
    ('placement', 'bound.c'); objects of src/cli/ are the program's."""
    name = os.path.basename(obj)[: -len(".o")]
    if os.path.basename(os.path.dirname(obj)).startswith("moeplan.p"):
        return "cli", name
    for f in ("placement", "replan"):
        if name.startswith(f + "_"):
            return f, name[len(f) + 1:]
    return ("base" if name in BASE else "lib"), name


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
    return n if f in ("lib", "base") else f + "/" + n


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


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    build, root = args[0], args[1]
    tool = args[2] if len(args) > 2 else "nm"
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
    print(f"{len(edges)} objects, {sum(len(e) for e in edges.values())} edges, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
