"""The recursive algorithms over the tree, one module each (kinematics, rnea, crba, aba, energy:
the functions of one state), the batch driver that runs them (``driver``), the workspaces
(``engine``) and the public functions (``api``)."""
