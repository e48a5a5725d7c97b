"""How a public function reaches an algorithm, in three steps:

1. ``public``: the public functions (``ej.rnea``, ``ej.aba``, ``ej.evaluate``, ...): one state
   of plain float64 arrays goes straight to its compiled entry; anything else through
   ``python_layer.run``, which normalises the inputs once (``model.inputs``), expands couplers,
   takes a workspace (``workspaces``), and turns statuses into results and errors;
2. ``kernels``: the compiled entries, one per algorithm and kind of call (one state, a batch in
   parallel chunks, a batch in groups of states on lanes);
3. the algorithm itself (``algorithms``), on views of the model's and the workspace's flat buffers.
"""
