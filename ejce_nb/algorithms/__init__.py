"""The algorithms, one module each, written for one state on the model's tables and a record:

* ``kinematics``: the forward sweep (joints, twists, accelerations, world frames), forward
  kinematics, joint terms, body Jacobians;
* ``rnea``: the recursive Newton-Euler algorithm (inverse dynamics);
* ``crba``: the composite-rigid-body algorithm (the joint-space mass matrix) and its Cholesky solve;
* ``aba``: the articulated-body algorithm (forward dynamics);
* ``energy``: energies and centre of mass;
* ``tangent_sweeps``, ``joint_tangents``, ``derivative_kernels``, ``derivatives``, ``linearize``:
  derivatives of inverse and forward dynamics and the linearisation built on them;
* ``frames``: Jacobians of frames fixed on bodies;
* ``loops``: trees closed by loop joints (assembly, constrained dynamics).

How a public function reaches them (inputs, workspaces, compiled entries, batches) is ``calls``.
"""
