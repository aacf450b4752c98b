#!/usr/bin/python3
"""Checks that scripts/install-deps.sh installs every Debian package the build and tests use.

A fresh Debian 12 machine once failed to build because libboost-dev was missing from the
install list: the developers' machines had it for other reasons. This check (ctest
`dependency_check`) collects what the build and the test tooling actually used:

  headers     every system header each compiled object included (`ninja -t deps`);
  libraries   every shared library the built executables and .so files load (`ldd`);
  programs    the programs, libraries and package config files CMake's find_* found
              (CMakeCache.txt);
  python      every module the tracked Python test tooling imports (parsed with `ast`,
              located with importlib.util.find_spec in the interpreter that runs the tests);

maps each file to the Debian package that owns it (`dpkg -S`), and fails, naming the
package and who used it, if that package is neither in the install list (or the
dependency closure of the list over the installed packages) nor in a minimal Debian base
(Essential or Priority: required packages and their closure: debootstrap's minbase).
Files that no package owns (pip, /usr/local, hand-built) fail too.

Usage: check_deps.py [--source-dir DIR] [--build-dir DIR]... [--without PKG]...
  --without PKG drops PKG from the install list, to show that the check catches it
  (ctest `dependency_check_catches_missing_boost`).
Standard library only; run with /usr/bin/python3.
"""

import argparse
import ast
import collections
import json
import os
import re
import subprocess
import sys

# tools/train is the hand-run training pipeline (own requirements, not run by the test
# suite); tools/llamacpp/shims are local stand-ins the converter adds to sys.path.
PYTHON_SKIP_PREFIXES = ("tools/train/", "tools/llamacpp/shims/")

# Modules the tooling imports that come from neither Debian nor this repository, and why.
NOT_DEBIAN_MODULES = {
    "conversion": "llama.cpp's converter package, extracted from the node-llama-cpp npm "
                  "bundle by tools/llamacpp/env.sh",
}

# install-deps.sh installs Debian's npm when `npm` is not on PATH (nodesource's nodejs
# ships it), so npm is allowed although it is not in PACKAGES.
CONDITIONAL_PACKAGES = ("npm",)

MAX_EXAMPLES = 3
MAX_UNOWNED = 20
DPKG_BATCH = 500

# A use of a file: what it is (header, library, ...), its path, and who used it.
Use = collections.namedtuple("Use", "kind path user")


# ---------------------------------------------------------------- collecting uses

def is_inside(path, roots):
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def header_uses(build_dir, local_roots):
    """System headers from `ninja -t deps`: one block per object, its dependencies indented."""
    out = run(["ninja", "-C", build_dir, "-t", "deps"])
    uses, user = [], None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            user = line.split(": #deps")[0].rstrip(":")
            continue
        path = os.path.normpath(os.path.join(build_dir, line.strip()))
        if is_inside(path, local_roots) or is_inside(os.path.realpath(path), local_roots):
            continue
        uses.append(Use("header", path, user))
    return uses


def is_elf_binary(path):
    """An executable or shared library (not an object file or static archive)."""
    if not os.path.isfile(path) or os.path.islink(path):
        return False
    name = os.path.basename(path)
    if not (os.access(path, os.X_OK) or name.endswith(".so") or ".so." in name):
        return False
    if name.endswith(".o"):
        return False
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def elf_binaries(build_dir):
    for dirpath, dirnames, filenames in os.walk(build_dir):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if is_elf_binary(path):
                yield path


# `libfoo.so.1 => /usr/lib/x86_64-linux-gnu/libfoo.so.1 (0x...)`, `/lib64/ld-linux... (0x...)`,
# or `libbar.so.2 => not found`.
LDD_ARROW = re.compile(r"^\s*(\S+)\s+=>\s+(.*?)\s*(\(0x[0-9a-f]+\))?$")
LDD_PLAIN = re.compile(r"^\s*(/\S+)\s+\(0x[0-9a-f]+\)$")


def library_uses(build_dir, local_roots, problems):
    uses, num_binaries = [], 0
    for binary in elf_binaries(build_dir):
        num_binaries += 1
        user = os.path.relpath(binary, build_dir)
        result = subprocess.run(["ldd", binary], capture_output=True, text=True)
        for line in result.stdout.splitlines():
            arrow, plain = LDD_ARROW.match(line), LDD_PLAIN.match(line)
            if arrow and arrow.group(2) == "not found":
                problems.append(f"library not found: {arrow.group(1)} (needed by {user})")
                continue
            path = arrow.group(2) if arrow else plain.group(1) if plain else None
            if not path or not path.startswith("/") or is_inside(path, local_roots):
                continue  # linux-vdso.so.1, statically linked, or one of ours
            uses.append(Use("library", path, user))
    return uses, num_binaries


CACHE_ENTRY = re.compile(r"^([A-Za-z0-9_.+-]+):(FILEPATH|PATH|INTERNAL)=(/.*)$")
# INTERNAL entries naming programs: cmake and ctest themselves.
CACHE_INTERNAL_PROGRAMS = ("CMAKE_COMMAND", "CMAKE_CTEST_COMMAND")


def config_files(directory):
    """The package config files in a find_package(CONFIG) directory, e.g. BoostConfig.cmake."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names
            if n.endswith("Config.cmake") or n.endswith("-config.cmake")]


def cmake_cache_uses(build_dir, local_roots):
    """Programs and libraries CMake's find_program/find_library found, and the config
    files find_package read (Boost_DIR and the like)."""
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if not os.path.exists(cache):
        return []
    uses = []
    with open(cache) as f:
        for line in f:
            m = CACHE_ENTRY.match(line.strip())
            if not m:
                continue
            name, kind, value = m.groups()
            if is_inside(value, local_roots):
                continue
            user = f"CMakeCache.txt {name}"
            is_program = kind == "INTERNAL" and name in CACHE_INTERNAL_PROGRAMS
            if (kind == "FILEPATH" or is_program) and os.path.isfile(value):
                uses.append(Use("cmake", value, user))
            elif kind == "PATH" and name.endswith("_DIR"):
                uses += [Use("cmake", c, user) for c in config_files(value)]
    return uses


# ---------------------------------------------------------------- python imports

def tracked_py_files(source_dir):
    """The repository's .py files (git ls-files; outside a git checkout, every .py file
    not under node_modules, build dirs or hidden dirs)."""
    try:
        return run(["git", "-C", source_dir, "ls-files", "*.py"]).split()
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for dirpath, dirnames, filenames in os.walk(source_dir):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "build"))
                             and d != "node_modules")
        rel = os.path.relpath(dirpath, source_dir)
        found += [os.path.normpath(os.path.join(rel, n)) for n in filenames if n.endswith(".py")]
    return found


def python_files(source_dir):
    return [p for p in tracked_py_files(source_dir) if not p.startswith(PYTHON_SKIP_PREFIXES)]


def local_module_names(source_dir):
    """Names of every tracked .py file and package directory: modules the scripts import
    from next to themselves or from a sys.path entry they add."""
    names = set()
    for rel in tracked_py_files(source_dir):
        parts = rel.split("/")
        names.add(parts[-1][:-3])
        names.update(parts[:-1])
    return names


def catches_import_error(handler):
    """An except clause that would swallow a failed import."""
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = {t.id if isinstance(t, ast.Name) else getattr(t, "attr", None) for t in types}
    return bool(names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def imported_modules(tree):
    """(top-level module name, line, optional) for every absolute import in the tree;
    optional when the import sits in a try block whose handlers catch ImportError."""
    found = []

    def visit(node, optional):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((alias.name.split(".")[0], node.lineno, optional))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module.split(".")[0], node.lineno, optional))
        if isinstance(node, ast.Try):
            guarded = optional or any(catches_import_error(h) for h in node.handlers)
            for child in node.body:
                visit(child, guarded)
            for child in node.handlers + node.orelse + node.finalbody:
                visit(child, optional)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, optional)

    visit(tree, False)
    return found


def python_imports(source_dir):
    """{module: [(file:line, optional), ...]} for the non-local modules the tooling imports."""
    local = local_module_names(source_dir)
    imports = collections.defaultdict(list)
    for rel in python_files(source_dir):
        with open(os.path.join(source_dir, rel), "rb") as f:
            tree = ast.parse(f.read(), filename=rel)
        for module, line, optional in imported_modules(tree):
            if module not in local and module not in NOT_DEBIAN_MODULES:
                imports[module].append((f"{rel}:{line}", optional))
    return imports


# Runs in the test interpreter, outside the source tree so '' on sys.path finds nothing of
# ours: prints {module: file or None}. Built-in and frozen modules live in the interpreter.
FIND_SPECS = r"""
import importlib.util, json, os, sys
def origin(name):
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin in (None, "built-in", "frozen") and not spec.submodule_search_locations:
        return os.path.realpath(sys.executable)
    if spec.origin not in (None, "namespace"):
        return spec.origin
    for d in spec.submodule_search_locations:  # namespace package: any file inside
        for root, _, files in os.walk(d):
            if files:
                return os.path.join(root, sorted(files)[0])
    return None
print(json.dumps({n: origin(n) for n in json.load(sys.stdin)}))
"""


def module_uses(source_dir, python, problems, notes):
    """Uses of the files the imported modules load from, and how many modules there are."""
    imports = python_imports(source_dir)
    result = subprocess.run([python, "-c", FIND_SPECS], input=json.dumps(sorted(imports)),
                            capture_output=True, text=True, cwd="/", check=True)
    uses = []
    for module, origin in sorted(json.loads(result.stdout).items()):
        importers = imports[module]
        if origin:
            uses += [Use("python", origin, f"{where}, import {module}") for where, _ in importers]
            continue
        required = [where for where, optional in importers if not optional]
        if required:
            problems.append(f"python module '{module}' not found by {python} "
                            f"(imported by {', '.join(required[:MAX_EXAMPLES])})")
        else:
            notes.append(f"optional python module '{module}' not installed "
                         f"(imported in a try/except ImportError by {importers[0][0]})")
    return uses, len(imports)


# ---------------------------------------------------------------- dpkg

USRMERGE = ("/lib/", "/lib64/", "/bin/", "/sbin/")


def path_candidates(path):
    """The path, its symlink-resolved form, and their usrmerge aliases (/lib <-> /usr/lib):
    dpkg knows a file under the one name its package shipped it."""
    found = []
    for p in (path, os.path.realpath(path)):
        found.append(p)
        for prefix in USRMERGE:
            if p.startswith(prefix):
                found.append("/usr" + p)
            elif p.startswith("/usr" + prefix):
                found.append(p[len("/usr"):])
    return list(dict.fromkeys(found))


def dpkg_escape(path):
    """dpkg -S takes glob patterns; escape the characters that would make one."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", path)


def dpkg_owners(paths):
    """{path: [package, ...]} for the paths some installed package owns (one dpkg -S per
    DPKG_BATCH paths; unowned paths are left out)."""
    owners = {}
    paths = sorted(paths)
    for start in range(0, len(paths), DPKG_BATCH):
        batch = [dpkg_escape(p) for p in paths[start:start + DPKG_BATCH]]
        result = subprocess.run(["dpkg", "-S", "--"] + batch, capture_output=True, text=True)
        for line in result.stdout.splitlines():
            # "pkg[:arch][, pkg2[:arch]]: /path"; "diversion by pkg from|to: /path" names
            # no owner.
            if line.startswith(("diversion by ", "local diversion ")) or ": " not in line:
                continue
            packages, path = line.split(": ", 1)
            owners.setdefault(path, []).extend(
                strip_arch(p.strip()) for p in packages.split(","))
    return owners


def file_packages(files):
    """{file: [package, ...]} using the first candidate name dpkg knows for each file."""
    candidates = {f: path_candidates(f) for f in files}
    owners = dpkg_owners({c for cs in candidates.values() for c in cs})
    resolved = {}
    for f, cs in candidates.items():
        known = [c for c in cs if c in owners]
        if known:
            resolved[f] = owners[known[0]]
    return resolved


def strip_arch(name):
    return name.split(":")[0]


def parse_relation(field):
    """A Depends-style field -> list of alternative groups, each a list of names."""
    groups = []
    for group in field.split(","):
        names = [strip_arch(re.sub(r"\(.*?\)|\[.*?\]|<.*?>", "", alt).strip())
                 for alt in group.split("|")]
        names = [n for n in names if n]
        if names:
            groups.append(names)
    return groups


class InstalledPackages:
    """The installed packages, their dependencies and what they provide (one dpkg-query)."""

    FIELDS = "${db:Status-Status}\t${Package}\t${Essential}\t${Priority}\t" \
             "${Depends}\t${Pre-Depends}\t${Provides}\n"

    def __init__(self):
        self.depends = {}  # package -> alternative groups
        self.providers = collections.defaultdict(set)  # name -> installed packages providing it
        self.base_roots = set()
        for line in run(["dpkg-query", "-W", "-f=" + self.FIELDS]).splitlines():
            status, pkg, essential, priority, depends, pre_depends, provides = line.split("\t")
            if status != "installed":
                continue
            self.depends[pkg] = parse_relation(depends) + parse_relation(pre_depends)
            self.providers[pkg].add(pkg)
            for group in parse_relation(provides):
                self.providers[group[0]].add(pkg)
            if essential == "yes" or priority == "required":
                self.base_roots.add(pkg)

    def closure(self, roots):
        """The roots and everything they depend on; of alternatives `a | b`, every one
        installed (apt may have picked either on a fresh machine), virtual names through
        their installed providers."""
        seen, todo = set(), list(roots)
        while todo:
            pkg = todo.pop()
            if pkg in seen:
                continue
            seen.add(pkg)
            for group in self.depends.get(pkg, []):
                for name in group:
                    todo.extend(self.providers.get(name, ()))
        return seen

    def dependents(self, pkg):
        """Installed packages that depend on pkg directly (for the hint when it is missing)."""
        return sorted(p for p, groups in self.depends.items()
                      if any(pkg in group for group in groups))


# ---------------------------------------------------------------- main

def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def install_list(source_dir, without):
    out = run(["bash", os.path.join(source_dir, "scripts", "install-deps.sh"), "--list"])
    listed = [p for p in out.split() if p not in without]
    return listed + [p for p in CONDITIONAL_PACKAGES if p not in without]


def collect_uses(args, problems, notes):
    local_roots = [os.path.realpath(args.source_dir)]
    build_dirs = []
    for i, d in enumerate(args.build_dir):
        d = os.path.realpath(os.path.join(args.source_dir, d))
        if os.path.isdir(d):
            build_dirs.append(d)
        elif i == 0:
            sys.exit(f"check_deps: build dir {d} does not exist; build first (scripts/build.sh)")
        else:
            notes.append(f"skipped build dir {d} (does not exist)")
    local_roots += build_dirs
    uses, counts = [], collections.Counter()
    for d in build_dirs:
        if not os.path.exists(os.path.join(d, "build.ninja")):
            sys.exit(f"check_deps: {d} is not a Ninja build dir (the presets use Ninja)")
        uses += header_uses(d, local_roots)
        libs, num_binaries = library_uses(d, local_roots, problems)
        uses += libs + cmake_cache_uses(d, local_roots)
        counts["binaries"] += num_binaries
    python_uses, counts["modules"] = module_uses(args.source_dir, args.python, problems, notes)
    uses += python_uses
    return uses, counts


def summarize(uses, counts, packages):
    for kind, _ in {(u.kind, u.path) for u in uses}:
        counts[kind] += 1
    return (f"{counts['header']} headers, {counts['library']} libraries of "
            f"{counts['binaries']} binaries, {counts['cmake']} files CMake found, "
            f"{counts['modules']} python modules -> {len(packages)} packages")


def examples(uses):
    shown = []
    for u in uses[:MAX_EXAMPLES]:
        shown.append(f"    {u.path} ({u.kind}, used by {u.user})")
    if len(uses) > MAX_EXAMPLES:
        shown.append(f"    ... and {len(uses) - MAX_EXAMPLES} more")
    return shown


def missing_package(pkg, uses, installed):
    dependents = installed.dependents(pkg)
    via = ""
    if dependents:
        via = f" (installed here as a dependency of {', '.join(dependents[:MAX_EXAMPLES])})"
    return "\n".join([f"missing package: {pkg} is used but is neither in "
                      f"scripts/install-deps.sh, its dependencies, nor the Debian base{via}"]
                     + examples(uses))


def unowned_files(uses):
    """One line per file no package owns (pip, /usr/local, a hand-built library)."""
    users = collections.defaultdict(list)
    for u in uses:
        users[u.path].append(u.user)
    lines = []
    for path in sorted(users)[:MAX_UNOWNED]:
        more = f" and {len(users[path]) - 1} more" if len(users[path]) > 1 else ""
        lines.append(f"not from any Debian package: {path} (used by {users[path][0]}{more})")
    if len(users) > MAX_UNOWNED:
        lines.append(f"... and {len(users) - MAX_UNOWNED} more files from no Debian package")
    return lines


def print_packages(by_package, listed, allowed):
    """--verbose: each package used, whether the list names it, and what of it was used."""
    for pkg in sorted(by_package):
        kinds = collections.Counter(kind for kind, _ in
                                    {(u.kind, u.path) for u in by_package[pkg]})
        where = "listed" if pkg in listed else "allowed" if pkg in allowed else "NOT ALLOWED"
        print(f"  {pkg:32} {where:11} " +
              ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(
        os.path.realpath(__file__))))
    parser.add_argument("--build-dir", action="append",
                        help="a build dir to check (repeatable; default build/release)")
    parser.add_argument("--without", action="append", default=[],
                        help="drop this package from the install list (to test the check)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter the test tooling runs on (default: this one)")
    parser.add_argument("--verbose", action="store_true",
                        help="list every package used and how many of its files")
    args = parser.parse_args()
    args.build_dir = args.build_dir or ["build/release"]
    return args


def main():
    args = parse_args()
    problems, notes = [], []
    uses, counts = collect_uses(args, problems, notes)
    owners = file_packages({u.path for u in uses})
    problems += unowned_files([u for u in uses if u.path not in owners])
    by_package = collections.defaultdict(list)
    for u in uses:
        for pkg in owners.get(u.path, []):
            by_package[pkg].append(u)

    installed = InstalledPackages()
    listed = install_list(args.source_dir, set(args.without))
    allowed = installed.closure(listed) | installed.closure(installed.base_roots)
    for pkg in sorted(by_package):
        # A file several packages own (rare: shared directories) is fine if any is allowed.
        unmet = [u for u in by_package[pkg] if not any(p in allowed for p in owners[u.path])]
        if unmet:
            problems.append(missing_package(pkg, unmet, installed))

    for note in notes:
        print(f"note: {note}")
    if args.verbose:
        print_packages(by_package, listed, allowed)
    summary = summarize(uses, counts, by_package)
    if problems:
        print("\n".join(problems))
        print(f"dependency check FAILED ({summary}): add each missing package (or a package "
              "that depends on it) to PACKAGES in scripts/install-deps.sh, and install files "
              "from no Debian package from one instead")
        return 1
    print(f"dependency check: {summary}, all installed by scripts/install-deps.sh "
          "or in the Debian base")
    return 0


if __name__ == "__main__":
    sys.exit(main())
