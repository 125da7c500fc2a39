#!/usr/bin/env python3
"""File-level import cycles in the workspace's crates.

For every crate (a directory holding Cargo.toml and src/), follow the `mod` declarations from
src/lib.rs and src/main.rs (and src/bin/*.rs) to map module paths to files, then resolve every
`crate::`, `super::`, `self::` and child-module path (in `use` trees and in code) to the file
of the deepest module it names. A path that names a file's own module or an inline module of
that file is no edge; `mod` declarations are no edges; a `pub use` is no edge (a module's
facade: a path through a re-export leads to the file that defines the name), except with
`--strict`, where a re-export the file uses itself is one. Prints each strongly connected
component of more than one file and exits 1 if there is one.

Usage: .ci/import-cycles.py [--strict] [crate-dir ...]   (default: every workspace crate)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = ["kube-sandbox", "kube-kit", "kubeocean-core", "kairship-core", "kubeocean-bin",
          "kairship-bin", "examples"]

TOKEN = re.compile(
    r'//[^\n]*'                               # line comment
    r'|/\*(?:.|\n)*?\*/'                       # block comment (not nested)
    r'|b?r(#*)"(?:.|\n)*?"\1'                  # raw string
    r'|b?"(?:\\[\s\S]|[^"\\])*"'              # string
    r"|b?'(?:\\.|[^'\\])'"                     # char
)


VISIBILITY = re.compile(r'\bpub\s*\(\s*in\s+[^)]*\)')


def strip(text):
    """Comments, literals and `pub(in path)` visibilities blanked out (newlines kept), so
    braces and paths are code."""
    def blank(m):
        s = m.group(0)
        if s.startswith('"') or s.startswith('b"') or s.startswith('r') or s.startswith('br'):
            return '""' + '\n' * s.count('\n')
        return ' ' + '\n' * s.count('\n')
    return VISIBILITY.sub('pub', TOKEN.sub(blank, text))


ITEM = re.compile(
    r'(?P<path>\#\[path\s*=\s*""\]\s*)?'
    r'|(?P<open>\{)|(?P<close>\})'
    r'|\bmod\s+(?P<inline>r\#\w+|\w+)\s*\{'
    r'|\bmod\s+(?P<decl>r\#\w+|\w+)\s*;'
    r'|(?P<vis>\bpub(?:\s*\([^)]*\))?\s+)?\buse\s+(?P<use>[^;]*);'
    r'|(?<![\w$])(?P<ref>(?:crate|super|self)(?:\s*::\s*\w+)+)'
)

PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;')


def use_paths(tree):
    """Expand a use tree (`a::{b, c::d as e, f::*}`) into its paths, each a list of segments."""
    tree = re.sub(r'\s+as\s+', ' as ', tree.strip())
    tree = re.sub(r'\s*(::|,|\{|\})\s*', r'\1', tree)
    tree = re.sub(r'^::', '', tree)
    out = []

    def walk(prefix, s):
        # split s on top-level commas
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(s):
            if ch == '{':
                depth += 1
            elif ch == '}':
                depth -= 1
            elif ch == ',' and depth == 0:
                parts.append(s[start:i])
                start = i + 1
        parts.append(s[start:])
        for part in parts:
            if not part:
                continue
            if '{' in part:
                head, rest = part.split('{', 1)
                rest = rest[: rest.rfind('}')]
                segs = [x for x in head.split('::') if x]
                walk(prefix + segs, rest)
            else:
                alias = None
                if ' as ' in part:
                    part, alias = part.split(' as ', 1)
                glob = part.endswith('*')
                segs = [x for x in part.split('::') if x and x != '*']
                out.append((prefix + segs, alias or ('*' if glob else (segs[-1] if segs else None))))
    walk([], tree)
    return out


class Crate:
    def __init__(self, directory):
        self.dir = directory
        self.modules = {}   # module path (tuple) -> file
        self.files = {}     # file -> its own module path (tuple)
        self.inline = {}    # file -> set of inline module paths inside it
        src = os.path.join(directory, "src")
        roots = [os.path.join(src, n) for n in ("lib.rs", "main.rs") if os.path.exists(os.path.join(src, n))]
        bin_dir = os.path.join(src, "bin")
        if os.path.isdir(bin_dir):
            roots += [os.path.join(bin_dir, n) for n in sorted(os.listdir(bin_dir)) if n.endswith(".rs")]
        for i, root in enumerate(roots):
            # each root is its own crate: keep their module trees apart
            self.load(root, ("#%d" % i,), mod_rs=True)

    def load(self, path, modpath, mod_rs):
        path = os.path.normpath(path)
        if path in self.files or not os.path.exists(path):
            return
        self.files[path] = modpath
        self.modules[modpath] = path
        with open(path, encoding="utf-8") as f:
            raw = f.read()
        attrs = {name: rel for rel, name in PATH_ATTR.findall(raw)}
        code = strip(raw)
        self.inline[path] = set()
        here = os.path.dirname(path)
        own = here if mod_rs else os.path.join(here, os.path.splitext(os.path.basename(path))[0])
        stack = []  # (name, depth)
        depth = 0
        for m in ITEM.finditer(code):
            if m.group('open'):
                depth += 1
            elif m.group('close'):
                depth -= 1
                if stack and stack[-1][1] == depth:
                    stack.pop()
            elif m.group('inline'):
                name = m.group('inline').replace('r#', '')
                stack.append((name, depth))
                depth += 1
                inner = modpath + tuple(s for s, _ in stack)
                self.modules[inner] = path
                self.inline[path].add(inner)
            elif m.group('decl'):
                name = m.group('decl').replace('r#', '')
                inner_dirs = [s for s, _ in stack]
                child = modpath + tuple(inner_dirs) + (name,)
                if name in attrs and not stack:
                    self.load(os.path.join(here, attrs[name]), child, mod_rs=False)
                    continue
                base = os.path.join(own, *inner_dirs)
                flat = os.path.join(base, name + ".rs")
                nested = os.path.join(base, name, "mod.rs")
                if os.path.exists(flat):
                    self.load(flat, child, mod_rs=False)
                elif os.path.exists(nested):
                    self.load(nested, child, mod_rs=True)

    def scan(self, path):
        """(module path, use visibility or None, use tree or None, code path or None) of each
        `use` and each `crate::`/`super::`/`self::` path in the file, in order."""
        with open(path, encoding="utf-8") as f:
            code = strip(f.read())
        stack, depth = [], 0
        modpath = self.files[path]
        for m in ITEM.finditer(code):
            if m.group('open'):
                depth += 1
            elif m.group('close'):
                depth -= 1
                if stack and stack[-1][1] == depth:
                    stack.pop()
            elif m.group('inline'):
                stack.append((m.group('inline').replace('r#', ''), depth))
                depth += 1
            elif m.group('use') is not None or m.group('ref'):
                here = modpath + tuple(s for s, _ in stack)
                yield here, m.group('vis'), m.group('use'), m.group('ref')

    def collect_reexports(self):
        """Per module: the names it re-exports (`pub use`) and its glob re-exports."""
        self.reexports = {}   # module path -> {name: (here, segments)}
        self.globs = {}       # module path -> [(here, segments)]
        self.defined = {}     # file -> names of items it defines
        for path in self.files:
            with open(path, encoding="utf-8") as f:
                code = strip(f.read())
            self.defined[path] = set(re.findall(
                r'\b(?:fn|struct|enum|trait|type|const|static|union|macro_rules!)\s+(\w+)', code))
            for here, vis, tree, _ in self.scan(path):
                if tree is None or not vis:
                    continue
                for segs, alias in use_paths(tree):
                    if alias == '*':
                        self.globs.setdefault(here, []).append((here, segs))
                    elif alias:
                        self.reexports.setdefault(here, {})[alias] = (here, segs)

    def edges(self):
        self.collect_reexports()
        graph = {f: set() for f in self.files}
        for path in self.files:
            with open(path, encoding="utf-8") as f:
                code = strip(f.read())
            # Words of the code outside `use` items: a re-exported name used here is a dependency.
            words = set(re.findall(r'\w+', re.sub(r'\buse\s+[^;]*;', ' ', code)))
            for here, vis, tree, ref in self.scan(path):
                if tree is not None:
                    pairs = use_paths(tree)
                    if vis:
                        # A re-export is a facade: who uses the name depends on its source.
                        # With --strict, one this file also uses is a dependency of this file.
                        pairs = [(segs, alias) for segs, alias in pairs if STRICT and alias in words]
                    paths = [segs for segs, _ in pairs]
                else:
                    paths = [[x for x in re.split(r'\s*::\s*', ref) if x]]
                for segs in paths:
                    target = self.resolve(here, segs, 0)
                    if target and target != path:
                        graph[path].add(target)
        return graph

    def resolve(self, here, segs, hops):
        """The file defining what `segs` names, seen from module `here`."""
        if not segs:
            return None
        root = here[:1]
        if segs[0] == 'crate':
            cur, rest = root, segs[1:]
        elif segs[0] in ('self', 'super'):
            cur, rest = here, segs
            while rest and rest[0] in ('self', 'super'):
                if rest[0] == 'super':
                    if len(cur) <= 1:
                        return None
                    cur = cur[:-1]
                rest = rest[1:]
        elif here + (segs[0],) in self.modules:
            cur, rest = here, segs
        else:
            return None
        while rest and cur + (rest[0],) in self.modules:
            cur = cur + (rest[0],)
            rest = rest[1:]
        if rest and hops < 16:
            name = rest[0]
            source = self.reexports.get(cur, {}).get(name)
            if source:
                src_here, src_segs = source
                found = self.resolve(src_here, src_segs + rest[1:] if src_segs[-1:] != [name] else src_segs, hops + 1)
                if found:
                    return found
            elif name not in self.defined.get(self.modules[cur], set()):
                for src_here, src_segs in self.globs.get(cur, []):
                    found = self.resolve(src_here, src_segs + rest, hops + 1)
                    if found and found != self.modules[cur]:
                        return found
        return self.modules.get(cur)


def components(graph):
    """Tarjan's strongly connected components."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


STRICT = False


def main(argv):
    global STRICT
    STRICT = "--strict" in argv
    argv = [a for a in argv if a != "--strict"]
    crates = argv or CRATES
    found = 0
    for name in crates:
        crate = Crate(os.path.join(ROOT, name))
        graph = crate.edges()
        for comp in components(graph):
            if len(comp) < 2:
                continue
            found += 1
            rel = [os.path.relpath(f, ROOT) for f in comp]
            print("import cycle in %s (%d files):" % (name, len(rel)))
            for f in rel:
                deps = sorted(os.path.relpath(t, ROOT) for t in graph[os.path.join(ROOT, f)] if t in comp)
                print("  %s -> %s" % (f, ", ".join(deps)))
    if found:
        print("%d import cycle(s)" % found)
        return 1
    print("no import cycles among files of: %s" % ", ".join(crates))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
