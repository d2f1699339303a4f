"""transform.py - turns one CUDA source of gpudev's backend into C++ for the CPU emulation in
tools/cuda_emu (a CPU emulation of just enough of CUDA and cuBLAS to run gpudev's kernels for
their logic: index math, broadcasting, reductions, barriers, the gemm operand swap, the order of
work between streams; not timing or memory-model semantics).

Usage: python3 transform.py INPUT.cu OUTPUT.cpp

Two rewrites, nothing else:
  kernel<<<grid, block[, shared[, stream]]>>>(args)
      -> gd_emu_launch({__FILE__, __LINE__, "kernel"}, [&](auto &&...a) { kernel(a...); },
                       dim3(grid), dim3(block), shared, stream, args)
      (a missing shared size is 0 and a missing stream the legacy default stream, as in CUDA)
  #pragma unroll [n]  ->  an empty line (nvcc's hint; the host compiler does not know it)

The output starts with `#line 1 "INPUT.cu"` and keeps every line where it was, so compiler
messages and __FILE__/__LINE__ name the original source. Launch syntax inside comments and
string literals is left alone. Anything that does not parse is an error, never skipped.
"""
import re
import sys


def code_mask(src):
    """src with comments and string/character literals blanked out (same length, newlines
    kept), so searching it finds only real code."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a, b):
        for j in range(a, b):
            if out[j] != "\n":
                out[j] = " "

    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                raise SyntaxError("unterminated comment")
            blank(i, j + 2)
            i = j + 2
        elif src[i] == '"' or (src[i] == "'" and not (i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_"))):
            # a character literal, not a digit separator (1'000)
            q, j = src[i], i + 1
            while j < n and src[j] != q:
                if src[j] == "\n":
                    raise SyntaxError("unterminated literal at offset %d" % i)
                j += 2 if src[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def line_of(src, pos):
    return src.count("\n", 0, pos) + 1


def split_top_level(text, mask):
    """text split at commas outside (), [] and {}; mask is text's code mask."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(mask):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def kernel_start(mask, end):
    """Start of the kernel expression that ends just before `end` (the `<<<`): a name,
    possibly qualified (a::b) and followed by template arguments (name<...>)."""
    k = end
    while k > 0 and mask[k - 1].isspace():
        k -= 1
    if k > 0 and mask[k - 1] == ">":  # template arguments: back to the matching '<'
        depth = 0
        while True:
            k -= 1
            if k < 0:
                raise SyntaxError("unbalanced template arguments before a launch")
            if mask[k] == ">":
                depth += 1
            elif mask[k] == "<":
                depth -= 1
                if depth == 0:
                    break
        while k > 0 and mask[k - 1].isspace():
            k -= 1
    while k > 0 and (mask[k - 1].isalnum() or mask[k - 1] in "_:"):
        k -= 1
    return k


def matching_paren(mask, open_pos):
    depth = 0
    for i in range(open_pos, len(mask)):
        if mask[i] == "(":
            depth += 1
        elif mask[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise SyntaxError("unbalanced parentheses in a launch's arguments")


def transform(src):
    mask = code_mask(src)
    out, pos = [], 0
    while True:
        j = mask.find("<<<", pos)
        if j < 0:
            out.append(src[pos:])
            break
        where = "line %d" % line_of(src, j)
        k = kernel_start(mask, j)
        kernel = src[k:j]
        if not re.search(r"[A-Za-z_]", kernel):
            raise SyntaxError("%s: no kernel name before <<<" % where)
        e = mask.find(">>>", j + 3)
        if e < 0:
            raise SyntaxError("%s: <<< without >>>" % where)
        cfg = split_top_level(src[j + 3:e], mask[j + 3:e])
        if not 2 <= len(cfg) <= 4 or not all(p.strip() for p in cfg):
            raise SyntaxError("%s: a launch configuration needs 2 to 4 parts, got %r" % (where, src[j + 3:e]))
        p = e + 3
        while p < len(mask) and mask[p].isspace():
            p += 1
        if p >= len(mask) or mask[p] != "(":
            raise SyntaxError("%s: no argument list after >>>" % where)
        q = matching_paren(mask, p)
        args = src[p + 1:q]
        grid, block = cfg[0], cfg[1]
        shared = cfg[2] if len(cfg) > 2 else "0"
        stream = cfg[3] if len(cfg) > 3 else "nullptr"
        name = " ".join(kernel.split()).replace("\\", "\\\\").replace('"', '\\"')
        call = (
            'gd_emu_launch(gd_emu_site{__FILE__, __LINE__, "%s"}, '
            "[&](auto &&...gd_emu_a) { %s(gd_emu_a...); }, dim3(%s), dim3(%s), %s, %s%s)"
            % (name, kernel, grid, block, shared, stream, ", " + args if args.strip() else "")
        )
        # the newlines of what was replaced all reappear in `call` (kernel, cfg and args are
        # copied verbatim) except those between >>> and '(': put them back
        call += "\n" * src.count("\n", e, p)
        out.append(src[pos:k] + call)
        pos = q + 1
    result = "".join(out)
    result = re.sub(r"(?m)^[ \t]*#[ \t]*pragma[ \t]+unroll\b.*$", "", result)
    return result


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: transform.py INPUT.cu OUTPUT.cpp")
    path, dest = sys.argv[1], sys.argv[2]
    with open(path) as f:
        src = f.read()
    try:
        result = transform(src)
    except SyntaxError as e:
        sys.exit("%s: cannot transform: %s" % (path, e))
    if result.count("\n") != src.count("\n"):
        sys.exit("%s: the transformed source lost its line numbering" % path)
    if "<<<" in code_mask(result):
        sys.exit("%s: a launch was left untransformed" % path)
    with open(dest, "w") as f:
        f.write('#line 1 "%s"\n' % path.replace("\\", "/"))
        f.write(result)


if __name__ == "__main__":
    main()
