#!/usr/bin/env python3
"""The Debian package dependency graph as an edge list, and its reachability
count by breadth-first search (independent of PostgreSQL and of approx_gpu).

  closure_debian_graph.py extract PACKAGES_FILE EDGES_CSV NAMES_CSV
      PACKAGES_FILE: `apt-cache dumpavail` output (deb822 stanzas). Vertices are
      package names: every stanza's Package and every name its Depends or
      Pre-Depends fields mention (all alternatives of "a | b"; version
      constraints and ":arch" qualifiers dropped). One edge package -> dependency
      per distinct pair. Ids are 1.. in name order.
  closure_debian_graph.py count EDGES_CSV
      Prints the number of pairs (u, v) joined by a path of length >= 1, by a
      BFS from every vertex (plain Python sets), and the vertex and edge counts.
"""
import re
import sys
import time


def stanzas(path):
    fields, key = {}, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                if fields:
                    yield fields
                fields, key = {}, None
            elif line[0] in " \t":
                if key:
                    fields[key] += " " + line.strip()
            else:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields:
            yield fields


NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9+.\-]*)")


def dependencies(value):
    for clause in value.split(","):
        for alt in clause.split("|"):
            m = NAME.match(alt)
            if m:
                yield m.group(1)


def extract(packages, edges_csv, names_csv):
    names, pairs = set(), set()
    for st in stanzas(packages):
        p = st.get("Package")
        if not p:
            continue
        names.add(p)
        for field in ("Depends", "Pre-Depends"):
            for d in dependencies(st.get(field, "")):
                names.add(d)
                pairs.add((p, d))
    ids = {n: i + 1 for i, n in enumerate(sorted(names))}
    with open(names_csv, "w") as f:
        f.write("id,name\n")
        for n in sorted(names):
            f.write(f"{ids[n]},{n}\n")
    with open(edges_csv, "w") as f:
        f.write("src,dst\n")
        for a, b in sorted((ids[a], ids[b]) for a, b in pairs):
            f.write(f"{a},{b}\n")
    print(f"{len(names)} vertices (package names), {len(pairs)} edges (package -> dependency)")


def count(edges_csv):
    t0 = time.time()
    adj = {}
    n_edges = 0
    with open(edges_csv) as f:
        next(f)
        for line in f:
            a, b = map(int, line.split(","))
            adj.setdefault(a, []).append(b)
            adj.setdefault(b, [])
            n_edges += 1
    total = 0
    for s in adj:
        seen = set()
        stack = list(adj[s])
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            stack.extend(w for w in adj[v] if w not in seen)
        total += len(seen)
    print(f"vertices {len(adj)} edges {n_edges} pairs {total} (Python BFS, {time.time() - t0:.1f} s)")
    return total


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "extract":
        extract(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 3 and sys.argv[1] == "count":
        count(sys.argv[2])
    else:
        sys.exit(__doc__)
