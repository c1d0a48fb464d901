"""The C writer: a trace (tracer.py) as straight-line C in the passes' own order and grouping, split
into functions of PART operations, with the routines whose work depends on the values (runtime.c,
runtime_contacts.c: factorisations, solves, dense products) called where the trace left them."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from types import SimpleNamespace

from ..algorithms.constrained_dynamics import DEGENERACY_TOLERANCE
from ..model import PIVOT_TOLERANCE
from .tracer import Traced, _Graph

PART = 1500
"""Operations per C function: one function of 22 000 statements takes gcc minutes, since its
register allocation grows faster than linearly; values crossing parts go through the scratch."""


def _read(name: str) -> str:
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), encoding="utf-8") as f:
        return f.read()


_RUNTIME = _read("runtime.c")
"""The routines every kernel calls (runtime.c): the base's 6×6 LU, the dense products, the status sums."""
_RUNTIME_CONTACTS = _read("runtime_contacts.c")
"""The routines of the kernels on a contact set (runtime_contacts.c): J M⁻¹ Jᵀ's Cholesky and solves."""


def _contact_forces_call(pointers: list, block: int, m: int, N: int) -> str:
    J, M_inv, free, drift = pointers
    JM_inv = block + m * N + N * N + N + m
    L, forces, accelerations = JM_inv + m * N, JM_inv + m * N + m * m, JM_inv + m * N + m * m + m
    return (f"w[{accelerations + N}] = rl_contact_forces({J}, {M_inv}, {free}, {drift}, w + {JM_inv}, w + {L}, "
            f"w + {forces}, w + {accelerations}, {m}, {N});")


_RUNTIME_CALLS: dict[str, tuple[Callable[..., int], Callable[..., list], Callable[..., str]]] = {
    # kind -> (block size, input segments [(doubles, mode)], C call on the segments' pointers and the
    # block's start in w) of its sizes; the tracer places the results in the block after its inputs.  A
    # segment's mode: "in", read only, from anywhere in w; "block", read only, in the block; "rw", changed
    # there
    "multiply_add": (lambda p, q, w, sign: int(p * q + q * w + p * w),
                     lambda p, q, w, sign: [(int(p * q), "in"), (int(q * w), "in"), (int(p * w), "rw")],
                     lambda pointers, block, p, q, w, sign: f"rl_multiply_add({pointers[0]}, {pointers[1]}, {int(p)}, "
                                                            f"{int(q)}, {int(w)}, {int(w)}, {_literal(sign)}, "
                                                            f"{pointers[2]}, {int(w)});"),
    "cholesky_solve": (lambda m, c: int(m * m + m * c),
                       lambda m, c: [(int(m * m), "in"), (int(m * c), "rw")],
                       lambda pointers, block, m, c: f"rl_cholesky_solve({pointers[0]}, {pointers[1]}, {int(m)}, "
                                                     f"{int(c)});"),
    "contact_forces": (lambda m, N: int(2 * m * N + N * N + 2 * N + 2 * m + m * m + 1),
                       lambda m, N: [(int(m * N), "in"), (int(N * N), "in"), (int(N), "in"), (int(m), "in")],
                       lambda pointers, block, m, N: _contact_forces_call(pointers, block, int(m), int(N))),
    "inverse_mass_matrix": (lambda bodies, N, floating: int(27 * bodies + 6 * N + 36 + N * N + 12 * bodies * N),
                            lambda bodies, N, floating: [(int(21 * bodies + 6 * N + 36), "block")],
                            lambda pointers, block, bodies, N, floating: f"rl_inverse_mass_matrix(w + {block}, "
                                                                         f"{int(bodies)}, {int(N)}, {int(floating)});"),
    "base_frame_backward": (lambda bodies, N, *flags: int(80 * bodies + 48 * N + 2 * N * N),
                            lambda bodies, N, *flags: [(int(2 * bodies + 24 * N), "block"), (int(78 * bodies), "rw")],
                            lambda pointers, block, bodies, N, *flags: f"rl_base_frame_backward(w + {block}, "
                            f"{int(bodies)}, {int(N)}, " + ", ".join(str(int(flag)) for flag in flags) + ");"),
}
"""What a trace may leave to a runtime routine (tracer._runtime_products, _runtime_sweeps); a contact_forces
block ends with its status (1.0, or 0.0 for a singular J M⁻¹ Jᵀ).  An "in" input that already lies in
w, whole and in order (a routine's result), is read where it lies; any other is copied into the block,
where a value the straight-line code computes is stored at once when nothing reads it after a routine
changed it (_straight_line)."""


def _copies(destination: str, start: int, sources: list) -> list:
    """C statements ``destination[start + j] = sources[j]`` (each ("w", address in w), ("c", constant) or
    ("x", C expression); none where it lies there already), runs of consecutive addresses or of one
    constant as loops: a routine's block filled, or its results written out, in a few bytes of code
    rather than a statement per double."""
    lines, j = [], 0
    while j < len(sources):
        kind, value = sources[j]
        if kind == "w" and destination == "w" and value == start + j:  # (stored there already)
            j += 1
            continue
        run = 1
        while j + run < len(sources) and sources[j + run][0] == kind != "x" and \
                sources[j + run][1] == (value + run if kind == "w" else value):
            run += 1
        if run >= 4:
            what = f"w[{value} + k]" if kind == "w" else _literal(value)
            lines.append(f"for (int k = 0; k < {run}; k++) {destination}[{start + j} + k] = {what};")
        else:
            for r in range(run):
                source = f"w[{value + r}]" if kind == "w" else _literal(value) if kind == "c" else sources[j + r][1]
                lines.append(f"{destination}[{start + j + r}] = {source};")
        j += run
    return lines


_ARGUMENTS = ("const double *restrict pose, const double *restrict s, const double *restrict twist, "
              "const double *restrict r, const double *restrict tau, double *restrict A, double *restrict B, "
              "double *restrict M_inv, double *restrict nu_dot, double *restrict w")


_ENTRY_ARGUMENTS = ("const double *restrict pose, const double *restrict s, const double *restrict twist, "
                    "const double *restrict r, const double *restrict tau, double *const *restrict out, "
                    "double *restrict w")


def _literal(value: float) -> str:
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    return repr(value)


def _straight_line(graph: _Graph, regions: dict, size: int) -> tuple[list, list, int, int]:
    """The C statements of what ``regions`` ({C pointer expression: array of traced values and constants})
    receive: (the statements of each part, the constants' stores, the scratch doubles used — from ``size``
    on: the runtime routines' blocks, and the values crossing parts —, the operations kept)."""
    operations = graph.operations
    writes: dict = {}  # operation -> [(region, flat index)]; constants written at the start
    constants: list = []
    for region, array in regions.items():
        run: list = []  # (flat index, constant) of consecutive entries
        for k, entry in enumerate([*array.ravel(), None]):
            if type(entry) is Traced or entry is None:
                if entry is not None:
                    writes.setdefault(entry.index, []).append((region, k))
                if run:
                    constants.extend(_copies(f"({region})", run[0][0], [("c", value) for _, value in run]))
                run = []
            else:
                run.append((k, float(entry)))
    live, stack = set(), list(writes)
    while stack:
        k = stack.pop()
        if k not in live:
            live.add(k)
            operation, operands = operations[k]
            if operation != "in":
                stack.extend(index for kind, index in operands if kind == "n")
    order = sorted(live)
    part = {k: i // PART for i, k in enumerate(order)}
    blocks = {}  # factor6 (42 doubles: LU, pivots), solve6 (6) and the runtime calls' blocks live in w
    for k in order:
        kind, *sizes = operations[k][0].split()
        if kind in ("factor6", "solve6"):
            blocks[k] = size
            size += 42 if kind == "factor6" else 6
        elif kind in _RUNTIME_CALLS:
            blocks[k] = size
            size += _RUNTIME_CALLS[kind][0](*map(float, sizes))
    # a value copied into a routine's block is stored there when it is computed (read there by the others),
    # unless something reads it after a routine changed it there
    last_read = {index: position for position, k in enumerate(order) if operations[k][0] != "in"
                 for kind, index in operations[k][1] if kind == "n"}
    slots = {}
    for position, k in enumerate(order):
        kind, *sizes = operations[k][0].split()
        if kind in _RUNTIME_CALLS:
            start = blocks[k]
            for count, mode in _RUNTIME_CALLS[kind][1](*map(float, sizes)):
                for j, (operand, index) in enumerate(operations[k][1][start - blocks[k]:start - blocks[k] + count]):
                    if operand == "n" and index not in slots and operations[index][0] != "solved" \
                            and (mode != "rw" or last_read[index] == position):
                        slots[index] = start + j
                start += count
    for k in order:
        operation, operands = operations[k]
        if operation == "in":
            continue
        for kind, index in operands:
            if kind == "n" and part[index] != part[k] and index not in slots and index not in blocks \
                    and operations[index][0] != "solved":  # (a routine's result stays in its block)
                slots[index] = size
                size += 1

    def value(x):
        kind, v = x
        if kind == "c":
            return _literal(v)
        if operations[v][0] == "solved":
            return f"w[{blocks[operations[v][1][0][1]] + int(operations[v][1][1][1])}]"
        return f"w[{slots[v]}]" if v in slots else f"t{v}"

    def source(x):
        kind, v = x
        if kind == "c":
            return "c", v
        if operations[v][0] == "solved":
            return "w", blocks[operations[v][1][0][1]] + int(operations[v][1][1][1])
        return ("w", slots[v]) if v in slots else ("x", value(x))

    results: dict = {}  # routine -> [(region, flat index, address in w)] of its results that regions receive
    for k in order:
        if operations[k][0] == "solved" and k in writes:
            address = source(("n", k))[1]
            results.setdefault(operations[k][1][0][1], []).extend((region, i, address) for region, i in writes[k])

    def written(k):
        """The statements writing routine k's results into the regions, right after it, in runs."""
        lines, entries = [], sorted(results.get(k, ()))
        j = 0
        while j < len(entries):
            region, first, _ = entries[j]
            run = 1
            while j + run < len(entries) and entries[j + run][:2] == (region, first + run):
                run += 1
            lines.extend(_copies(f"({region})", first, [("w", address) for _, _, address in entries[j:j + run]]))
            j += run
        return lines

    parts: list[list[str]] = [[] for _ in range(max(part.values(), default=0) + 1)]
    for k in order:
        operation, operands = operations[k]
        kind, *sizes = operation.split()
        lines = parts[part[k]]
        if operation == "solved":
            continue  # (its value lies in its routine's block; the regions received it right after the routine)
        if operation == "factor6":
            lines.extend(_copies("w", blocks[k], [source(x) for x in operands]))
            lines.append(f"rl_factor6(w + {blocks[k]}, w + {blocks[k] + 36});")
            continue
        if operation == "solve6":
            factor = blocks[operands[0][1]]
            lines.extend(_copies("w", blocks[k], [source(x) for x in operands[1:]]))
            lines.append(f"rl_solve6(w + {factor}, w + {factor + 36}, w + {blocks[k]});")
            lines.extend(written(k))
            continue
        if kind in _RUNTIME_CALLS:
            numbers = list(map(float, sizes))
            pointers, start = [], 0
            for count, mode in _RUNTIME_CALLS[kind][1](*numbers):
                sources = [source(x) for x in operands[start:start + count]]
                if mode == "in" and sources and sources[0][0] == "w" \
                        and all(entry == ("w", sources[0][1] + j) for j, entry in enumerate(sources)):
                    pointers.append(f"w + {sources[0][1]}")  # (read where it lies)
                else:
                    lines.extend(_copies("w", blocks[k] + start, sources))
                    pointers.append(f"w + {blocks[k] + start}")
                start += count
            lines.append(_RUNTIME_CALLS[kind][2](pointers, blocks[k], *numbers))
            lines.extend(written(k))
            continue
        if operation == "in":
            expression = f"{operands[0]}[{operands[1]}]"
        elif operation == "neg":
            expression = f"-{value(operands[0])}"
        elif operation in ("sin", "cos"):
            expression = f"{operation}({value(operands[0])})"
        else:
            expression = f"{value(operands[0])} {operation} {value(operands[1])}"
        target = f"w[{slots[k]}]" if k in slots else f"t{k}"
        lines.append(f"{target if k in slots else 'const double ' + target} = {expression};")
        lines.extend(f"({region})[{i}] = {target};" for region, i in writes.get(k, ()))
    return parts, constants, size, len(live)


def _scratch_regions(regions: dict, arrays: dict) -> tuple[dict, int]:
    """``arrays`` ({name: array or None}) placed one after the other at the start of the scratch w, as more
    ``regions``: ({name: its offset}, the doubles they take)."""
    size, offsets = 0, {}
    for name, array in arrays.items():
        if array is not None:
            offsets[name] = size
            regions[f"w + {size}"] = array
            size += array.size
    return offsets, size


def _singular_pivot_c(offsets: dict, n_bodies: int) -> str:
    """forward_dynamics.singular_pivot in C, on the articulated inertias and pivots the trace left in w."""
    return (f"int singular = rl_singular_pivot(w + {offsets['inertias']}, w + {offsets['pivots']}, {n_bodies}, "
            f"{_literal(PIVOT_TOLERANCE)});")


def _parts_source(parts: list, arguments: str, call_arguments: str) -> tuple[list, list]:
    """(the C functions of :func:`_straight_line`'s parts, each taking ``arguments``; the entry's calls
    of them, in order, with ``call_arguments``)."""
    return ([f"__attribute__((noinline)) static void part{i}({arguments}) {{\n    " + "\n    ".join(lines) + "\n}\n"
             for i, lines in enumerate(parts)], [f"    part{i}({call_arguments});" for i in range(len(parts))])


def c_source(traced: SimpleNamespace, model_name: str = "") -> tuple[str, int, int]:
    """The C of a :func:`trace`: ``int rl_linearize(pose, s, twist, r, tau, out, w)`` (row-major doubles as
    model.state_arrays and linearize_into take them; out: the addresses of A, B, M_inv, ν̇, 64-bit
    integers, which a caller whose outputs never move hands over as one array; w: scratch) returning
    linearize_state_into's status.  Returns (source, operations, scratch doubles)."""
    N, n_bodies = traced.M_inv.shape[0], traced.pivots[1].shape[0]
    regions = {"A": traced.A, "B": traced.B, "M_inv": traced.M_inv, "nu_dot": traced.nu_dot}
    # what the status and the product read back, in w
    scratch, size = _scratch_regions(regions, {"derivatives": traced.product[0] if traced.product else None,
                                               "inertias": traced.pivots[0], "pivots": traced.pivots[1]})
    parts, constants, size, operations = _straight_line(traced.graph, regions, size)
    functions, calls = _parts_source(parts, _ARGUMENTS, "pose, s, twist, r, tau, A, B, M_inv, nu_dot, w")
    if traced.product is not None:
        calls.append(f"    rl_multiply_add(M_inv, w + {scratch['derivatives']}, {N}, {N}, {2 * N}, {2 * N}, "
                     f"{_literal(float(traced.product[1]))}, A + {N * 2 * N}, {2 * N});")
    source = [f"/* robot_linearization: the linearization of model '{model_name}', generated "
              "(robot_linearization/codegen) */",
              _RUNTIME, *functions]
    source.append(f"""int rl_linearize({_ENTRY_ARGUMENTS}) {{
    double *restrict A = out[0], *restrict B = out[1], *restrict M_inv = out[2], *restrict nu_dot = out[3];
    {"(void)0;" if not constants else " ".join(constants)}
{chr(10).join(calls)}
    {_singular_pivot_c(scratch, n_bodies)}
    if (singular < 0 && !(isfinite(rl_finite_sum(A + {N * 2 * N}, {N * 2 * N}) + rl_finite_sum(M_inv, {N * N}))
                          && isfinite(rl_finite_sum(nu_dot, {N}))))
        return -2;
    return singular;
}}
""")
    return "\n".join(source), operations, size


_CONTACT_KERNELS = {"impact": ("rl_impact", ("pose", "s", "twist", "r", "e")),  # kind -> (its C function, its inputs)
                    "constrained": ("rl_constrained", ("pose", "s", "twist", "r", "tau"))}


def _contacts_c_source(traced: SimpleNamespace, kind: str, model_name: str = "") -> tuple[str, int, int]:
    """The C of a :func:`trace_impact` (``kind`` "impact") or :func:`trace_constrained` ("constrained"):
    ``int rl_impact(pose, s, twist, r, e, <the regions>, w)`` / ``rl_constrained(pose, s, twist, r, tau, …, w)``
    (row-major doubles; w: scratch) returning, for a valid state, the kernel's status: 0; 1 when J M⁻¹ Jᵀ
    is singular; 2 + j when M is singular because of joint j; −1 (constrained) when the result is not
    finite.  Returns (source, operations, scratch doubles)."""
    symbol, inputs = _CONTACT_KERNELS[kind]
    regions = dict(traced.regions)
    scratch, size = _scratch_regions(regions, {"inertias": traced.pivots[0], "pivots": traced.pivots[1],
                                               "status": traced.status})
    parts, constants, size, operations = _straight_line(traced.graph, regions, size)
    arguments = ", ".join([f"const double *restrict {name}" for name in inputs]
                          + [f"double *restrict {name}" for name in traced.regions] + ["double *restrict w"])
    functions, calls = _parts_source(parts, arguments, ", ".join([*inputs, *traced.regions, "w"]))
    finite = " + ".join(f"rl_finite_sum({name}, {array.size})" for name, array in traced.regions.items())
    overflow = f"if (!isfinite({finite})) return -1;" if kind == "constrained" else ""
    source = [f"/* robot_linearization: the {kind} kernel of model '{model_name}' on a contact set, generated "
              "(robot_linearization/codegen) */", f"#define DEGENERACY_TOLERANCE {_literal(DEGENERACY_TOLERANCE)}",
              _RUNTIME,
              _RUNTIME_CONTACTS, *functions]
    source.append(f"""int {symbol}({arguments}) {{
    {"(void)0;" if not constants else " ".join(constants)}
{chr(10).join(calls)}
    {_singular_pivot_c(scratch, traced.pivots[1].shape[0])}
    if (singular >= 0) return 2 + singular;
    if (w[{scratch["status"]}] != 1.0) return 1;
    {overflow}
    return 0;
}}
""")
    return "\n".join(source), operations, size
