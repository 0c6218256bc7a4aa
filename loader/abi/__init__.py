"""The kernel's ABI as data: bpf(2) and perf_event_open(2) constants, ctypes structures and
instruction encoding. Both sides use it: ``object`` (instruction patching, BTF fix-up) without
making a syscall, ``kernel`` to make them."""
