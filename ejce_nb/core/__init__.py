"""One joint, as the paper has it: jets, spatial algebra, the joints' pose functions and the EJCE
evaluation that turns a pose into S, sigma and the bias."""
