"""Robot-specific kernels: one model's linearization, free or on a contact set, and its impact
map, traced into straight-line C around a few loops.

The generic kernels (free_linearization.linearize_state_into, contact_linearization.
constrained_linearize_into, impact_map.impact_into) walk the tree in loops and read the model's
arrays at every step.  For one robot and contact set all of that is fixed: the tree, the joint
axes, the inertias, the contact frames.  Only the state varies.  :func:`generated_kernel` (and
:func:`generated_contact_kernel`) runs the same passes once on that robot, in Python (their
functions, compiled.KERNELS), on traced values that stand for the state's entries, and records
the arithmetic that depends on the state:

- a product with a model constant 0 (most of a joint's motion subspace and transform, the
  zeros of an inertia) is dropped, and a product with 1 is its operand;
- an operation met again on the same operands is computed once;
- what remains is written out as C in the passes' own order and grouping, and compiled
  without floating-point contraction.

So every result is the same IEEE operation on the same operands as the generic kernel's, and
A, B, M⁻¹ and ν̇ are equal to its own bit for bit (but for the sign of a zero).

Some pieces stay functions of the values, run by routines written in C in the generic kernels'
order:
- the base's 6×6 LU factorisation and solves, since their pivoting depends on the values
  (spatial.lu_factor6, lu_solve6);
- the dense products (−M⁻¹D; on a contact set every multiply_add_into), loops the compiler
  vectorises;
- on a contact set, J M⁻¹ Jᵀ's Cholesky factorisation with its pivot test and the solves with it
  (constrained_dynamics.contact_forces_into, cholesky_solve_into);
- on a robot whose straight-line code would pass kernels.LOOPS_FROM operations, the two passes whose
  work grows as the number of bodies times the tree's depth: the IMMAmb (inverse_mass_matrix_into)
  and the derivatives' backward pass (base_frame_backward_into), loops over the bodies that stay in
  the caches, where straight-line code would not (traced, they were half of a 50-joint robot's code);
- the status: a singular pivot (forward_dynamics.singular_pivot), a degenerate contact set or an
  overflow, as the generic kernels report them (where a kernel on a contact set has no result, its
  caller runs the generic one, which says why).

What stays straight-line grows as the robot's bodies, and so does its compile time (about a second
of ``cc -O2`` per 1 500 operations on a 2-core machine): solo12 about 22 000 operations, talos 36 000
free, 53 000 on its two soles, talos_full (50 joints) 51 000.  kernels.GENERATED_OPERATIONS bounds what
is compiled (the compiler's budget).  Whether a kernel pays is measured, not guessed: the background
build times it against the generic kernel (timing.py), and ``kernel="auto"`` hands over only to a
faster one.

The parts: tracer.py (the passes run on traced values), c_writer.py (the trace as C, with the
routines of runtime.c and runtime_contacts.c), build.py (the compiler and the on-disk cache, one
library per robot, contact set, kind and instruction set, shared safely between processes),
kernels.py (a library loaded in a process, with a small numba entry that checks the state and
takes the Euler step as the generic kernels do), background.py (the build in another process, at
low priority, for ``kernel="auto"``: robot_linearization.kernel_choice), timing.py (its call timed
against the generic kernel's, in that process).
"""

from .build import GenerationError, cache_directory, c_compiler
from .kernels import GeneratedContactKernel, GeneratedKernel, generated, generated_contact_kernel, generated_kernel

__all__ = ["GenerationError", "GeneratedContactKernel", "GeneratedKernel", "cache_directory", "c_compiler",
           "generated", "generated_contact_kernel", "generated_kernel"]
