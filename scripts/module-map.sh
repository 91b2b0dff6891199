#!/usr/bin/env bash
# Prints the module map of the runtime crate (runtime/src) and checks that
# its layering points one way.
#
# The layers are the comment-headed groups of `mod` declarations in
# runtime/src/lib.rs, top layer first, inside its `cfg_if!` or after it; two
# groups in a row with the same name (before the `:`) are one layer. An edge `a -> b` means that code of
# module `a` (its file and the files under its directory) names `crate::b`,
# in a `use` or a path; comments are ignored. The check fails (exit 1) when
#
#   * an edge points to a higher layer, unless it comes from `hooks`: the
#     functions C invokes (key destructor, fork child handler) are the only
#     calls allowed to point up, and they are printed as hook edges;
#   * the edges, without those hook edges, form a cycle (within a layer).
set -euo pipefail
cd "$(dirname "$0")/.."

exec python3 - runtime/src <<'PYTHON'
import re
import sys
from pathlib import Path

HOOKS = "hooks"
src = Path(sys.argv[1])


def read_layers():
    """[(label, [(module, file)])] in the order of lib.rs, top layer first."""
    layers, label, new_group, path = [], None, False, None
    previous = ""
    for line in (src / "lib.rs").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("// "):
            if not previous.startswith("//"):
                label, new_group = stripped[3:].split(":")[0], True
        elif match := re.match(r'#\[path\s*=\s*"([^"]+)"\]', stripped):
            path = match.group(1)
        elif match := re.match(r"(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", stripped):
            label = label or "(no layer)"
            if not layers or (new_group and label != layers[-1][0]):
                layers.append((label, []))
            new_group = False
            name = match.group(1)
            layers[-1][1].append((name, src / (path or f"{name}.rs")))
            path = None
        previous = stripped
    return layers


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//.*", "", text)


def group_heads(text, start):
    """The first identifier of each item of the `{...}` opening at `start`."""
    depth, item, heads = 0, "", []
    for char in text[start:]:
        if char == "{":
            depth += 1
            if depth == 1:
                continue
        elif char == "}":
            depth -= 1
            if depth == 0:
                break
        if depth == 1 and char == ",":
            heads.append(item)
            item = ""
        else:
            item += char
    heads.append(item)
    return [m.group(0) for h in heads if (m := re.match(r"\w+", h.strip()))]


def uses(text, modules):
    found = set()
    for match in re.finditer(r"(?<![\w$])crate::(\{|\w+)(\s*\()?", text):
        if match.group(1) == "{":
            found.update(group_heads(text, match.start(1)))
        elif not match.group(2):
            found.add(match.group(1))
    return found & modules


layers = read_layers()
layer_of, files = {}, {}
for index, (_, members) in enumerate(layers):
    for name, file in members:
        layer_of[name] = index
        files[name] = [file] + sorted((src / name).rglob("*.rs"))
modules = set(layer_of)

edges = {}
for name in sorted(modules):
    targets = set()
    for file in files[name]:
        if file.exists():
            targets |= uses(strip_comments(file.read_text()), modules)
    edges[name] = sorted(targets - {name}, key=lambda t: (layer_of[t], t))

hook_edges = [(HOOKS, t) for t in edges.get(HOOKS, []) if layer_of[t] < layer_of[HOOKS]]
problems = [
    f"{a} -> {b} points up (layer {layer_of[a] + 1} uses layer {layer_of[b] + 1})"
    for a in sorted(modules)
    for b in edges[a]
    if layer_of[b] < layer_of[a] and (a, b) not in hook_edges
]

print("runtime module map: top layer first; `a -> b`: a uses b\n")
width = max(map(len, modules))
for index, (label, members) in enumerate(layers):
    print(f"{index + 1}. {label}")
    for name, _ in sorted(members):
        down = [t for t in edges[name] if (name, t) not in hook_edges]
        print(f"   {name:<{width}}  -> {', '.join(down) if down else '(nothing)'}")
print("\nhook edges (C invokes these functions; the only edges allowed to point up):")
for a, b in hook_edges:
    print(f"   {a} -> {b}")
if not hook_edges:
    print("   (none)")

# A cycle through the edges other than the hook edges.
graph = {a: [b for b in edges[a] if (a, b) not in hook_edges] for a in modules}
state, stack = {}, []


def visit(node):
    state[node] = "open"
    stack.append(node)
    for target in graph[node]:
        if state.get(target) == "open":
            return stack[stack.index(target):] + [target]
        if target not in state and (cycle := visit(target)):
            return cycle
    stack.pop()
    state[node] = "done"
    return None


for node in sorted(modules):
    if node not in state and (cycle := visit(node)):
        problems.append("cycle: " + " -> ".join(cycle))
        break

print()
if problems:
    for problem in problems:
        print(f"error: {problem}")
    sys.exit(1)
print(f"ok: {len(modules)} modules in {len(layers)} layers; no edge points up "
      f"except the {len(hook_edges)} hook edges, and no cycle without them")
PYTHON
