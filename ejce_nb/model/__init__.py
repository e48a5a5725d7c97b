"""What a mechanism is: the immutable model tables, their packed layout, the builder that validates
them, the workspace of a state, and the one input layer."""
