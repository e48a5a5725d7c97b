"""Trees closed by loop joints (``ModelBuilder.add_loop``):

* ``reference``: the loop constraints in Python from the tree's public functions, the reference
  the compiled kernel is tested against;
* ``kernel``: constrained forward dynamics of one state, and of a batch, in compiled code;
* ``dense``: the small dense factorisations the kernel uses (QR of a 6 x n matrix, one-sided Jacobi);
* ``constrained``: the public functions (``constrained_dynamics``, ``constrained_inverse_dynamics``,
  ``loop_terms``);
* ``assembly``: the coordinates that close every loop (``assemble``, ``project_velocity``).
"""
