#!/usr/bin/env python3
r"""The house's measures (issue 22, issue 42), over product code: the crates' `src/` less their
tests.

    scripts/house.py            # every measure below
    scripts/house.py --edges    # also every file-to-file import edge

- A *circle* is a ring of files that import each other: an edge runs from a file to the file
  that defines a name it uses through `use crate::…`, `use super::…`, `use self::…` or an
  inline `crate::…`/`super::…` path (a re-export is followed to the file that defines the
  name; a `mod x;` declaration alone is no edge). Rings are the strongly connected components
  of that graph with more than one file.
- A function's length is counted from its `fn` line to its closing brace, doc comments and
  attributes left out; code inside `#[cfg(test)]` modules, files declared under
  `#[cfg(test)]` and `tests/` folders is left out.
- Comment lines per 100 code lines, per crate: `//`, `///` and `//!` lines against the other
  non-blank lines; at most 14.
- "issue N" (`\b[Ii]ssues? \d+`) anywhere in product code: none.
- Inherent `impl X` blocks (not `impl T for X`) of one type in more than one file: none. A
  type is the file that defines it, its name resolved in the impl's file (defined there,
  imported by a `use`, else the one file defining it); a name defined in several files that
  cannot be resolved is left out.
- The gateway's files that match on `Dialect::` (a `match` arm, `matches!`, `==`, `!=`): at
  most two.

Reads files as text (no rustc); exits 1 when any measure fails, so it can guard the house in
CI.
"""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIMIT = 80
CRATES = ["switchyard-api", "switchyard-core", "switchyard-cli", "switchyard-gateway"]
DEF_RE = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|const\s+|unsafe\s+)*"
    r"(?:fn|struct|enum|trait|type|const|static|union|mod|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)


def strip_tests(text):
    """Drops `#[cfg(test)] mod … { … }` blocks and `#[cfg(test)] mod x;` lines."""
    out, i = [], 0
    lines = text.split("\n")
    while i < len(lines):
        if lines[i].strip().startswith("#[cfg(test)]"):
            j = i + 1
            while j < len(lines) and lines[j].strip().startswith("#["):
                j += 1
            if j < len(lines) and re.match(r"\s*(pub(\([^)]*\))?\s+)?mod\s", lines[j]):
                if lines[j].rstrip().endswith(";"):
                    i = j + 1
                    continue
                depth, k = 0, j
                while k < len(lines):
                    depth += lines[k].count("{") - lines[k].count("}")
                    if depth <= 0 and "{" in "".join(lines[j : k + 1]):
                        break
                    k += 1
                i = k + 1
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def strip_comments_strings(text):
    """Blanks string and char literals and drops comments, scanning in one pass (so a `//`
    inside `"http://"` is not a comment)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            j = text.find('"' + hashes, i + 2 + len(hashes))
            out.append('""')
            i = n if j < 0 else j + 1 + len(hashes)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'":
            if i + 1 < n and text[i + 1] == "\\":
                j = text.find("'", i + 2)
                out.append("''")
                i = n if j < 0 else j + 1
            elif i + 2 < n and text[i + 2] == "'":
                out.append("''")
                i += 3
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Crate:
    def __init__(self, name):
        self.name = name
        self.src = os.path.join(ROOT, "crates", name, "src")
        self.files = {}  # module path tuple -> file path
        for dirpath, dirs, files in os.walk(self.src):
            dirs[:] = [d for d in dirs if d != "tests"]
            for f in files:
                if not f.endswith(".rs") or f == "tests.rs" or f.endswith("_tests.rs"):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, self.src)[:-3].split(os.sep)
                if rel[-1] in ("mod", "lib", "main"):
                    rel = rel[:-1]
                if rel and rel[0] == "bin":
                    continue
                self.files[tuple(rel)] = path
        test_only = set()
        for mod, path in self.files.items():
            with open(path, encoding="utf-8") as fh:
                raw = fh.read()
            for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;", raw):
                test_only.add(tuple(list(mod) + [m.group(1)]))
        self.files = {
            m: p for m, p in self.files.items() if not any(m[: len(t)] == t for t in test_only)
        }
        self.text = {}
        self.defs = {}
        self.reexports = {}
        for mod, path in self.files.items():
            with open(path, encoding="utf-8") as fh:
                t = strip_comments_strings(strip_tests(fh.read()))
            self.text[mod] = t
            self.defs[mod] = set(DEF_RE.findall(t))
            self.reexports[mod] = {}
            for m in re.finditer(r"pub(?:\([^)]*\))?\s+use\s+([^;]+);", t):
                for full in expand_use(m.group(1)):
                    segs = full.split("::")
                    alias = segs[-1]
                    if " as " in alias:
                        segs[-1], alias = [s.strip() for s in alias.split(" as ")]
                    self.reexports[mod][alias] = segs

    def absolute(self, mod, segs):
        """Turns a path used in file `mod` into an absolute module path in this crate, or None."""
        segs = list(segs)
        if not segs:
            return None
        base = list(mod) if is_dir_module(self, mod) else list(mod[:-1])
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] == "self":
            return list(mod) + segs[1:] if is_dir_module(self, mod) else list(mod) + segs[1:]
        if segs[0] == "super":
            cur = list(mod)
            while segs and segs[0] == "super":
                cur = cur[:-1]
                segs = segs[1:]
            return cur + segs
        # A child module declared in this file (`use child::X` in mod.rs).
        if tuple(list(mod) + [segs[0]]) in self.files:
            return list(mod) + segs
        return None

    def resolve(self, segs, depth=0):
        """The file (module tuple) that defines what an absolute path names."""
        if depth > 10:
            return None
        best = None
        for n in range(len(segs), -1, -1):
            if tuple(segs[:n]) in self.files:
                best = n
                break
        if best is None:
            return None
        mod = tuple(segs[:best])
        rest = segs[best:]
        if not rest or rest[0] in ("*", "self"):
            return mod
        name = rest[0]
        if name in self.defs[mod]:
            return mod
        if name in self.reexports[mod]:
            target = self.absolute(mod, self.reexports[mod][name])
            if target is not None:
                return self.resolve(target + rest[1:], depth + 1) or mod
        return mod


def is_dir_module(crate, mod):
    path = crate.files[mod]
    return path.endswith("mod.rs") or path.endswith("lib.rs") or path.endswith("main.rs")


def expand_use(tree):
    tree = re.sub(r"\s+", " ", tree).strip()

    def split_top(s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur.strip():
            parts.append(cur)
        return [p.strip() for p in parts if p.strip()]

    def go(prefix, s):
        s = s.strip()
        m = re.match(r"^(.*?)::\{(.*)\}$", s)
        if s.startswith("{") and s.endswith("}"):
            out = []
            for p in split_top(s[1:-1]):
                out += go(prefix, p)
            return out
        if m:
            pre = prefix + ("::" if prefix else "") + m.group(1).strip()
            out = []
            for p in split_top(m.group(2)):
                out += go(pre, p)
            return out
        if s == "self":
            return [prefix]
        return [prefix + ("::" if prefix else "") + s]

    return go("", tree)


def inline_mod_ranges(t):
    """The (start, end) offsets of inline `mod name { … }` blocks in a file."""
    ranges = []
    for m in re.finditer(r"\bmod\s+[A-Za-z_][A-Za-z0-9_]*\s*\{", t):
        depth, i = 0, m.end() - 1
        while i < len(t):
            if t[i] == "{":
                depth += 1
            elif t[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        ranges.append((m.start(), i))
    return ranges


def in_file(path, pos, ranges):
    """A `super::` path inside an inline module names its own file first: drop those supers."""
    nesting = sum(1 for a, b in ranges if a <= pos <= b)
    segs = path.split("::")
    while nesting and segs and segs[0].strip() == "super":
        segs = ["self"] + segs[1:] if len(segs) > 1 and segs[1].strip() != "super" else segs[1:]
        nesting -= 1
    return "::".join(segs)


def edges(crate):
    out = {}
    for mod, t in crate.text.items():
        targets = set()
        paths = []
        ranges = inline_mod_ranges(t)
        for m in re.finditer(r"\buse\s+([^;]+);", t):
            paths += [in_file(p, m.start(), ranges) for p in expand_use(m.group(1))]
        for m in re.finditer(r"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)", t):
            paths.append(in_file(m.group(1), m.start(), ranges))
        children = [m2[-1] for m2 in crate.files if len(m2) == len(mod) + 1 and m2[: len(mod)] == mod]
        for child in children:
            for m in re.finditer(r"(?<![A-Za-z0-9_:])(" + child + r"(?:::[A-Za-z_][A-Za-z0-9_]*)+)", t):
                paths.append(m.group(1))
        for p in paths:
            segs = [s.strip() for s in p.split("::")]
            segs[-1] = segs[-1].split(" as ")[0].strip()
            ab = crate.absolute(mod, segs)
            if ab is None:
                continue
            target = crate.resolve(ab)
            if target is not None and target != mod:
                targets.add(target)
        out[mod] = targets
    return out


def sccs(graph):
    index, low, stack, on, result = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
            if len(comp) > 1:
                result.append(comp)

    for v in graph:
        if v not in index:
            visit(v)
    return result


def long_functions(crate):
    found = []
    for mod, path in crate.files.items():
        with open(path, encoding="utf-8") as fh:
            text = strip_tests(fh.read())
        lines = text.split("\n")
        for i, line in enumerate(lines):
            m = re.match(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|const\s+|unsafe\s+|extern\s+\"C\"\s+)*fn\s+([A-Za-z_][A-Za-z0-9_]*)", line)
            if not m:
                continue
            depth, started, j = 0, False, i
            while j < len(lines):
                code = strip_comments_strings(lines[j])
                if not started and ";" in code and "{" not in code:
                    break
                depth += code.count("{") - code.count("}")
                if "{" in code:
                    started = True
                if started and depth <= 0:
                    break
                j += 1
            if started:
                found.append((j - i + 1, os.path.relpath(path, ROOT), m.group(1), i + 1))
    return found


COMMENT_LIMIT = 14
ISSUE_RE = re.compile(r"\b[Ii]ssues? \d+")
DIALECT_FILES_MAX = 2


def prose_counts(crate):
    """Comment lines (`//`, `///`, `//!`) and code lines (the other non-blank lines) of a
    crate's product files, test modules left out: the same count as tools/prose.py."""
    comments = code = 0
    for path in crate.files.values():
        with open(path, encoding="utf-8") as fh:
            text = strip_tests(fh.read())
        for line in text.split("\n"):
            line = line.strip()
            if not line:
                continue
            if line.startswith("//"):
                comments += 1
            else:
                code += 1
    return comments, code


def issue_notes(crate):
    """(file, line number, text) of each "issue N" in a crate's product files."""
    found = []
    for path in crate.files.values():
        with open(path, encoding="utf-8") as fh:
            text = strip_tests(fh.read())
        for n, line in enumerate(text.split("\n"), 1):
            if ISSUE_RE.search(line):
                found.append((os.path.relpath(path, ROOT), n, line.strip()))
    return found


TYPE_DEF_RE = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|union|type)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M
)


def inherent_impls(text):
    """The type names of a file's inherent `impl` blocks (`impl X for Y` left out)."""
    names = []
    for m in re.finditer(r"(?m)^\s*(?:unsafe\s+)?impl\b", text):
        i = m.end()
        head_end = i
        depth = 0
        while head_end < len(text):
            c = text[head_end]
            if c == "<":
                depth += 1
            elif c == ">":
                depth -= 1
            elif c in "{;" and depth <= 0:
                break
            head_end += 1
        head = text[i:head_end]
        # The generic parameters right after `impl`.
        rest = head.lstrip()
        if rest.startswith("<"):
            depth, k = 0, 0
            for k, c in enumerate(rest):
                depth += (c == "<") - (c == ">")
                if depth == 0:
                    break
            rest = rest[k + 1 :]
        flat = re.sub(r"<[^<>]*>", "", rest)
        while re.search(r"<[^<>]*>", flat):
            flat = re.sub(r"<[^<>]*>", "", flat)
        if re.search(r"\bfor\b", flat.split(" where ")[0]) or flat.strip().startswith("dyn "):
            continue
        path = flat.split(" where ")[0].strip()
        name = path.split("::")[-1].strip()
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            names.append((name, path))
    return names


def scattered_impls(crate):
    """Types whose inherent impls are in more than one file: (defining file, type, impl
    files). A name is resolved in the impl's file (defined there, else imported by a `use`
    the import graph follows, else the one file that defines it); a name defined in several
    files that cannot be resolved so is left out."""
    defined = {}
    for mod, t in crate.text.items():
        for name in TYPE_DEF_RE.findall(t):
            defined.setdefault(name, set()).add(mod)
    by_type = {}
    for mod, t in crate.text.items():
        uses = {}
        ranges = inline_mod_ranges(t)
        for m in re.finditer(r"\buse\s+([^;]+);", t):
            for p in expand_use(in_file(m.group(1), m.start(), ranges) if "{" not in m.group(1) else m.group(1)):
                segs = [s.strip() for s in p.split("::")]
                alias = segs[-1]
                if " as " in alias:
                    segs[-1], alias = [s.strip() for s in alias.split(" as ")]
                uses[alias] = segs
        for name, path in inherent_impls(t):
            home = None
            segs = [s.strip() for s in path.split("::")]
            if len(segs) > 1:
                ab = crate.absolute(mod, segs)
                home = crate.resolve(ab) if ab is not None else None
            elif name in defined and mod in defined[name]:
                home = mod
            elif name in uses:
                ab = crate.absolute(mod, uses[name])
                home = crate.resolve(ab) if ab is not None else None
            if home is None and len(defined.get(name, ())) == 1:
                home = next(iter(defined[name]))
            if home is None:
                continue
            by_type.setdefault((home, name), set()).add(mod)
    out = []
    for (home, name), mods in sorted(by_type.items()):
        if len(mods) > 1:
            files = sorted(os.path.relpath(crate.files[m], ROOT) for m in mods)
            out.append((os.path.relpath(crate.files[home], ROOT), name, files))
    return out


def dialect_matches(crate):
    """The files that match on `Dialect::` (a `match` arm, `matches!`, `==` or `!=`), with
    how many places each."""
    found = {}
    for mod, t in crate.text.items():
        n = 0
        for m in re.finditer(r"\bDialect::[A-Za-z_]+", t):
            after = t[m.end() : m.end() + 200]
            before = t[max(0, m.start() - 40) : m.start()]
            arm = re.match(r"(?:\s*\|\s*(?:[A-Za-z_]+::)*Dialect::[A-Za-z_]+)*\s*(?:if\b[^=]*)?=>", after)
            compared = re.search(r"[!=]=\s*$", before) or re.match(r"\s*[!=]=", after)
            in_matches = re.search(r"matches!\([^;]*$", before)
            if arm and not re.search(r"\|\s*$", before) or compared or in_matches:
                n += 1
        if n:
            found[os.path.relpath(crate.files[mod], ROOT)] = n
    return found


def house_rules(crates):
    """The prose and shape rules DESIGN.md's "House rules" state; prints each figure and
    returns whether every one holds."""
    ok = True
    print(f"comment lines per 100 code lines (limit {COMMENT_LIMIT}):")
    for crate in crates:
        comments, code = prose_counts(crate)
        ratio = 100 * comments / max(code, 1)
        over = ratio > COMMENT_LIMIT
        ok &= not over
        mark = "  over" if over else ""
        print(f"  {crate.name:20} {ratio:5.1f} ({comments} comment lines, {code} code lines){mark}")
    notes = [n for crate in crates for n in issue_notes(crate)]
    print(f'"issue N" in product code: {len(notes)}')
    for path, line, text in notes[:20]:
        print(f"  {path}:{line} {text[:90]}")
    if len(notes) > 20:
        print(f"  … and {len(notes) - 20} more")
    ok &= not notes
    scattered = [s for crate in crates for s in scattered_impls(crate)]
    print(f"types with inherent impls in more than one file: {len(scattered)}")
    for home, name, files in scattered:
        print(f"  {name} ({home}): " + ", ".join(files))
    ok &= not scattered
    for crate in crates:
        if crate.name != "switchyard-gateway":
            continue
        files = dialect_matches(crate)
        print(f"files matching on Dialect (limit {DIALECT_FILES_MAX}): {len(files)}")
        for path, n in sorted(files.items()):
            print(f"  {path}: {n}")
        ok &= len(files) <= DIALECT_FILES_MAX
    return ok


def main():
    show_edges = "--edges" in sys.argv
    circles, funcs, sizes, crates = [], [], [], []
    for name in CRATES:
        if not os.path.isdir(os.path.join(ROOT, "crates", name, "src")):
            continue
        crate = Crate(name)
        crates.append(crate)
        graph = edges(crate)
        for comp in sccs(graph):
            circles.append([os.path.relpath(crate.files[m], ROOT) for m in comp])
        if show_edges:
            for m, ts in sorted(graph.items()):
                for t in sorted(ts):
                    print(f"edge {os.path.relpath(crate.files[m], ROOT)} -> {os.path.relpath(crate.files[t], ROOT)}")
        funcs += long_functions(crate)
        for mod, path in crate.files.items():
            with open(path, encoding="utf-8") as fh:
                n = len(strip_tests(fh.read()).split("\n"))
            sizes.append((n, os.path.relpath(path, ROOT)))
    over = sorted([f for f in funcs if f[0] > LIMIT], reverse=True)
    print(f"circles between files: {len(circles)}")
    for c in circles:
        print("  " + " <-> ".join(sorted(c)))
    print(f"functions over {LIMIT} lines: {len(over)}")
    for n, path, fname, line in over:
        print(f"  {n:4} {path}:{line} {fname}")
    longest = max(funcs) if funcs else (0, "", "", 0)
    print(f"longest function: {longest[0]} lines ({longest[1]}:{longest[3]} {longest[2]})")
    sizes.sort(reverse=True)
    print("largest files (lines, tests left out):")
    for n, path in sizes[:5]:
        print(f"  {n:5} {path}")
    rules = house_rules(crates)
    sys.exit(1 if circles or over or not rules else 0)


if __name__ == "__main__":
    main()
