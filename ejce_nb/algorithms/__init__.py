"""The recursive algorithms over the tree, one module each: kinematics, rnea, crba, aba, energy."""
