"""``evspec verify`` as a library: load every program and map of BPF objects into this kernel's
verifier and say per program whether it loaded or why not (``objects``: ``verify_object``), the
results as records (``results``), and the private bpffs directories maps pinned by name go to,
removed again whatever stops the run (``pins``)."""
