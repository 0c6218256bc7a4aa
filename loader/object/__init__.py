"""BPF objects as plain data, with no syscall: ELF and BTF reading, section names, the
``ObjectSpec``, compiling sources with clang, the offline checks of map terms and sections, and
``inspect``. Nothing here imports ``kernel``, ``load``, ``attach`` or ``output`` (a test keeps it so)."""
