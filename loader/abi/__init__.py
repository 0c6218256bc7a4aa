"""The kernel's ABI as data: bpf(2) and perf_event_open(2) constants and ctypes structures. Both
sides use it: the no-syscall packages (BTF fix-up, instruction encoding in ``loader.asm``) without
making a syscall, ``kernel`` to make them."""
